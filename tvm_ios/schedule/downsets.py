"""The exact IOS search: a dynamic program over every downset of a graph, level by level.

A *state* is a downset ``D`` (the ops already run); a *transition* runs one stage ``E``
(see :mod:`tvm_ios.schedule.groups`) and reaches ``D + E``. ``cost[D + E] = min cost[D] +
stage(E)`` over all transitions into ``D + E``, with ``cost[{}] = 0``; ``cost[V]`` is the
optimum over every stage sequence, the same recurrence as Algorithm 1 of the IOS thesis read
forwards (its state ``S`` is ``V - D``). Every downset is a state, since single ops can
always run alone.

States are processed by size, all states of one size at once, in numpy: the ready ops of
each state, the groups anchored at them, their compatible combinations (the stages), one
price per distinct stage, then one push per transition into the level of its target. A
state and a stage are keyed by the sum of their ops' keys, so ``key(D + E) = key(D) +
key(E)``: up to 64 ops an op's key is its bit, so a key is the bitset itself; above, a
64-bit Zobrist sum, and every merge by key is checked against the exact bitsets, so a hash
collision raises instead of mixing two states.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from ..graph.analysis import components
from ..graph.bitset import ids_of
from ..graph.opgraph import OpGraph
from .groups import GroupTable
from .pricing import StagePricer
from .stage_enum import IdealEnumerator, StageEnumerator, Stages

__all__ = ["DownsetSearch", "SearchResult"]

_ZOBRIST_SEED = 0x105
#: States whose stages are enumerated at once (divided by the groups per op), bounding memory.
_STATES_AT_ONCE = 1 << 13
#: New stages priced at once (their groups are materialised as padded arrays).
_PRICED_AT_ONCE = 1 << 14
#: Transitions queued into one level before they are reduced to one per target state.
_PENDING_AT_MOST = 1 << 22


@dataclass
class SearchResult:
    """The optimum of one search and its size.

    ``stages`` lists ``(groups, merged, latency)`` in execution order; ``groups`` are
    lists of op ids of the graph searched, by lowest op.
    """

    latency: float
    stages: list[tuple[list[list[int]], bool, float]]
    states: int
    transitions: int
    schedules: int


class _Grow:
    """An append-only numpy array (amortised doubling)."""

    def __init__(self, dtype, width: int | None = None):
        shape = (1024,) if width is None else (1024, width)
        self.data, self.size = np.zeros(shape, dtype=dtype), 0

    def extend(self, values: np.ndarray) -> None:
        need = self.size + len(values)
        if need > len(self.data):
            grown = np.zeros((max(need, 2 * len(self.data)),) + self.data.shape[1:],
                             dtype=self.data.dtype)
            grown[:self.size] = self.data[:self.size]
            self.data = grown
        self.data[self.size:need] = values
        self.size = need


class DownsetSearch:
    """One exact search over the downsets of ``graph`` (ids local to ``graph``).

    Parameters
    ----------
    graph : OpGraph
        The graph (or the region of a larger graph, as a subgraph) to schedule.
    groups : GroupTable or None
        Its candidate groups (:func:`~tvm_ios.schedule.groups.candidate_groups`); None
        when nothing is pruned (every set of ready ops closed under predecessors is a
        stage, see :class:`~tvm_ios.schedule.stage_enum.IdealEnumerator`).
    pricer : StagePricer
        Prices stages given as arrays of groups of op ids.
    max_num_groups : int
        s: at most this many groups per stage.
    """

    def __init__(self, graph: OpGraph, groups: GroupTable | None, pricer: StagePricer,
                 max_num_groups: int):
        self.graph, self.pricer, self.s = graph, pricer, max_num_groups
        m, self.words = len(graph), max(1, (len(graph) + 63) // 64)
        # Up to 64 ops a key is the bitset itself: exact, nothing to check.
        self.exact_keys = self.words == 1
        op_key = (np.left_shift(np.uint64(1), np.arange(m, dtype=np.uint64))
                  if self.exact_keys else np.random.default_rng(_ZOBRIST_SEED).integers(
                      0, np.iinfo(np.uint64).max, size=m, dtype=np.uint64, endpoint=True))
        if groups is None:
            self.enum = IdealEnumerator(graph, op_key)
        else:
            ops = groups.ops
            group_key = np.where(ops >= 0, op_key[np.maximum(ops, 0)], 0).sum(
                axis=1, dtype=np.uint64)
            self.enum = StageEnumerator(graph, groups, group_key, max_num_groups)
        self.per_op = 1 if groups is None else max(1, len(groups) // max(1, m))
        self.known_key = np.zeros(0, dtype=np.uint64)  # sorted keys of priced stages
        self.known_id = np.zeros(0, dtype=np.int64)
        self.ending_mask = _Grow(np.uint64, self.words)
        self.ending_latency = _Grow(np.float64)
        self.ending_valid = _Grow(bool)
        self.ending_merged = _Grow(bool)
        self.state_mask = _Grow(np.uint64, self.words)
        self.state_count = _Grow(object)
        self.parent, self.parent_stage = _Grow(np.int64), _Grow(np.int64)
        self.transitions = 0

    def run(self) -> SearchResult:
        """Search every downset; return the optimum and the size of the search."""
        m = len(self.graph)
        self.state_mask.extend(np.zeros((1, self.words), dtype=np.uint64))
        self.state_count.extend(np.array([1], dtype=object))
        self.parent.extend(np.array([-1]))
        self.parent_stage.extend(np.array([-1]))
        level = (np.zeros(1, dtype=np.uint64), self.state_mask.data[:1], np.zeros(1),
                 np.zeros(1, dtype=np.int64))
        pending: dict[int, list] = defaultdict(list)
        for size in range(1, m + 1):
            keys, masks, cost, gids = level
            step = max(1, _STATES_AT_ONCE // self.per_op)
            for lo in range(0, len(keys), step):
                part = slice(lo, lo + step)
                self._push(keys[part], masks[part], cost[part], gids[part], size - 1, pending)
            level = self._collect(pending.pop(size))
        final = int(level[3][0])
        return SearchResult(float(level[2][0]), self._stages(final), self.state_mask.size - 1,
                            self.transitions, int(self.state_count.data[final]))

    # -- one level ------------------------------------------------------------------------
    def _push(self, keys, masks, cost, gids, size: int, pending) -> None:
        """Price the stages after a batch of states and queue their transitions by level."""
        stages = self.enum.stages(masks)
        eid = self._ending_ids(stages)
        valid = self.ending_valid.data[eid]
        row, nops, eid = stages.row[valid], stages.size[valid], eid[valid]
        self.transitions += len(row)
        target_key = keys[row] + stages.key[valid]
        value = cost[row] + self.ending_latency.data[eid]
        source = gids[row]
        count = self.state_count.data[source]
        order = np.argsort(nops.astype(np.int16), kind="stable")
        ordered = nops[order]
        for part in np.split(order, np.flatnonzero(ordered[1:] != ordered[:-1]) + 1):
            if len(part):
                queue = pending[size + int(nops[part[0]])]
                queue.append((target_key[part], value[part], source[part], eid[part],
                              count[part]))
                if sum(len(q[0]) for q in queue) > _PENDING_AT_MOST:
                    queue[:] = [self._reduce(queue)]

    def _ending_ids(self, stages: Stages) -> np.ndarray:
        """Global ids of the stages (pricing the new ones), checked against their bitsets."""
        order, starts, inverse = _group(stages.key)
        first = order[starts]
        uniq = stages.key[first]
        known, known_id = self.known_key, self.known_id
        pos = np.searchsorted(known, uniq)
        found = pos < len(known)
        found[found] = known[pos[found]] == uniq[found]
        ids = np.empty(len(uniq), dtype=np.int64)
        ids[found] = known_id[pos[found]]
        new = np.flatnonzero(~found)
        if len(new):
            ids[new] = np.arange(self.ending_mask.size, self.ending_mask.size + len(new))
            self.known_key = np.insert(known, pos[new], uniq[new])
            self.known_id = np.insert(known_id, pos[new], ids[new])
            for lo in range(0, len(new), _PRICED_AT_ONCE):
                rep = first[new[lo:lo + _PRICED_AT_ONCE]]
                ops, ok = stages.ops(rep)
                latency, valid, merged = self.pricer.price(ops)
                self.ending_mask.extend(stages.mask[rep])
                self.ending_latency.extend(latency)
                self.ending_valid.extend(valid & ok)
                self.ending_merged.extend(merged)
        eid = ids[inverse]
        if not self.exact_keys and not (self.ending_mask.data[eid] == stages.mask).all():
            raise RuntimeError("IOS search: two different stages share a 64-bit key")
        return eid

    def _reduce(self, queue: list) -> tuple:
        """Transitions queued into one level, one per target state: its minimal cost (the
        first queued of the minimal ones), their summed schedule counts."""
        key, value, source, eid, count = (np.concatenate(parts) for parts in zip(*queue))
        order, starts, inverse = _group(key)
        best_value = np.minimum.reduceat(value[order], starts)
        ties = np.flatnonzero(value == best_value[inverse])
        best = np.full(len(starts), len(key))
        np.minimum.at(best, inverse[ties], ties)
        if not self.exact_keys:
            masks = self.state_mask.data[source[best]] | self.ending_mask.data[eid[best]]
            reached = self.state_mask.data[source] | self.ending_mask.data[eid]
            if not (reached == masks[inverse]).all():
                raise RuntimeError("IOS search: two different states share a 64-bit key")
        return (key[best], best_value, source[best], eid[best],
                np.add.reduceat(count[order], starts))

    def _collect(self, queue: list) -> tuple:
        """The states of one level from the transitions into it."""
        key, value, source, eid, count = self._reduce(queue)
        masks = self.state_mask.data[source] | self.ending_mask.data[eid]
        gids = np.arange(self.state_mask.size, self.state_mask.size + len(key))
        self.state_mask.extend(masks)
        self.state_count.extend(count)
        self.parent.extend(source)
        self.parent_stage.extend(eid)
        return key, masks, value, gids

    def _stages(self, state: int) -> list[tuple[list[list[int]], bool, float]]:
        out = []
        while state:
            eid = int(self.parent_stage.data[state])
            mask = sum(int(w) << (64 * i) for i, w in enumerate(self.ending_mask.data[eid]))
            out.append(([ids_of(c) for c in components(self.graph, mask)],
                        bool(self.ending_merged.data[eid]), float(self.ending_latency.data[eid])))
            state = int(self.parent.data[state])
        return out[::-1]


def _group(keys: np.ndarray):
    """Sort ``keys``: ``(order, starts of runs of equal keys, run index of each key)``."""
    order = np.argsort(keys)
    ordered = keys[order]
    first = np.ones(len(keys), dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    inverse = np.empty(len(keys), dtype=np.int64)
    inverse[order] = np.cumsum(first) - 1
    return order, np.flatnonzero(first), inverse
