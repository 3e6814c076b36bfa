"""Never slower than sequential: a concurrent stage is kept only if it measures faster.

On the CPU a concurrent stage runs as one rProgram whose vEUs run one-core kernels, while
the same ops run one after another use kernels parallel over every core. Which wins depends
on the ops (small convolutions gain from running side by side, large ones lose their
parallel loops), so it is decided per stage from the cost model's figures (measured ones
with :class:`~tvm_ios.cost.measured.MeasuredCostModel`): :func:`sequential_fallback` replaces
every concurrent stage of two or more groups whose latency exceeds the sum of its ops' own
single-op stages by those stages, in an order that respects the graph, and logs each
decision. ``schedule.stats["fallback"]`` counts them; ``decisions`` (a list) receives each.
"""
from __future__ import annotations

import logging

from ..graph.opgraph import OpGraph
from ..schedule.schedule import Schedule, Stage

__all__ = ["sequential_fallback", "rprogram_schedule"]

logger = logging.getLogger(__name__)


def sequential_fallback(graph: OpGraph, schedule: Schedule, cost_model,
                        decisions: list | None = None) -> Schedule:
    """``schedule`` with every concurrent stage slower than its ops in turn made sequential.

    Parameters
    ----------
    graph : OpGraph
        The graph the schedule is for.
    schedule : Schedule
        A stage schedule (merge stages and single groups are kept as they are).
    cost_model : CostModel
        Prices a stage (``stage_latency``); measured figures make this a measured decision.
    decisions : list, optional
        Receives one dict per concurrent stage: its ops, both latencies, what was kept.
    """
    stages = []
    decisions = decisions if decisions is not None else []
    start = len(decisions)
    for stage in schedule.stages:
        if stage.strategy != "concurrent" or len(stage.groups) < 2:
            stages.append(stage)
            continue
        groups = [[graph.index[op] for op in g] for g in stage.groups]
        together = float(cost_model.stage_latency(graph, groups))
        order = sorted((i for g in groups for i in g))  # node ids are topological
        alone = [float(cost_model.stage_latency(graph, [[i]])) for i in order]
        keep = together <= sum(alone)
        decisions.append({"ops": stage.ops, "concurrent_us": together,
                          "sequential_us": sum(alone), "kept": "concurrent" if keep
                          else "sequential"})
        logger.info("stage %s: concurrent %.1f us, sequential %.1f us: %s", stage.ops[:4],
                    together, sum(alone), "concurrent" if keep else "kept sequential")
        if keep:
            stages.append(stage)
        else:
            stages.extend(Stage([[graph.nodes[i].name]], "concurrent", t)
                          for i, t in zip(order, alone))
    out = Schedule(stages, dict(schedule.graph), dict(schedule.params), dict(schedule.stats))
    mine = decisions[start:]
    kept = sum(d["kept"] == "concurrent" for d in mine)
    out.stats["fallback"] = f"{kept} concurrent kept, {len(mine) - kept} made sequential"
    return out


def rprogram_schedule(mod, cost_model, func_name: str = "main", decisions: list | None = None,
                      **ios_options):
    """``mod`` with the schedule its rPrograms follow recorded on it: IOS without merges
    (what ``RProgramPass`` plans from) under ``cost_model``, then :func:`sequential_fallback`.
    """
    from ..graph.extract import extract  # noqa: PLC0415
    from ..passes.apply_schedule import record_schedule  # noqa: PLC0415
    from ..schedule.ios import ios_schedule  # noqa: PLC0415

    graph = extract(mod[func_name], name=func_name).graph
    schedule = ios_schedule(graph, cost_model, **{**ios_options, "strategy": "parallel"})
    return record_schedule(mod, func_name,
                           sequential_fallback(graph, schedule, cost_model, decisions))
