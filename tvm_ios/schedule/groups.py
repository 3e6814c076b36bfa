"""The groups a stage can hold: connected, convex sets of at most r schedulable ops.

A stage ``E`` run after the ops ``D`` (a downset: everything ``E`` needs outside itself is
in ``D``) splits into its weakly connected components, its *groups*. Each group ``C`` is

- connected, with at most ``r`` ops;
- convex: no path leaves ``C`` and comes back (the ops between two ops of a stage are in
  the stage, since ``D`` is closed under ancestors and ``E`` under descendants within
  ``D + E``), and a component of a convex set is convex;
- ready after ``D``: ``C`` and ``D`` are disjoint and ``preds(C) - C`` is inside ``D``.

Conversely any set of pairwise disjoint, non-adjacent groups that are all ready after ``D``
is a stage whose components are exactly those groups. So the stages of the search are the
sets of at most ``s`` compatible groups from this table. An unschedulable op is a group
of its own that combines with nothing.

Every convex connected set of two or more ops has a source or a sink whose removal leaves
it convex and connected (a leaf block of its block-cut tree has a source and a sink, at
most one of them the articulation point), so growing sets one neighbour at a time while
they stay convex finds all of them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..graph.analysis import ancestors, descendants
from ..graph.bitset import ids_of
from ..graph.opgraph import OpGraph

__all__ = ["GroupTable", "candidate_groups", "to_words"]

_WORD = (1 << 64) - 1


def to_words(masks: list[int], words: int) -> np.ndarray:
    """Bitsets (Python ints) as a ``(len(masks), words)`` uint64 array, low word first."""
    out = np.zeros((len(masks), words), dtype=np.uint64)
    for w in range(words):
        out[:, w] = [(m >> (64 * w)) & _WORD for m in masks]
    return out


@dataclass
class GroupTable:
    """Candidate groups of one graph, sorted by their lowest op (which is always a source).

    Attributes
    ----------
    masks : list of int
        The groups as bitsets.
    words : numpy.ndarray
        ``(G, W)`` uint64 bitsets of the groups.
    required : numpy.ndarray
        ``(G, W)``: predecessors outside the group, which must have run.
    blocked : numpy.ndarray
        ``(G, W)``: the group and its neighbours; a compatible group avoids them all.
    anchor_ptr : numpy.ndarray
        Groups whose lowest op is ``v`` are ``anchor_ptr[v]:anchor_ptr[v + 1]``.
    solo : numpy.ndarray
        True for an unschedulable op, which is a stage of its own.
    ops : numpy.ndarray
        ``(G, r)`` op ids of each group, ascending, padded with -1.
    """

    masks: list[int]
    words: np.ndarray
    required: np.ndarray
    blocked: np.ndarray
    anchor_ptr: np.ndarray
    solo: np.ndarray
    ops: np.ndarray

    def __len__(self) -> int:
        return len(self.masks)


def candidate_groups(graph: OpGraph, max_group_size: int) -> GroupTable:
    """All candidate groups of ``graph`` with at most ``max_group_size`` ops."""
    n, words = len(graph), max(1, (len(graph) + 63) // 64)
    fixed = {i for i, node in enumerate(graph.nodes) if not node.schedulable}
    anc, desc = ancestors(graph), descendants(graph)
    near = [graph.succ[i] | graph.pred[i] for i in range(n)]
    free = graph.all_mask & ~sum(1 << i for i in fixed)
    found: set[int] = set()
    layer = [(1 << i, anc[i], desc[i]) for i in range(n) if i not in fixed]
    found.update(m for m, _, _ in layer)
    for _ in range(max_group_size - 1):
        grown = []
        for mask, up, down in layer:
            border = 0
            for i in ids_of(mask):
                border |= near[i]
            for j in ids_of(border & free & ~mask):
                new = mask | (1 << j)
                if new in found:
                    continue
                new_up, new_down = up | anc[j], down | desc[j]
                if new_up & new_down & ~new:
                    continue  # a path between two of its ops leaves the set
                found.add(new)
                grown.append((new, new_up, new_down))
        layer = grown
    masks = sorted(found | {1 << i for i in fixed}, key=lambda m: ((m & -m).bit_length(), m))
    return _table(graph, masks, fixed, near, words)


def _table(graph: OpGraph, masks: list[int], fixed: set[int], near: list[int],
           words: int) -> GroupTable:
    required, blocked, lowest = [], [], []
    width = max([m.bit_count() for m in masks] + [1])
    ops = np.full((len(masks), width), -1, dtype=np.int64)
    for g, mask in enumerate(masks):
        preds = around = 0
        members = ids_of(mask)
        for i in members:
            preds |= graph.pred[i]
            around |= near[i]
        required.append(preds & ~mask)
        blocked.append(mask | around)
        lowest.append(members[0])
        ops[g, :len(members)] = members
    counts = np.bincount(np.array(lowest, dtype=np.int64), minlength=len(graph))
    anchor_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    solo = np.array([m.bit_count() == 1 and (m.bit_length() - 1) in fixed for m in masks],
                    dtype=bool)
    return GroupTable(masks, to_words(masks, words), to_words(required, words),
                      to_words(blocked, words), anchor_ptr, solo, ops)
