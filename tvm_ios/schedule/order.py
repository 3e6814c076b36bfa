"""Scheduling within a given order: ranks of ops that the stages must not go back on.

GraphTurbo orders its instances for locality (each instance fits the local buffer, the next
one starts when it is done); an IOS schedule that runs them in another order runs what the
plan did not size. An *order* gives every op a rank (its instance's position in the plan);
a schedule *follows* it when its ops, stage by stage and group by group, never go down in
rank. :func:`ordered_graph` makes the search keep to it: an edge from every op of one rank
to every op of the next, so an op runs only after every op of a lower rank. The stages found
then hold ops of one rank in their groups side by side (the branches of one instance), or
one group going from a rank to the next; the edges are the search's only, never the graph's
data (the schedule is recorded, priced and validated against the graph itself).
"""
from __future__ import annotations

from collections.abc import Sequence

from ..graph.opgraph import OpGraph
from .schedule import Schedule

__all__ = ["check_order", "ordered_graph", "follows_order"]


def check_order(graph: OpGraph, order: Sequence[int]) -> list[int]:
    """``order`` as a list of ints, checked: one rank per node, never decreasing along the
    nodes (which are in topological order), so that no dependency goes back in rank.

    Raises
    ------
    ValueError
        When the ranks do not fit ``graph``.
    """
    ranks = [int(r) for r in order]
    if len(ranks) != len(graph):
        raise ValueError(f"order: {len(ranks)} ranks for the {len(graph)} ops of "
                         f"{graph.name}")
    for i in range(1, len(ranks)):
        if ranks[i] < ranks[i - 1]:
            raise ValueError(f"order: rank {ranks[i]} of op {graph.nodes[i].name!r} comes "
                             f"after rank {ranks[i - 1]} of {graph.nodes[i - 1].name!r}; "
                             "ranks must not decrease along the graph's ops")
    return ranks


def ordered_graph(graph: OpGraph, order: Sequence[int]) -> OpGraph:
    """``graph`` with an edge from every op of each rank to every op of the next rank (the
    graph the search runs on; see the module docstring)."""
    ranks = check_order(graph, order)
    levels: dict[int, list[int]] = {}
    for i, rank in enumerate(ranks):
        levels.setdefault(rank, []).append(i)
    ordered = [levels[r] for r in sorted(levels)]
    edges = set(graph.edges)
    for lower, upper in zip(ordered, ordered[1:]):
        edges.update((u, v) for u in lower for v in upper)
    return OpGraph(graph.nodes, edges, name=graph.name)


def follows_order(graph: OpGraph, schedule: Schedule, order: Sequence[int]) -> bool:
    """Whether ``schedule``'s ops, stage by stage and group by group, never go down in the
    ranks of ``order`` (one rank per node of ``graph``)."""
    ranks = [order[graph.index[op]] for op in schedule.ops]
    return all(a <= b for a, b in zip(ranks, ranks[1:]))
