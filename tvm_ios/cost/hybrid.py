"""Tuning policies: measure every candidate stage, or predict and measure only what can win.

``measured_schedule`` lists every stage the IOS DP prices, measures those missing from the
log in large batches, then runs the DP on measured figures.

``hybrid_schedule`` predicts every stage (XGBoost or the roofline, scaled to the measured
figures) and measures only the stages that can still win. Unmeasured stages are priced
*optimistically*, ``margin`` below their prediction; each round runs the DP on the mix of
measured and optimistic figures and measures the unmeasured stages of the schedule it
picks, then recalibrates (or retrains) the predictor on the grown log. It stops when the
schedule it picks is measured throughout: that schedule then beats every other one whose
unmeasured stages are up to ``margin`` faster than predicted, and its estimate is a
measured one. ``max_rounds`` bounds the rounds.
"""
from __future__ import annotations

import logging
import statistics
from pathlib import Path
from typing import Sequence

from ..graph.opgraph import OpGraph
from ..schedule.ios import ios_schedule
from ..schedule.merge import merge_plan
from ..schedule.schedule import Schedule
from .pricing import WithoutMerges
from .measured import MeasuredCostModel, StageRef

__all__ = ["HybridCostModel", "measured_schedule", "hybrid_schedule", "logged_cost_model",
           "predictor_preset"]

logger = logging.getLogger(__name__)

MIN_RECORDS = 8  #: log records a learned predictor needs before it is (re)trained


class HybridCostModel:
    """Measured latency where the log has it, else the predictor's, scaled to measurements.

    Parameters
    ----------
    measured : MeasuredCostModel
        Gives stage signatures and logged figures (it measures nothing here).
    predictor : CostModel
        XGBoost, roofline, or any cost model.
    optimism : float
        Factor on the (scaled) prediction of a stage not in the log.
    predict_merges : bool
        Whether a merge the log has no figure of is predicted; False where the figures are
        of tuned kernels: a merged operator is a new kernel, not in the database, and runs
        TVM's default schedule (Inception V3's stages with 19 such kernels ran 6.7x as long
        as its tuned sequential build), so only a measured merge can be chosen.
    """

    def __init__(self, measured: MeasuredCostModel, predictor, optimism: float = 1.0,
                 predict_merges: bool = True):
        self.measured, self.predictor = measured, predictor
        self.scale, self.optimism = 1.0, optimism
        self.predict_merges = predict_merges
        self.raw: dict[str, float] = {}

    def __repr__(self) -> str:
        return f"HybridCostModel({self.predictor!r}, scale={self.scale:.3g})"

    def _price(self, graph, groups, merge: bool) -> float | None:
        value = self.measured.logged(graph, groups, merge)
        if value is not None:
            self.measured.counts["cached"] += 1
            return value
        signature = self.measured.signature(graph, groups, merge)
        if signature in self.measured.failed:
            return float("inf")
        if merge and not self.predict_merges:
            return None  # an untuned merged kernel: not without a figure of its own
        if signature not in self.raw:
            raw = (self.predictor.merged_latency(graph, [g[0] for g in groups]) if merge
                   else self.predictor.stage_latency(graph, groups))
            if raw is None:
                return None  # the predictor cannot merge these ops: neither can we
            self.raw[signature] = float(raw)
        self.measured.counts["predicted"] += 1
        return self.raw[signature] * self.scale * self.optimism

    def is_measured(self, graph, groups, merge: bool) -> bool:
        """Whether the log holds this stage (or it could not be measured)."""
        return self.measured.logged(graph, groups, merge) is not None or \
            self.measured.signature(graph, groups, merge) in self.measured.failed

    def calibrate(self) -> None:
        """Scale predictions by the median measured/predicted ratio of measured stages."""
        ratios = []
        for signature, raw in self.raw.items():
            record = self.measured.log.lookup_signature(signature, self.measured.target,
                                                        self.measured.device_key)
            if record is not None and raw > 0:
                ratios.append(record.median_us / raw)
        if ratios:
            self.scale = float(statistics.median(ratios))

    def stage_latency(self, graph: OpGraph, groups: Sequence[Sequence[int]]) -> float:
        """Measured or predicted latency of concurrent groups."""
        return self._price(graph, [sorted(g) for g in groups], False)

    def merged_latency(self, graph: OpGraph, ops: Sequence[int]) -> float | None:
        """Measured or predicted latency of the merged operator (None if it cannot merge)."""
        if merge_plan(graph, ops) is None:
            return None
        return self._price(graph, [[i] for i in sorted(ops)], True)


def predictor_preset(target, engine: str = "rprogram"):
    """The analytical preset that predicts stages for ``target``
    (:func:`~.devices.preset_for_target`; a ValueError names a target without one); for
    rPrograms on ``llvm`` (``engine`` ``rprogram`` or ``balanced``) the CPU vDevice's:
    ``cpu`` with one unit per worker of TVM's thread pool."""
    import dataclasses  # noqa: PLC0415

    from ..kernels.vdevice import pool_threads  # noqa: PLC0415
    from ..hardware import get_device, preset_for_target  # noqa: PLC0415

    preset = preset_for_target(target)
    if preset == "llvm" and engine in ("rprogram", "balanced"):
        return dataclasses.replace(get_device("cpu"), units=max(1, pool_threads()))
    return preset


