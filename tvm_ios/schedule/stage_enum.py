"""Every stage that can run after each of many states, enumerated at once in numpy.

A stage after state ``D`` (a downset, the ops already run) is a set of at most s pairwise
compatible candidate groups that are all ready after ``D`` (:mod:`tvm_ios.schedule.groups`).
Each stage is produced exactly once: its groups are taken in the order of the state's list
of ready groups, and a stage of t groups extends one of t - 1 groups by a later group that
neither overlaps nor touches it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..graph.opgraph import OpGraph
from .groups import GroupTable, to_words

__all__ = ["StageEnumerator", "IdealEnumerator", "Stages", "IdealStages", "ranges"]

_READY_CHUNK = 1 << 22  # states x ops x words looked at at once when finding ready ops


@dataclass
class Stages:
    """The stages of a batch of states, flat: stage ``k`` runs after state ``row[k]``.

    ``key`` is the sum of its ops' keys, ``mask`` its bitset, ``size`` its op count.
    """

    row: np.ndarray
    key: np.ndarray
    mask: np.ndarray
    size: np.ndarray
    _depth: np.ndarray      # groups in stage k
    _index: np.ndarray      # its position in the list of stages with that many groups
    _rounds: list           # per group count: (group id, parent position) arrays
    _group_ops: np.ndarray  # ops of each candidate group, -1 padded

    def __len__(self) -> int:
        return len(self.row)

    def ops(self, which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(ops, ok)`` of stages ``which``: ``(n, groups, ops)`` op ids padded with -1,
        groups by their lowest op; ``ok`` says the stage obeys r and s (always, here)."""
        width = len(self._rounds)
        groups = np.full((len(which), width), -1, dtype=np.int64)
        depth, index = self._depth[which], self._index[which].copy()
        for t in range(int(depth.max(initial=0)), 0, -1):
            sel = depth >= t
            group, parent = self._rounds[t - 1]
            groups[sel, t - 1] = group[index[sel]]
            index[sel] = parent[index[sel]]
        ops = self._group_ops[np.maximum(groups, 0)]
        ops[groups < 0] = -1
        return ops, np.ones(len(which), dtype=bool)


