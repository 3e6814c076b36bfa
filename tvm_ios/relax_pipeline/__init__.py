"""The tvm-ios compiler flow as one Relax pipeline: group, split, order, schedule, emit, build.

``tvm_ios.pipeline(...)`` returns a module pass usable wherever TVM takes a Relax pipeline::

    ex = tvm.compile(mod, "llvm", relax_pipeline="ios")            # the target's default
    ex = tvm.compile(mod, "nvidia/nvidia-h100", relax_pipeline="ios")
    ex = tvm.compile(mod, "llvm", relax_pipeline=tvm_ios.pipeline(engine="stages", r=2, s=4))

It runs, under the target ``tvm.compile`` enters, these steps (each a small function of
:mod:`tvm_ios.relax_pipeline.steps`, so adding one is one line in :meth:`Pipeline.steps`):

0. ``dedup_for_kernels`` (``dedup=True``, the default): ``DedupOps``, an operator call that
   repeats an earlier one (NASNet-A's ReLUs of one input per branch) computed once (with a
   kernel database lacking the kernels it then fuses: not); then
   ``trim_for_kernels`` (``trim=True``, the default): ``TrimDeadTaps``, the kernel taps of a
   convolution that read only zero padding cut from its (bound) weights, so they are
   neither read nor multiplied (with a kernel database lacking the trimmed kernels: not);
   then ``layout_for_kernels``: with a database tuned in a blocked layout (``NCHW16c``),
   ``BlockedLayout`` puts the convolutions in it, as the database's kernels expect;
1. ``graphturbo_passes`` (``graphturbo=`` a hardware preset): ``GroupSubgraphs`` →
   ``SplitInstances`` → ``OrderInstances``, instances inline so that the next steps
   schedule and emit their ops;
2. ``schedule_pass`` (after GraphTurbo: within its order of instances, so that what runs is
   the order its plan sized): ``IOSPass`` with the target's cost model (``cost_model_for``; the
   measured log's figures with ``log=`` or the kernel database's stage log); for the
   rProgram engine ``IOSSchedule``: IOS without merges, a concurrent stage priced slower
   than its ops in turn made sequential; on ``llvm`` then ``ModelJudge``
   (``model_judge_pass``): the concurrent stages kept, judged again in the whole model
   (candidates built and timed with ``measure=``, else the log's figures);
3. ``engine_pass`` (``engine="rprogram"``): ``RProgramPass``, the CPU vDevice on
   ``llvm`` and persistent kernels on CUDA; ``engine="stages"`` keeps TVM's kernels;
4. ``kernel_passes`` (``kernels=`` a kernel database of ``tvm-ios tune-kernels``): the
   tuned kernels, also inlined into the CPU rPrograms;
5. the report (passes, schedule, rPrograms, inputs, vEUs) recorded in the library as the
   function :data:`~tvm_ios.runtime.library.METADATA_FUNC`, then TVM's default build for
   the target.

The named variants registered on ``import tvm`` are in :data:`VARIANTS`.
"""
from __future__ import annotations

import dataclasses
import logging

from .. import _tvm
from .._autoload import NAMES
from ..passes.apply_schedule import schedule_of
from .steps import (cost_model_for, default_build, engine_pass, engine_veus, fallback_judges,
                    graphturbo_hw, graphturbo_passes, graphturbo_takes, kernel_passes,
                    model_judge_pass, open_kernel_db, schedule_pass)
from ..passes.blocked_layout import layout_for_kernels
from ..passes.dedup_ops import dedup_for_kernels
from ..passes.trim_dead_taps import trim_for_kernels
from ..runtime.library import attach_metadata, function_inputs

__all__ = ["pipeline", "Pipeline", "VARIANTS", "ENGINES", "cost_model_for"]

logger = logging.getLogger(__name__)

ENGINES = ("rprogram", "stages")

#: Names registered with ``relax.register_pipeline`` -> keyword arguments of :func:`pipeline`
#: (kept in :mod:`tvm_ios._autoload`, which registers them without importing anything).
VARIANTS = NAMES


