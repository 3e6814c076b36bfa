"""The measured cost model: stage latencies timed on the target, kept in a log.

``MeasuredCostModel`` implements the :class:`~tvm_ios.cost.pricing.CostModel` protocol, so
``ios_schedule(graph, MeasuredCostModel(mod, measurer, log))`` works. A stage is looked up
in the log first, by its signature (:mod:`.signature`, no module built), then by its
workload key (:mod:`.stage_module`), then, with tuned kernels, by what its build compiles
(:mod:`.reuse`: a database that grew leaves the figures of stages whose kernels it did not
change); only stages missing there are measured, and each result is appended at once.
Because the IOS DP prices every ending of every state whatever the costs,
:meth:`MeasuredCostModel.candidates` can list all of them up front (a DP run with a
recording model) and :meth:`MeasuredCostModel.prefetch` measures them in large batches,
which is how :func:`tune` uses the builder's process pool well.
"""
from __future__ import annotations

import logging
import time
from typing import Callable, Sequence

from ..graph.extract import Extraction, extract
from ..graph.opgraph import OpGraph
from ..schedule.ios import ios_schedule
from ..schedule.merge import merge_plan
from .analytical import AnalyticalCostModel
from .log import LogRecord, MeasureLog
from .stage_timing import MeasureError, Measurer
from .reuse import build_digest, reuse
from .signature import StageSigner
from .stage_module import StageModule, stage_module, stage_tag

__all__ = ["MeasuredCostModel", "StageRef", "canonical_groups"]

logger = logging.getLogger(__name__)

#: A stage of a graph: (groups as tuples of node ids, merged?).
StageRef = tuple


def canonical_groups(groups: Sequence[Sequence[int]]) -> tuple:
    """A stage's groups in one order, whatever order they were listed in: each group's ids
    sorted, groups ordered by their bitset value (the order the IOS DP prices them in).
    Concurrent groups are a set; measuring a stage once means naming it one way."""
    ordered = (tuple(sorted(g)) for g in groups)
    return tuple(sorted(ordered, key=lambda g: sum(1 << i for i in g)))


