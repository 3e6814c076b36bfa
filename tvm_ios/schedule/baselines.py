"""Baseline schedules: sequential (one op per stage) and greedy (all ready ops per stage).

Both are the baselines of the IOS paper. They are priced with the same cost model as IOS
when one is given, so their latencies compare directly with ``ios_schedule``'s.
"""
from __future__ import annotations

import time

from ..graph.bitset import ids_of
from ..graph.opgraph import OpGraph
from .ios import graph_info
from .schedule import Schedule, Stage

__all__ = ["sequential_schedule", "greedy_schedule"]


def sequential_schedule(graph: OpGraph, cost_model=None) -> Schedule:
    """One op per stage, in the graph's topological order.

    Parameters
    ----------
    graph : OpGraph
        The graph.
    cost_model : CostModel, optional
        Prices each stage; latencies are 0 without one.
    """
    start = time.perf_counter()
    stages = [_priced(graph, cost_model, [[i]]) for i in range(len(graph))]
    return Schedule(stages, graph=graph_info(graph),
                    params={"scheduler": "sequential", "cost_model": repr(cost_model)},
                    stats={"seconds": round(time.perf_counter() - start, 4)})


def greedy_schedule(graph: OpGraph, cost_model=None, max_streams: int = 8) -> Schedule:
    """Put every ready op in the current stage (at most ``max_streams``), repeat.

    Parameters
    ----------
    graph : OpGraph
        The graph.
    cost_model : CostModel, optional
        Prices each stage; latencies are 0 without one.
    max_streams : int
        Most ops (each its own group) per stage, like IOS's greedy with that many streams.
    """
    if max_streams < 1:
        raise ValueError(f"max_streams must be >= 1, got {max_streams}")
    start = time.perf_counter()
    done, stages = 0, []
    fixed = {i for i, node in enumerate(graph.nodes) if not node.schedulable}
    while done != graph.all_mask:
        ready = [i for i in ids_of(graph.all_mask & ~done) if graph.pred[i] & ~done == 0]
        alone = [i for i in ready if i in fixed]
        chosen = alone[:1] if alone and alone[0] == ready[0] else \
            [i for i in ready if i not in fixed][:max_streams]
        stages.append(_priced(graph, cost_model, [[i] for i in chosen]))
        for i in chosen:
            done |= 1 << i
    return Schedule(stages, graph=graph_info(graph),
                    params={"scheduler": "greedy", "max_streams": max_streams,
                            "cost_model": repr(cost_model)},
                    stats={"seconds": round(time.perf_counter() - start, 4)})


def _priced(graph: OpGraph, cost_model, groups: list[list[int]]) -> Stage:
    latency = float(cost_model.stage_latency(graph, groups)) if cost_model else 0.0
    return Stage([graph.names_of(g) for g in groups], "concurrent", latency)