def pipeline(engine: str = "rprogram", graphturbo=None, log=None, kernels=None, r: int = 3,
             s: int = 8, **options):
    """The tvm-ios Relax pipeline (a module pass; see the module docstring).

    Parameters
    ----------
    engine : {"rprogram", "stages"}
        rprogram: each concurrent stage runs as one rProgram kernel (CPU vDevice on
        ``llvm``, a persistent kernel on CUDA); stages: IOS merges and stage order only.
    graphturbo : str, optional
        GraphTurbo hardware preset (``dsa``, ``h100``, ``a100``) or ``"auto"`` (the
        target's, :func:`graphturbo_hw`); None skips GraphTurbo.
    log : str, Path or MeasureLog, optional
        A measured stage-cost log (:mod:`tvm_ios.cost.measured`): logged stages are priced
        by their measurements, the rest by the target's analytical model scaled to them.
    kernels : KernelDB, str or Path, optional
        A kernel database of ``tvm-ios tune-kernels`` (or its directory; one tuned for
        another CPU is refused with a warning): its tuned kernels go into the build and the
        CPU rPrograms, and its stage log (if any) prices the stages.
    r, s : int
        IOS pruning: most ops per group, most groups per stage.
    **options
        ``strategy`` (default ``parallel`` for rprogram, ``both`` for stages), ``policy``
        (``ios`` or ``wavefront``), ``device`` (a cost preset overriding the target's),
        ``func_name``, ``metadata`` (extra fields for the library's record), ``measure``
        (on ``llvm``, rProgram engine: True or a ``Measurer`` times both sides of each
        concurrent stage here, into the stage log of ``log`` or ``kernels``, before the
        stage is kept, then builds and times here the whole model with the best of the kept
        stages, a few ways, and keeps the fastest; without it logged figures decide where
        there are some), ``cover`` (with ``kernels``: trials for each convolution or matmul
        kernel of the build the database lacks, tuned into it before the build; default 0:
        built untuned, with a warning naming them), ``dedup`` (default True: compute once
        each operator call that repeats an earlier one, first), ``trim`` (default True: cut
        the taps of each convolution with bound weights that read only zero padding first).
    """
    return Pipeline(engine=engine, graphturbo=graphturbo, log=log, kernels=kernels, r=r, s=s,
                    **options)


@dataclasses.dataclass
class Options:
    """What :func:`pipeline` was asked for (validated)."""

    engine: str = "rprogram"
    graphturbo: object = None
    log: object = None
    kernels: object = None
    r: int = 3
    s: int = 8
    strategy: str | None = None
    policy: str = "ios"
    device: str | None = None
    func_name: str = "main"
    metadata: dict | None = None
    schedule: object = None
    max_block_bound: float | None = None
    measure: object = False
    cover: int = 0
    dedup: bool = True
    trim: bool = True

    def __post_init__(self):
        if self.engine not in ENGINES:
            raise ValueError(f"tvm_ios.pipeline: engine must be one of {ENGINES}, got "
                             f"{self.engine!r}")
        if self.cover < 0:
            raise ValueError(f"tvm_ios.pipeline: cover must be >= 0 trials, got {self.cover}")
        if self.r < 1 or self.s < 1:
            raise ValueError(f"tvm_ios.pipeline: r and s must be >= 1, got r={self.r}, "
                             f"s={self.s}")
        if self.strategy is None:
            self.strategy = "parallel" if self.engine == "rprogram" else "both"


