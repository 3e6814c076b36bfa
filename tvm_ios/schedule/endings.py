"""Enumerate the endings of a scheduler state, each exactly once, with r/s pruning.

An *ending* S' of a state S is a non-empty subset with no edge from S' to S - S' (it can
run last). Its *groups* are the weakly connected components of S'. Pruning keeps endings
with at most ``s`` groups of at most ``r`` ops.

Enumeration decides each node of S in reverse topological order: exclude it, or include
it if all its successors inside S are already included. Every ending corresponds to one
sequence of decisions, so each is produced exactly once (the reference implementation's
issue #10 produced some twice). Components are maintained incrementally: an included node
joins the components of its successors, and since every edge inside S' is seen when its
source is included, this yields the weak components. A component only grows, so the r
bound prunes whole subtrees.

Every node of a pruned ending lies less than r edges above a sink of S (its path to a
sink stays inside the ending's component of at most r ops). So the endings of S are the
endings of its *top region* T(S), the nodes of height < r in S; many states share a top
region, which is what :meth:`EndingEnumerator.top_region` lets callers cache on.
"""
from __future__ import annotations

from ..graph.bitset import ids_desc
from ..graph.opgraph import OpGraph

__all__ = ["EndingEnumerator"]


class EndingEnumerator:
    """Endings of states of one block.

    Parameters
    ----------
    graph : OpGraph
        The whole graph (node ids are global).
    max_group_size : int
        r: at most this many ops per group.
    max_num_groups : int
        s: at most this many groups per stage.
    """

    def __init__(self, graph: OpGraph, max_group_size: int, max_num_groups: int):
        if max_group_size < 1:
            raise ValueError(f"max_group_size (r) must be >= 1, got {max_group_size}")
        if max_num_groups < 1:
            raise ValueError(f"max_num_groups (s) must be >= 1, got {max_num_groups}")
        self.graph = graph
        self.r = max_group_size
        self.s = max_num_groups
        self.fixed = 0  # unschedulable nodes: always a stage of their own
        for i, node in enumerate(graph.nodes):
            if not node.schedulable:
                self.fixed |= 1 << i

    def top_region(self, state: int) -> int:
        """Nodes of ``state`` less than r edges above one of its sinks (see module doc)."""
        succ = self.graph.succ
        ids = ids_desc(state)
        region = 0
        for _ in range(min(self.r, len(ids))):
            grown = region
            for node in ids:
                if not succ[node] & state & ~region:
                    grown |= 1 << node
            if grown == region:
                break
            region = grown
        return region

    def endings(self, state: int) -> list[tuple[int, tuple[int, ...]]]:
        """All pruned endings of ``state`` as ``(ending_bitset, group_bitsets)``."""
        ids = ids_desc(state)
        succ = self.graph.succ
        r, s, fixed = self.r, self.s, self.fixed
        out: list[tuple[int, tuple[int, ...]]] = []
        last = len(ids)

        def visit(k: int, chosen: int, comps: tuple[int, ...]) -> None:
            while k < last:
                node = ids[k]
                needed = succ[node] & state
                if needed & ~chosen:
                    k += 1  # a successor stays in S - S', so this node must stay too
                    continue
                bit = 1 << node
                if bit & fixed or chosen & fixed:
                    if not chosen:
                        out.append((bit, (bit,)))
                    k += 1
                    continue
                merged, rest = bit, []
                for comp in comps:
                    if comp & needed:
                        merged |= comp
                    else:
                        rest.append(comp)
                if merged.bit_count() <= r:
                    visit(k + 1, chosen | bit, (*rest, merged))
                k += 1  # and the branch that excludes this node
            if chosen and len(comps) <= s:
                out.append((chosen, comps))

        visit(0, 0, ())
        return out