class StageEnumerator:
    """Enumerates the stages of states of one graph.

    Parameters
    ----------
    graph : OpGraph
        The graph (ids local to it).
    groups : GroupTable
        Its candidate groups.
    group_key : numpy.ndarray
        ``uint64`` key of each group (sum of its ops' keys).
    max_num_groups : int
        s.
    """

    def __init__(self, graph: OpGraph, groups: GroupTable, group_key: np.ndarray,
                 max_num_groups: int):
        self.groups, self.group_key, self.s = groups, group_key, max_num_groups
        m, self.words = len(graph), groups.words.shape[1]
        self.pred = to_words(graph.pred, self.words)
        self.bit_word = np.arange(m) // 64
        self.bit_shift = (np.arange(m) % 64).astype(np.uint64)
        self.group_size = (groups.ops >= 0).sum(axis=1)
        self.anchor_count = np.diff(groups.anchor_ptr)

    def ready(self, masks: np.ndarray) -> np.ndarray:
        """``(N, m)``: op v has not run after state n and all its predecessors have."""
        done = ((masks[:, self.bit_word] >> self.bit_shift) & np.uint64(1)).astype(bool)
        out = np.empty_like(done)
        step = max(1, _READY_CHUNK // max(1, done.shape[1] * self.words))
        for lo in range(0, len(masks), step):
            chunk = masks[lo:lo + step, None, :]
            out[lo:lo + step] = ((chunk & self.pred[None]) == self.pred[None]).all(axis=2)
        return out & ~done

    def stages(self, masks: np.ndarray) -> Stages:
        """Every stage after every state ``masks`` (``(N, W)`` bitsets)."""
        g = self.groups
        rows, ops = np.nonzero(self.ready(masks))
        counts = self.anchor_count[ops]
        pair_row = np.repeat(rows, counts)
        pair_group = ranges(g.anchor_ptr[ops], counts)
        free = ~(g.words[pair_group] & masks[pair_row]).any(axis=1)
        free &= ~(g.required[pair_group] & ~masks[pair_row]).any(axis=1)
        pair_row, pair_group = pair_row[free], pair_group[free]
        row_end = np.searchsorted(pair_row, np.arange(len(masks)), side="right")
        last = np.arange(len(pair_row))
        cur = (pair_row, last, g.words[pair_group], g.blocked[pair_group],
               self.group_key[pair_group], self.group_size[pair_group])
        out, rounds = [cur], [(pair_group, np.full(len(last), -1))]
        for _ in range(self.s - 1):
            row, last, mask, blocked, key, size = cur
            grow = np.flatnonzero(~g.solo[pair_group[last]])
            counts = np.maximum(row_end[row[grow]] - last[grow] - 1, 0)
            parent = np.repeat(grow, counts)
            nxt = ranges(last[grow] + 1, counts)
            group = pair_group[nxt]
            fits = ~g.solo[group] & ~(g.words[group] & blocked[parent]).any(axis=1)
            parent, nxt, group = parent[fits], nxt[fits], group[fits]
            if not len(parent):
                break
            cur = (row[parent], nxt, mask[parent] | g.words[group],
                   blocked[parent] | g.blocked[group], key[parent] + self.group_key[group],
                   size[parent] + self.group_size[group])
            out.append(cur)
            rounds.append((group, parent))
        return Stages(*(np.concatenate([r[i] for r in out]) for i in (0, 4, 2, 5)),
                      np.concatenate([np.full(len(r[0]), t + 1) for t, r in enumerate(out)]),
                      np.concatenate([np.arange(len(r[0])) for r in out]), rounds, g.ops)


class IdealEnumerator(StageEnumerator):
    """Every stage when nothing is pruned (r and s at least the number of ops).

    A stage is then any non-empty set of ops not yet run that holds every predecessor of
    its ops that has not run. Sets are grown by adding ops in increasing id order (each set
    once), so no table of groups is needed, which could hold every convex connected set
    of the graph. An unschedulable op is only a stage of its own. Groups are found for the
    distinct stages only, when they are priced.
    """

    def __init__(self, graph: OpGraph, op_key: np.ndarray):
        self.graph, self.op_key = graph, op_key
        m, self.words = len(graph), max(1, (len(graph) + 63) // 64)
        self.pred = to_words(graph.pred, self.words)
        self.bit_word = np.arange(m) // 64
        self.bit_shift = (np.arange(m) % 64).astype(np.uint64)
        self.bits = to_words([1 << i for i in range(m)], self.words)
        self.solo = np.array([not node.schedulable for node in graph.nodes], dtype=bool)

    def stages(self, masks: np.ndarray) -> "IdealStages":
        """Every stage after every state ``masks`` (``(N, W)`` bitsets)."""
        m = len(self.graph)
        row, last = np.nonzero(self.ready(masks))
        cur = (row, last, self.bits[last], self.op_key[last], np.ones(len(row), np.int64))
        out = [cur]
        while len(cur[0]):
            row, last, mask, key, size = cur
            grow = np.flatnonzero(~self.solo[last])
            counts = m - 1 - last[grow]
            parent = np.repeat(grow, counts)
            op = ranges(last[grow] + 1, counts)
            have = masks[row[parent]] | mask[parent]
            word = have[np.arange(len(op)), self.bit_word[op]]
            taken = ((word >> self.bit_shift[op]) & np.uint64(1)).astype(bool)
            fits = ~self.solo[op] & ~taken & ~(self.pred[op] & ~have).any(axis=1)
            parent, op = parent[fits], op[fits]
            cur = (row[parent], op, mask[parent] | self.bits[op], key[parent] + self.op_key[op],
                   size[parent] + 1)
            out.append(cur)
        return IdealStages(*(np.concatenate([r[i] for r in out]) for i in (0, 3, 2, 4)),
                           graph=self.graph)


@dataclass
class IdealStages:
    """Stages of :class:`IdealEnumerator`, as :class:`Stages` (groups found on demand)."""

    row: np.ndarray
    key: np.ndarray
    mask: np.ndarray
    size: np.ndarray
    graph: OpGraph

    def __len__(self) -> int:
        return len(self.row)

    def ops(self, which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """As :meth:`Stages.ops`: the weak components of each stage, found in numpy."""
        m = len(self.graph)
        masks = self.mask[which]
        word = np.arange(m) // 64
        inside = ((masks[:, word] >> (np.arange(m) % 64).astype(np.uint64))
                  & np.uint64(1)).astype(bool)
        label = np.where(inside, np.arange(m), m)
        edges = self.graph.edges
        while True:  # sweep the edges both ways until every component has one label
            before = label.copy()
            for u, v in edges + edges[::-1]:
                both = inside[:, u] & inside[:, v]
                low = np.minimum(label[:, u], label[:, v])
                label[both, u] = label[both, v] = low[both]
            if (label == before).all():
                break
        order = np.sort(label * (m + 1) + np.arange(m), axis=1)
        group_of, op = order // (m + 1), order % (m + 1)
        used = group_of < m
        start = np.ones_like(used)
        start[:, 1:] = group_of[:, 1:] != group_of[:, :-1]
        group = np.cumsum(start & used, axis=1) - 1
        first = np.maximum.accumulate(np.where(start, np.arange(m), 0), axis=1)
        slot = np.arange(m) - first
        ops = np.full((len(which), max(1, int(group.max(initial=0)) + 1),
                       max(1, int(np.where(used, slot, 0).max(initial=0)) + 1)), -1)
        rows = np.nonzero(used)
        ops[rows[0], group[rows], slot[rows]] = op[rows]
        return ops, np.ones(len(which), dtype=bool)


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``concatenate([arange(a, a + c) for a, c in zip(starts, counts)])``, vectorised."""
    total = int(counts.sum())
    offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    return np.repeat(starts, counts) + offsets
