"""Never slower than sequential: a concurrent stage is kept only if it measures faster.

On the CPU a concurrent stage runs as one rProgram whose vEUs run one-core kernels, while
the same ops run one after another use kernels parallel over every core. Which wins depends
on the ops (small convolutions gain from running side by side, large ones lose their
parallel loops), so it is decided per stage from the cost model's figures (measured ones
with :class:`~tvm_ios.cost.measured.MeasuredCostModel`): :func:`sequential_fallback` replaces
every concurrent stage of two or more groups whose latency exceeds the sum of its ops' own
single-op stages by those stages, in an order that respects the graph, and logs each
decision. ``schedule.stats["fallback"]`` counts them; ``decisions`` (a list) receives each.

Summing single-op stages over-prices the sequential side by a module call per op, and a
log that lacks a stage leaves both sides to the roofline. The measured decision
(:func:`stage_judges`, what the CPU builds use) times both sides of each concurrent stage as
it would run, with the same measurer, into the stage log: the stage as one rProgram, and the
same groups back to back in one module with the kernels parallel over every core
(``engine="sequential"``).
"""
from __future__ import annotations

import logging
import math

from ..graph.opgraph import OpGraph
from ..schedule.schedule import Schedule, Stage

__all__ = ["sequential_fallback", "rprogram_schedule", "stage_judges", "judge_measurer",
           "cold_settings", "in_turn", "COLD_FLUSH_BYTES"]

#: Bytes written before each timed call of a judged stage: more than this CPU's last-level
#: cache, so the stage's weights come from memory, as in a whole model whose weights do not
#: fit (Inception V3: 95 MB). Warm figures favoured the rProgram by what the model loses.
COLD_FLUSH_BYTES = 64 << 20

logger = logging.getLogger(__name__)


def stage_judges(mod, log, measurer=None, kernels=None, target: str | None = None,
                 engine: str = "rprogram"):
    """The two measured cost models of a measured fallback decision, sharing ``log``.

    Returns ``(concurrent, sequential)``: :class:`~tvm_ios.cost.measured.MeasuredCostModel`
    of ``mod`` pricing a stage as the rProgram it runs as (``engine``: ``rprogram`` or
    ``balanced``), and as its groups back to back.
    With ``measurer`` (:func:`judge_measurer`) the stages the log lacks are measured and
    appended to it; without one only this machine's logged cold-cache figures count (a stage
    the log lacks is decided by the cost model).
    """
    from .measured import MeasuredCostModel

    # without a measurer, read what a judge measurer (cold caches) logged on this machine
    key = None if measurer is not None else judge_measurer(target or "llvm").device_key
    return tuple(MeasuredCostModel(mod, measurer, log, target=target, device_key=key,
                                   engine=side, kernels=kernels)
                 for side in (engine, "sequential"))


def cold_settings(**overrides):
    """How the judges time a stage: cold caches (:data:`COLD_FLUSH_BYTES`), 5 repeats of 5
    calls after 2 untimed ones (``overrides`` replace any of these)."""
    from .stage_timing import MeasureSettings

    return MeasureSettings(**{"number": 5, "repeat": 5, "warmup": 2,
                              "flush_bytes": COLD_FLUSH_BYTES, **overrides})


def judge_measurer(target):
    """A local :class:`~tvm_ios.cost.stage_timing.Measurer` for the judges of ``target``
    (:func:`cold_settings`); logged as ``<device>:cold``."""
    from .stage_timing import Measurer

    return Measurer(target, settings=cold_settings())


def _judged(judge, graph, groups) -> float | None:
    """A judge's figure: measured (or logged) with a measurer, only logged without one;
    None when it has none."""
    if getattr(judge, "measurer", True) is None:
        value = judge.logged(graph, groups)
    else:
        value = judge.stage_latency(graph, groups)
    return None if value is None or not math.isfinite(value) else float(value)


def _prices(graph, groups, cost_model, judges):
    """``(together, in turn, measured?, per-op figures in graph order)`` of a stage; the
    judges' figures when both have one, else ``cost_model``'s stage and single-op stages."""
    order = sorted((i for g in groups for i in g))  # node ids are topological
    alone = [float(cost_model.stage_latency(graph, [[i]])) for i in order]
    judged = [_judged(j, graph, groups) for j in judges] if judges else [None]
    if None in judged:
        together = float(cost_model.stage_latency(graph, groups))
        return together, sum(alone), False, alone
    together, apart = judged
    return together, apart, True, [apart * a / max(sum(alone), 1e-9) for a in alone]


