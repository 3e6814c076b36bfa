"""Reachability, components and width of an :class:`~tvm_ios.graph.opgraph.OpGraph`.

All functions work on bitsets (Python ints) so that the scheduler can call them on the
states of its dynamic program.
"""
from __future__ import annotations

from .bitset import ids_of
from .opgraph import OpGraph

__all__ = ["ancestors", "descendants", "components", "width", "is_ending", "transition_bound"]


def ancestors(graph: OpGraph) -> list[int]:
    """Bitset of strict ancestors of every node (nodes are topologically ordered)."""
    anc = [0] * len(graph)
    for v in range(len(graph)):
        mask = graph.pred[v]
        acc = mask
        for u in ids_of(mask):
            acc |= anc[u]
        anc[v] = acc
    return anc


def descendants(graph: OpGraph) -> list[int]:
    """Bitset of strict descendants of every node."""
    desc = [0] * len(graph)
    for u in range(len(graph) - 1, -1, -1):
        acc = graph.succ[u]
        for v in ids_of(graph.succ[u]):
            acc |= desc[v]
        desc[u] = acc
    return desc


def components(graph: OpGraph, mask: int) -> list[int]:
    """Weakly connected components of the subgraph induced by ``mask``.

    Returns the components as bitsets, ordered by their lowest node id.
    """
    comps = []
    rest = mask
    while rest:
        low = rest & -rest
        comp = low
        frontier = low
        while frontier:
            grow = 0
            for i in ids_of(frontier):
                grow |= (graph.succ[i] | graph.pred[i])
            grow &= mask & ~comp
            comp |= grow
            frontier = grow
        comps.append(comp)
        rest &= ~comp
    return comps


def is_ending(graph: OpGraph, state: int, part: int) -> bool:
    """True when ``part`` is an ending of ``state``: no edge leaves ``part`` into
    ``state - part``."""
    if part == 0 or part & ~state:
        return False
    rest = state & ~part
    return all(not (graph.succ[i] & rest) for i in ids_of(part))


def width(graph: OpGraph, mask: int | None = None) -> int:
    """Width of the DAG induced by ``mask``: the size of its largest antichain.

    By Dilworth's theorem this is ``n`` minus a maximum matching in the bipartite graph of
    the transitive closure (the minimum chain cover).
    """
    mask = graph.all_mask if mask is None else mask
    ids = ids_of(mask)
    desc = descendants(graph)
    reach = {u: desc[u] & mask for u in ids}
    match_of_right: dict[int, int] = {}

    def augment(u: int, seen: set[int]) -> bool:
        for v in ids_of(reach[u]):
            if v in seen:
                continue
            seen.add(v)
            if v not in match_of_right or augment(match_of_right[v], seen):
                match_of_right[v] = u
                return True
        return False

    matched = sum(1 for u in ids if augment(u, set()))
    return len(ids) - matched


def transition_bound(n: int, d: int) -> float:
    """The thesis's bound C(n/d + 2, 2)^d on the DP's transitions (real n/d, as in Table 3.1)."""
    if n == 0 or d == 0:
        return 0.0
    x = n / d + 2
    return (x * (x - 1) / 2) ** d
