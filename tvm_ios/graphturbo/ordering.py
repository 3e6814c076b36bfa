"""Ordering instances (Algorithm 3): breadth-first and depth-first topological orders.

Both orders respect the instance edges left after redundant-edge elimination. The BFS order
runs every instance of one level before the next; the DFS order (Algorithm 3) always runs
the most recently readied instance, following one instance's consumers down the graph
while it can, so small, down-sampled instances run while their inputs are still local.
The caller keeps the order with the better local-memory use (:mod:`.memory`).
"""
from __future__ import annotations

from collections import deque

__all__ = ["bfs_order", "dfs_order"]


def _consumers(instances) -> dict[int, list[int]]:
    cons: dict[int, list[int]] = {inst.id: [] for inst in instances}
    for inst in instances:
        for p in inst.preds:
            cons[p].append(inst.id)
    return cons


def bfs_order(instances) -> list[int]:
    """Kahn's algorithm with a FIFO queue: level by level."""
    indeg = {inst.id: len(set(inst.preds)) for inst in instances}
    cons = _consumers(instances)
    queue = deque(inst.id for inst in instances if indeg[inst.id] == 0)
    order = []
    while queue:
        i = queue.popleft()
        order.append(i)
        for c in cons[i]:
            indeg[c] -= 1
            if indeg[c] == 0:
                queue.append(c)
    _check(order, instances)
    return order


def dfs_order(instances, visit: list[int] | None = None) -> list[int]:
    """Algorithm 3: take the last ready instance whose producers have all run.

    ``visit`` is the initial visiting order of the instances (default: BFS).
    """
    indeg = {inst.id: len(set(inst.preds)) for inst in instances}
    cons = _consumers(instances)
    visit = list(visit if visit is not None else bfs_order(instances))
    ready = [i for i in visit if indeg[i] == 0]
    visit = [i for i in visit if indeg[i] != 0]
    order = []
    while ready:
        p = len(ready) - 1
        while p >= 0 and indeg[ready[p]] != 0:
            p -= 1
        if p < 0:
            break
        current = ready.pop(p)
        order.append(current)
        for c in cons[current]:
            indeg[c] -= 1
            if c in visit:
                visit.remove(c)
            elif c in ready:
                ready.remove(c)
            ready.append(c)
    _check(order, instances)
    return order


def _check(order, instances) -> None:
    if len(order) != len(instances):
        raise RuntimeError("GraphTurbo ordering: the instance graph has a cycle")