class MeasuredCostModel:
    """Latencies (us) of stages measured with a :class:`~.measure.Measurer`, logged.

    Parameters
    ----------
    source : IRModule, Extraction or list of them
        The model(s) whose graphs will be priced (``main`` of a module is extracted).
    measurer : Measurer, optional
        Times stages missing from the log; without one such a stage raises
        :class:`~.measure.MeasureError`.
    log : MeasureLog, str or Path, optional
        The measurement log (default: in memory).
    target, device_key : str, optional
        Which log records count when there is no measurer (default ``llvm`` / the local
        device key a :class:`Measurer` would use).
    progress : callable, optional
        ``progress(counts)`` after each measurement, ``counts`` = measured/cached/predicted/
        reused (copied from a logged stage that built the same code, :mod:`.reuse`).
    engine : {"rprogram", "balanced", "sequential"}
        How a concurrent stage of several groups is measured: as the rProgram it will run
        (default; ``balanced``: as ``RProgramPass(balance=True)`` builds it), or its groups
        back to back.
    kernels : KernelDB, optional
        Tuned kernels every stage is built with (they are part of its identity in the log).
    """

    def __init__(self, source, measurer: Measurer | None = None, log=None,
                 target: str | None = None, device_key: str | None = None,
                 progress: Callable[[dict], None] | None = None, engine: str = "rprogram",
                 kernels=None):
        self.measurer = measurer
        self.engine, self.kernels = engine, kernels
        self.log = log if isinstance(log, MeasureLog) else MeasureLog(log)
        probe = measurer or Measurer(target or "llvm", device_key=device_key)
        self.target, self.device_key = probe.target_str, probe.device_key
        self._build_target = probe.target
        self.builds: dict[str, str] = {}  # stage key -> build digest (tuned kernels only)
        self.extractions: dict[str, Extraction] = {}
        self.signers: dict[str, StageSigner] = {}
        self.modules: dict[tuple, StageModule] = {}
        self.signatures: dict[tuple, str] = {}
        self._fingerprints: dict[int, tuple[OpGraph, str]] = {}
        self.failed: dict[str, str] = {}  # signature -> error
        self.counts = {"measured": 0, "cached": 0, "predicted": 0, "reused": 0}
        self.progress = progress
        for item in source if isinstance(source, (list, tuple)) else [source]:
            self.add(item)

    def __repr__(self) -> str:
        return f"MeasuredCostModel({self.target!r}, {self.device_key!r}, {self.log!r})"

    def add(self, source) -> OpGraph:
        """Register a model (IRModule or Extraction); returns its op graph."""
        ext = source if isinstance(source, Extraction) else extract(source["main"])
        self.extractions[ext.graph.fingerprint()] = ext
        self.signers[ext.graph.fingerprint()] = StageSigner(ext)
        return ext.graph

    # -- stages and keys ------------------------------------------------------------------
    def _signer(self, graph: OpGraph) -> tuple[str, StageSigner]:
        known = self._fingerprints.get(id(graph))  # the DP asks per stage: hash a graph once
        if known is None or known[0] is not graph:
            known = self._fingerprints[id(graph)] = (graph, graph.fingerprint())
        fingerprint = known[1]
        if fingerprint not in self.signers:
            raise ValueError(f"MeasuredCostModel: graph {graph.name!r} was not registered "
                             "(pass its module to the constructor or to add())")
        return fingerprint, self.signers[fingerprint]

    def signature(self, graph: OpGraph, groups: Sequence[Sequence[int]],
                  merge: bool = False) -> str:
        """The stage's signature (cheap: no module is built)."""
        fingerprint, signer = self._signer(graph)
        ident = (fingerprint, canonical_groups(groups), merge)
        if ident not in self.signatures:
            self.signatures[ident] = signer.signature(ident[1], merge) + \
                stage_tag(ident[1], merge, self.engine, self.kernels)
        return self.signatures[ident]

    def stage(self, graph: OpGraph, groups: Sequence[Sequence[int]],
              merge: bool = False) -> StageModule:
        """The (cached) standalone module of a stage of a registered graph."""
        fingerprint, signer = self._signer(graph)
        ident = (fingerprint, canonical_groups(groups), merge)
        if ident not in self.modules:
            self.modules[ident] = stage_module(self.extractions[fingerprint], ident[1], merge,
                                               signer, self.engine, self.kernels)
        return self.modules[ident]

    def lookup(self, stage: StageModule) -> float | None:
        """The logged median (us) of a stage module on this target and device, or None;
        with tuned kernels, also that of a logged stage that built the same code."""
        record = self.log.lookup_signature(stage.signature, self.target, self.device_key) \
            or self.log.lookup(stage.key, self.target, self.device_key)
        build = self.build(stage) if record is None else ""
        if build:
            record = reuse(self.log, stage, build, self.target, self.device_key)
            if record is not None:
                self._count("reused")
        return record.median_us if record is not None else None

    def build(self, stage: StageModule) -> str:
        """The digest of what the stage's build compiles (:mod:`.reuse`), with tuned kernels
        only ("" without, or where it cannot be prepared: then it is measured, and fails)."""
        if self.kernels is None:
            return ""
        if stage.key not in self.builds:
            try:
                self.builds[stage.key] = build_digest(stage.mod, self._build_target)
            except Exception as err:  # noqa: BLE001  (the measurement reports it)
                logger.debug("stage %s: no build digest (%s)", stage.key, err)
                self.builds[stage.key] = ""
        return self.builds[stage.key]

    def logged(self, graph: OpGraph, groups: Sequence[Sequence[int]],
               merge: bool = False) -> float | None:
        """The logged median (us) of a stage, or None.

        Found by signature, building nothing, unless the log holds records written before
        signatures existed: then a stage missing by signature is built and looked up by key.
        """
        record = self.log.lookup_signature(self.signature(graph, groups, merge), self.target,
                                           self.device_key)
        if record is not None:
            return record.median_us
        if (self.target, self.device_key) in self.log.unsigned:
            return self.lookup(self.stage(graph, groups, merge))
        return None

    # -- the CostModel protocol -----------------------------------------------------------
    def stage_latency(self, graph: OpGraph, groups: Sequence[Sequence[int]]) -> float:
        """Measured latency of the groups (as one rProgram, or back to back; see
        :mod:`.stage_module`)."""
        return self._latency(graph, [sorted(g) for g in groups], False)

    def merged_latency(self, graph: OpGraph, ops: Sequence[int]) -> float | None:
        """Measured latency of the merged operator, or None when the ops cannot merge."""
        if merge_plan(graph, ops) is None:
            return None
        return self._latency(graph, [[i] for i in sorted(ops)], True)

    def _latency(self, graph: OpGraph, groups, merge: bool) -> float:
        value = self.logged(graph, groups, merge)
        if value is None and self.signature(graph, groups, merge) not in self.failed:
            stage = self.stage(graph, groups, merge)
            value = self.lookup(stage)
            if value is None:
                self.prefetch_modules([stage])
                return self.lookup(stage) or float("inf")
        if value is None:
            return float("inf")
        self._count("cached")
        return value

    # -- batch measurement ----------------------------------------------------------------
    def candidates(self, graph: OpGraph, **ios_options) -> list[StageRef]:
        """Every stage the IOS DP prices for ``graph`` under ``ios_options``, once each."""
        recorder = _Recorder(graph)
        ios_schedule(graph, recorder, **ios_options)
        return list(recorder.seen)

    def prefetch(self, graph: OpGraph, stages: Sequence[StageRef]) -> int:
        """Measure the stages missing from the log, in batches; returns how many.

        Stages are told apart by signature first, so a module is built only for a stage
        whose signature the log does not hold (and once per signature).
        """
        todo: dict[str, StageRef] = {}
        for groups, merge in stages:
            signature = self.signature(graph, groups, merge)
            if signature not in todo and signature not in self.failed \
                    and self.logged(graph, groups, merge) is None:
                todo[signature] = (groups, merge)
        return self.prefetch_modules([self.stage(graph, groups, merge)
                                      for groups, merge in todo.values()])

    def prefetch_modules(self, stages: Sequence[StageModule]) -> int:
        """Measure the stage modules missing from the log (each key once)."""
        todo: dict[str, StageModule] = {}
        for stage in stages:
            if stage.key not in todo and stage.signature not in self.failed \
                    and self.lookup(stage) is None:
                todo[stage.key] = stage
        if not todo:
            return 0
        if self.measurer is None:
            raise MeasureError(f"{len(todo)} stage(s) are not in the log {self.log.path} for "
                               f"{self.target} on {self.device_key} and no measurer is set")
        results = self.measurer.measure(list(todo.values()), on_result=self._record)
        errors = [r for r in results if r.error]
        if errors and len(errors) == len(results) and \
                not self.log.for_device(self.target, self.device_key):
            # nothing ever measured here: the target or runner is broken, not one stage
            raise MeasureError(f"no stage could be measured; first error: {errors[0].error}")
        return len(results) - len(errors)

    def _record(self, stage: StageModule, result) -> None:
        if result.error:
            logger.warning("stage %s not measured (priced infinite): %s", stage.key,
                           result.error)
            self.failed[stage.signature] = result.error
            return
        self.log.append(LogRecord(stage.key, self.target, self.device_key, result.run_secs,
                                  result.median_us, time.time(), stage=stage.description,
                                  signature=stage.signature, build=self.build(stage)))
        self._count("measured")

    def _count(self, what: str) -> None:
        self.counts[what] += 1
        if self.progress is not None:
            self.progress(dict(self.counts))


class _Recorder:
    """A cost model that notes every stage the DP prices and answers with the roofline."""

    def __init__(self, graph: OpGraph):
        self.seen: dict[StageRef, None] = {}
        self.roofline = AnalyticalCostModel("llvm")

    def stage_latency(self, graph, groups):
        self.seen[(tuple(tuple(sorted(g)) for g in groups), False)] = None
        return self.roofline.stage_latency(graph, groups)

    def merged_latency(self, graph, ops):
        self.seen[(tuple((i,) for i in sorted(ops)), True)] = None
        return self.roofline.merged_latency(graph, ops)