def _prefetch(graph, schedule, judges) -> None:
    """Measure, in batches, both sides of every concurrent stage the judges' log lacks."""
    refs = [(tuple(tuple(graph.index[op] for op in g) for g in s.groups), False)
            for s in schedule.stages if s.strategy == "concurrent" and len(s.groups) > 1]
    for judge in judges or ():
        if getattr(judge, "measurer", None) is not None:
            judge.prefetch(graph, refs)


def in_turn(graph: OpGraph, stage: Stage, figures=None) -> list[Stage]:
    """``stage``'s ops as single-op stages in graph order (node ids are topological), each
    priced by ``figures`` (default: the stage's latency shared evenly)."""
    order = sorted(graph.index[op] for op in stage.ops)
    figures = figures or [stage.latency_us / len(order)] * len(order)
    return [Stage([[graph.nodes[i].name]], "concurrent", t) for i, t in zip(order, figures)]


def sequential_fallback(graph: OpGraph, schedule: Schedule, cost_model,
                        decisions: list | None = None, judges=None) -> Schedule:
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
    judges : (CostModel, CostModel), optional
        The measured decision (:func:`stage_judges`): the first prices the stage as it runs
        concurrently, the second its groups back to back; where either has no figure (and
        without judges) ``cost_model`` prices the stage and the sum of its ops' single-op
        stages.
    """
    stages = []
    decisions = decisions if decisions is not None else []
    _prefetch(graph, schedule, judges)
    start = len(decisions)
    for stage in schedule.stages:
        if stage.strategy != "concurrent" or len(stage.groups) < 2:
            stages.append(stage)
            continue
        groups = [[graph.index[op] for op in g] for g in stage.groups]
        together, apart, measured, alone = _prices(graph, groups, cost_model, judges)
        keep = together <= apart
        decisions.append({"ops": stage.ops, "groups": [list(g) for g in stage.groups],
                          "concurrent_us": together, "sequential_us": apart,
                          "kept": "concurrent" if keep else "sequential",
                          "measured": measured})
        logger.info("stage %s: concurrent %.1f us, sequential %.1f us: %s", stage.ops[:4],
                    together, apart, "concurrent" if keep else "kept sequential")
        if keep:
            stages.append(stage)
        else:
            stages.extend(in_turn(graph, stage, alone))
    out = Schedule(stages, dict(schedule.graph), dict(schedule.params), dict(schedule.stats))
    mine = decisions[start:]
    kept = sum(d["kept"] == "concurrent" for d in mine)
    out.stats["fallback"] = f"{kept} concurrent kept, {len(mine) - kept} made sequential"
    return out


def rprogram_schedule(mod, cost_model, func_name: str = "main", decisions: list | None = None,
                      judges=None, num_veus: int | None = None, **ios_options):
    """``mod`` with the schedule its rPrograms follow recorded on it: IOS without merges
    (what ``RProgramPass`` plans from) under ``cost_model``, then :func:`sequential_fallback`
    (measured with ``judges``, :func:`stage_judges`, when given). With ``num_veus`` below 2
    (a CPU pool of one worker) no stage can run concurrently: the sequential schedule, ops in
    model order priced by ``cost_model``, with nothing searched or measured. After
    GraphTurbo's ``OrderInstances`` IOS keeps to its order of instances.
    """
    from ..graph.extract import extract
    from ..passes.apply_schedule import record_schedule
    from ..passes.instance_order import graphturbo_ranks
    from ..schedule.baselines import sequential_schedule
    from ..schedule.ios import ios_schedule

    ext = extract(mod[func_name], name=func_name)
    graph = ext.graph
    if num_veus is not None and num_veus < 2:
        logger.info("%s: %d vEU, nothing runs concurrently: the sequential schedule",
                    func_name, num_veus)
        schedule = sequential_schedule(graph, cost_model)
        schedule.stats["fallback"] = f"sequential: {num_veus} vEU"
        return record_schedule(mod, func_name, schedule)
    order = graphturbo_ranks(mod, func_name, ext)  # (GraphTurbo's order, when it ran)
    schedule = ios_schedule(graph, cost_model, order=order,
                            **{**ios_options, "strategy": "parallel"})
    return record_schedule(mod, func_name,
                           sequential_fallback(graph, schedule, cost_model, decisions, judges))