@_tvm.module_pass(opt_level=0, name="tvm_ios.Pipeline")
class Pipeline:
    """The tvm-ios pipeline; build it with :func:`pipeline`. After a run, :attr:`report`
    holds what it did (the dict the library records)."""

    def __init__(self, **options):
        self.options = Options(**options)
        self.kernels = open_kernel_db(self.options.kernels)  # a bad database: an error now
        self.report: dict | None = None
        self.cost_model = None  # the schedule step's, once it ran

    def transform_module(self, mod, ctx):
        target = _tvm.current_target() or _tvm.make_target("llvm")
        mod, self.report = self.rewrite(mod, target)
        mod = attach_metadata(mod, self.report)
        return default_build(target)(mod)

    def steps(self, target) -> list:
        """The steps in order: each ``make(mod)`` returns the pass to run on ``mod`` as it
        stands then, or None to skip the step."""
        opts, kernels = self.options, self.kernels
        steps = [lambda m: dedup_for_kernels(m, kernels, opts.cover)] if opts.dedup else []
        if opts.trim:
            steps.append(lambda m: trim_for_kernels(m, kernels, opts.cover))
        steps.append(lambda _m: layout_for_kernels(kernels))
        if opts.graphturbo is not None:
            hw = graphturbo_hw(target) if opts.graphturbo == "auto" else opts.graphturbo
            taken: list = []  # (asked once, on the module as GraphTurbo would get it)

            def when_taken(mod, p):
                if not taken:
                    taken.append(graphturbo_takes(mod))
                return p if taken[0] else None
            steps += [lambda m, p=p: when_taken(m, p) for p in graphturbo_passes(hw)]

        decisions: list = []  # the stage judges', judged again in the whole model

        def schedule(mod):  # priced on the module as it stands after GraphTurbo
            self.cost_model = None if opts.schedule is not None else cost_model_for(
                target, opts.engine, opts.device, mod, opts.log, kernels,
                max_group_size=opts.r, max_num_groups=opts.s, strategy=opts.strategy)
            return schedule_pass(opts, self.cost_model,
                                 fallback_judges(target, opts, mod, kernels), decisions,
                                 engine_veus(target))
        lowering = [lambda _m: engine_pass(target, opts, kernels)]
        lowering += [lambda _m, p=p: p for p in kernel_passes(kernels, target, opts.cover)]

        def lower(mod):  # a candidate of the whole-model judge, built as the model will be
            return _tvm.compile_module(_run(lowering, mod), target, default_build(target))
        steps.append(schedule)
        steps.append(lambda _m: model_judge_pass(target, opts, kernels, decisions, lower))
        return steps + lowering

    def before_kernels(self, mod, target):
        """``mod`` through every step but the kernel database's: the module whose kernels
        the build fuses and looks up in the database (what ``tvm-ios tune-kernels`` tunes
        for the scheduled builds)."""
        steps = self.steps(target)
        return _run(steps[:len(steps) - len(kernel_passes(self.kernels, target))], mod)

    def rewrite(self, mod, target) -> tuple:
        """Run the tvm-ios steps on ``mod`` for ``target``; returns ``(mod, report)``."""
        opts = self.options
        report = {"target": _tvm.target_to_dict(target), "target_kind": target.kind.name,
                  "engine": opts.engine, "graphturbo": _plain(opts.graphturbo), "r": opts.r,
                  "s": opts.s, "strategy": opts.strategy, "passes": [], "rprogram_list": [],
                  "kernels": str(self.kernels.path) if self.kernels is not None else None,
                  "inputs": function_inputs(mod, opts.func_name), **(opts.metadata or {})}
        mod = _run(self.steps(target), mod, lambda step: _record_step(report, step))
        report["cost_model"] = repr(self.cost_model) if self.cost_model else None
        _record_result(report, mod, opts.func_name)
        logger.info("tvm_ios.pipeline: %s; %d stages, %d rPrograms",
                    " -> ".join(report["passes"]), report["stages"], report["rprograms"])
        return mod, report


def _plain(graphturbo):
    """``graphturbo`` for the report: a preset's name, or a HardwareSpec as its dict."""
    return graphturbo.to_dict() if hasattr(graphturbo, "to_dict") else graphturbo


def _run(steps, mod, on_step=None):
    """``mod`` through ``steps`` (each ``make(mod)`` gives the pass to run, or None);
    ``on_step(step)`` after each pass run."""
    for make in steps:
        step = make(mod)
        if step is not None:
            mod = step(mod)
            if on_step is not None:
                on_step(step)
    return mod


def _record_step(report: dict, step) -> None:
    """What ``step`` did, into ``report``: its name, the rPrograms, whether kernels were
    tuned (counted once the module is final)."""
    name = str(step.info.name).replace("tvm_ios.", "")
    report["passes"].append(name)
    if name == "RProgramPass":
        report["rprogram_list"] += [{"name": p.name, "num_veus": p.num_veus,
                                     "tasks": p.num_tasks} for p in step.programs]
    if name == "ApplyKernels":
        report["tuned_kernels"] = "tuned"
    if name == "TrimDeadTaps":
        report["trimmed_convs"] = len(step.trimmed)
    if name == "DedupOps":
        report["deduplicated_calls"] = step.total


def _record_result(report: dict, mod, func_name: str) -> None:
    """The schedule recorded on ``mod``, the counts, and the vEUs a CPU build needs."""
    schedule = schedule_of(mod, func_name)
    programs = report["rprogram_list"]
    cpu = report["target_kind"] == "llvm"
    report.update(schedule=schedule.to_dict() if schedule else None,
                  stages=len(schedule.stages) if schedule else 0, rprograms=len(programs),
                  num_veus=max((p["num_veus"] for p in programs), default=0) if cpu else 0)
    if report.get("tuned_kernels"):
        from ..kernels.tuned_build import tuned_functions

        tuned, total = tuned_functions(mod)
        report["tuned_kernels"] = {"tuned": tuned, "total": total}
    report["passes"].append(f"default build ({report['target_kind']})")
