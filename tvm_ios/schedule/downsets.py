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
state and a stage are keyed by a 64-bit Zobrist sum of their ops, so ``key(D + E) = key(D)
+ key(E)``; every merge by key is checked against the exact bitsets, so a hash collision
raises instead of mixing two states.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from ..graph.opgraph import OpGraph
from .groups import GroupTable, to_words
from .pricing import StagePricer

__all__ = ["DownsetSearch", "SearchResult"]

_ZOBRIST_SEED = 0x105
_READY_CHUNK = 1 << 22  # states x ops x words handled at once when finding ready ops


@dataclass
class SearchResult:
    """The optimum of one search and its size.

    ``stages`` lists ``(group_ids, merged, latency)`` in execution order, where
    ``group_ids`` are rows of the :class:`GroupTable` the search ran on.
    """

    latency: float
    stages: list[tuple[list[int], bool, float]]
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
    groups : GroupTable
        Its candidate groups (:func:`~tvm_ios.schedule.groups.candidate_groups`).
    pricer : StagePricer
        Prices stages given as rows of group ids.
    max_num_groups : int
        s: at most this many groups per stage.
    """

    def __init__(self, graph: OpGraph, groups: GroupTable, pricer: StagePricer,
                 max_num_groups: int):
        self.graph, self.groups, self.pricer, self.s = graph, groups, pricer, max_num_groups
        m, words = len(graph), groups.words.shape[1]
        self.words = words
        self.pred = to_words(graph.pred, words)
        self.bit_word = np.arange(m) // 64
        self.bit_shift = (np.arange(m) % 64).astype(np.uint64)
        # Up to 64 ops a key is the bitset itself: exact, nothing to check.
        self.exact_keys = words == 1
        zobrist = (np.left_shift(np.uint64(1), np.arange(m, dtype=np.uint64))
                   if self.exact_keys else np.random.default_rng(_ZOBRIST_SEED).integers(
                       0, np.iinfo(np.uint64).max, size=m, dtype=np.uint64, endpoint=True))
        ops = groups.ops
        self.group_hash = np.where(ops >= 0, zobrist[ops], 0).sum(axis=1, dtype=np.uint64)
        self.group_size = (ops >= 0).sum(axis=1)
        self.anchor_count = np.diff(groups.anchor_ptr)
        self.known_hash = np.zeros(0, dtype=np.uint64)  # sorted keys of priced stages
        self.known_id = np.zeros(0, dtype=np.int64)
        self.ending_mask = _Grow(np.uint64, words)
        self.ending_groups = _Grow(np.int64, max_num_groups)
        self.ending_latency = _Grow(np.float64)
        self.ending_valid = _Grow(bool)
        self.ending_merged = _Grow(bool)
        self.state_mask = _Grow(np.uint64, words)
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
            self._push(level, size - 1, pending)
            level = self._collect(pending.pop(size))
        final = int(level[3][0])
        return SearchResult(float(level[2][0]), self._stages(final), self.state_mask.size - 1,
                            self.transitions, int(self.state_count.data[final]))

    # -- one level ------------------------------------------------------------------------
    def _ready(self, masks: np.ndarray) -> np.ndarray:
        """``(N, m)``: op v is not run yet and all its predecessors are."""
        m = len(self.graph)
        done = ((masks[:, self.bit_word] >> self.bit_shift) & np.uint64(1)).astype(bool)
        out = np.empty_like(done)
        step = max(1, _READY_CHUNK // max(1, m * self.words))
        for lo in range(0, len(masks), step):
            chunk = masks[lo:lo + step, None, :]
            out[lo:lo + step] = ((chunk & self.pred[None]) == self.pred[None]).all(axis=2)
        return out & ~done

    def _stages_of(self, masks: np.ndarray):
        """Every stage of every state: ``(row, hash, mask, size, group_rows)`` arrays."""
        g = self.groups
        rows, ops = np.nonzero(self._ready(masks))
        counts = self.anchor_count[ops]
        pair_row = np.repeat(rows, counts)
        pair_group = _ranges(g.anchor_ptr[ops], counts)
        free = ~(g.words[pair_group] & masks[pair_row]).any(axis=1)
        free &= ~(g.required[pair_group] & ~masks[pair_row]).any(axis=1)
        pair_row, pair_group = pair_row[free], pair_group[free]
        row_end = np.searchsorted(pair_row, np.arange(len(masks)), side="right")
        pos = np.arange(len(pair_row))
        cur = (pair_row, pos, g.words[pair_group], g.blocked[pair_group],
               self.group_hash[pair_group], self.group_size[pair_group], pair_group[:, None])
        out = [cur]
        for _ in range(self.s - 1):
            row, last, mask, blocked, hsh, size, chosen = cur
            grow = np.flatnonzero(~g.solo[pair_group[last]])
            counts = np.maximum(row_end[row[grow]] - last[grow] - 1, 0)
            parent = np.repeat(grow, counts)
            nxt = _ranges(last[grow] + 1, counts)
            group = pair_group[nxt]
            fits = ~g.solo[group] & ~(g.words[group] & blocked[parent]).any(axis=1)
            parent, nxt, group = parent[fits], nxt[fits], group[fits]
            if not len(parent):
                break
            cur = (row[parent], nxt, mask[parent] | g.words[group],
                   blocked[parent] | g.blocked[group], hsh[parent] + self.group_hash[group],
                   size[parent] + self.group_size[group],
                   np.concatenate([chosen[parent], group[:, None]], axis=1))
            out.append(cur)
        return _concat_stages(out, self.s)

    def _push(self, level, size: int, pending) -> None:
        keys, masks, cost, gids = level
        row, hsh, mask, nops, chosen = self._stages_of(masks)
        eid = self._ending_ids(hsh, mask, chosen)
        valid = self.ending_valid.data[eid]
        row, hsh, nops, eid = row[valid], hsh[valid], nops[valid], eid[valid]
        self.transitions += len(row)
        target_key = keys[row] + hsh
        value = cost[row] + self.ending_latency.data[eid]
        source = gids[row]
        order = np.argsort(nops, kind="stable")
        ordered = nops[order]
        for part in np.split(order, np.flatnonzero(ordered[1:] != ordered[:-1]) + 1):
            if len(part):
                pending[size + int(nops[part[0]])].append(
                    (target_key[part], value[part], source[part], eid[part]))

    def _ending_ids(self, hsh: np.ndarray, mask: np.ndarray, chosen: np.ndarray) -> np.ndarray:
        """Global ids of the stages (pricing the new ones), checked against their bitsets."""
        uniq, first, inverse = np.unique(hsh, return_index=True, return_inverse=True)
        known, known_id = self.known_hash, self.known_id
        pos = np.searchsorted(known, uniq)
        found = pos < len(known)
        found[found] = known[pos[found]] == uniq[found]
        ids = np.empty(len(uniq), dtype=np.int64)
        ids[found] = known_id[pos[found]]
        new = np.flatnonzero(~found)
        if len(new):
            ids[new] = np.arange(self.ending_mask.size, self.ending_mask.size + len(new))
            self.known_hash = np.insert(known, pos[new], uniq[new])
            self.known_id = np.insert(known_id, pos[new], ids[new])
            rep = first[new]
            latency, valid, merged = self.pricer.price(chosen[rep])
            self.ending_mask.extend(mask[rep])
            self.ending_groups.extend(chosen[rep])
            self.ending_latency.extend(latency)
            self.ending_valid.extend(valid)
            self.ending_merged.extend(merged)
        eid = ids[inverse.ravel()]
        if not self.exact_keys and not (self.ending_mask.data[eid] == mask).all():
            raise RuntimeError("IOS search: two different stages share a 64-bit key")
        return eid

    def _collect(self, chunks) -> tuple:
        """The states of one level from the transitions into it: min cost, summed counts."""
        key, value, source, eid = (np.concatenate(parts) for parts in zip(*chunks))
        order = np.lexsort((value, key))
        sorted_key = key[order]
        first = np.ones(len(order), dtype=bool)
        first[1:] = sorted_key[1:] != sorted_key[:-1]
        starts = np.flatnonzero(first)
        best = order[starts]
        masks = self.state_mask.data[source[best]] | self.ending_mask.data[eid[best]]
        if not self.exact_keys:
            group = np.cumsum(first) - 1
            reached = self.state_mask.data[source[order]] | self.ending_mask.data[eid[order]]
            if not (reached == masks[group]).all():
                raise RuntimeError("IOS search: two different states share a 64-bit key")
        counts = np.add.reduceat(self.state_count.data[source[order]], starts)
        gids = np.arange(self.state_mask.size, self.state_mask.size + len(starts))
        self.state_mask.extend(masks)
        self.state_count.extend(counts)
        self.parent.extend(source[best])
        self.parent_stage.extend(eid[best])
        return sorted_key[starts], masks, value[best], gids

    def _stages(self, state: int) -> list[tuple[list[int], bool, float]]:
        out = []
        while state:
            eid = int(self.parent_stage.data[state])
            groups = [int(x) for x in self.ending_groups.data[eid] if x >= 0]
            out.append((groups, bool(self.ending_merged.data[eid]),
                        float(self.ending_latency.data[eid])))
            state = int(self.parent.data[state])
        return out[::-1]


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``concatenate([arange(a, a + c) for a, c in zip(starts, counts)])``, vectorised."""
    total = int(counts.sum())
    offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    return np.repeat(starts, counts) + offsets


def _concat_stages(rounds, width: int):
    rows, hashes, masks, sizes, chosen = [], [], [], [], []
    for row, _, mask, _, hsh, size, groups in rounds:
        rows.append(row)
        hashes.append(hsh)
        masks.append(mask)
        sizes.append(size)
        padded = np.full((len(row), width), -1, dtype=np.int64)
        padded[:, :groups.shape[1]] = groups
        chosen.append(padded)
    return (np.concatenate(rows), np.concatenate(hashes), np.concatenate(masks),
            np.concatenate(sizes), np.concatenate(chosen))