def logged_cost_model(mod, log, predictor, target: str, kernels=None,
                      engine: str = "rprogram", **ios_options):
    """Stage figures of ``log`` (measured on ``target`` with ``kernels``) where it has them,
    ``predictor``'s scaled to them elsewhere: IOS (``ios_options``) prices every candidate
    stage of ``mod`` once, then the scale is set (:meth:`HybridCostModel.calibrate`). What
    the ``ios`` pipeline and the CPU benchmark schedule with, so that both pick the same
    stages and the judges' logged figures serve both. With ``kernels``, merges are taken only
    from logged figures (``predict_merges``), and, without a log (None or no such file),
    ``predictor`` prices no merge (:class:`~tvm_ios.cost.pricing.WithoutMerges`)."""
    if log is None or (isinstance(log, (str, Path)) and not Path(log).is_file()):
        return predictor if kernels is None else WithoutMerges(predictor)
    measured = MeasuredCostModel(mod, None, log, target=target, kernels=kernels, engine=engine)
    hybrid = HybridCostModel(measured, predictor, predict_merges=kernels is None)
    graph = next(iter(measured.extractions.values())).graph
    ios_schedule(graph, hybrid, **ios_options)
    hybrid.calibrate()
    logger.info("cost model from log %s: %s (%s)", log, hybrid, measured.counts)
    return hybrid


def measured_schedule(graph: OpGraph, measured: MeasuredCostModel, **ios_options) -> Schedule:
    """Measure every candidate stage missing from the log, then run IOS on measurements."""
    measured.prefetch(graph, measured.candidates(graph, **ios_options))
    schedule = ios_schedule(graph, measured, **ios_options)
    schedule.params["cost_model"] = f"measured({measured.target}, {measured.device_key})"
    return schedule


def _stage_refs(graph: OpGraph, schedule: Schedule) -> list[StageRef]:
    return [(tuple(tuple(sorted(graph.index[n] for n in g)) for g in stage.groups),
             stage.strategy == "merge") for stage in schedule.stages]


def _ready(predictor, measured: MeasuredCostModel, retrain: bool):
    """The predictor, (re)trained on the log when it learns and ``retrain`` is set; its
    roofline while a learned model has too few records to be fitted."""
    if hasattr(predictor, "fit") and (retrain or not getattr(predictor, "fitted", True)):
        records = measured.log.for_device(measured.target, measured.device_key)
        if len(records) >= MIN_RECORDS:
            return predictor.fit(records)
    if not getattr(predictor, "fitted", True):
        return predictor.roofline
    return predictor


def hybrid_schedule(graph: OpGraph, measured: MeasuredCostModel, predictor, *,
                    max_rounds: int = 40, margin: float = 0.0, retrain: bool = True,
                    **ios_options) -> Schedule:
    """Predict everything, measure only stages that can still win (module docstring).

    Parameters
    ----------
    graph : OpGraph
        A graph registered with ``measured``.
    measured : MeasuredCostModel
        Measures (and logs) the stages picked; its log's figures are used as they are.
    predictor : CostModel
        XGBoost (retrained on the log when ``retrain``; its roofline stands in until the
        log has :data:`MIN_RECORDS` records), the roofline, or any cost model.
    margin : float
        How much faster than predicted an unmeasured stage is assumed it may be. 0 (the
        default) measures what the DP picks until it picks only measured stages; on llvm,
        where a concurrent stage costs about the sum of its ops, any larger margin makes
        near-equal partitions look better unmeasured and measures most of them.
    """
    hybrid = HybridCostModel(measured, _ready(predictor, measured, retrain),
                             optimism=1.0 - margin)
    hybrid.calibrate()
    schedule, rounds = None, 0
    for rounds in range(1, max_rounds + 1):
        schedule = ios_schedule(graph, hybrid, **ios_options)
        todo = [r for r in _stage_refs(graph, schedule)
                if not hybrid.is_measured(graph, [list(g) for g in r[0]], r[1])]
        if not todo:
            break
        measured.prefetch(graph, todo)  # a stage that fails is priced infinite from now on
        hybrid.predictor = _ready(predictor, measured, retrain)
        if hybrid.predictor is predictor and hasattr(predictor, "fit") and retrain:
            hybrid.raw.clear()  # retrained on measurements: no scaling needed
            hybrid.scale = 1.0
        else:
            hybrid.calibrate()
    unmeasured = sum(not hybrid.is_measured(graph, [list(g) for g in r[0]], r[1])
                     for r in _stage_refs(graph, schedule))
    if unmeasured:
        logger.warning("hybrid: %d stage(s) of the schedule are still predicted after %d "
                       "rounds", unmeasured, rounds)
    schedule.params["cost_model"] = f"hybrid({predictor!r}, {measured.target})"
    schedule.stats.update({"hybrid_rounds": rounds, "hybrid_margin": margin,
                           "predicted_stages": unmeasured})
    return schedule
