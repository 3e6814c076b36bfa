"""The tvm-ios compiler flow as one Relax pipeline: group, split, order, schedule, emit, build.

``tvm_ios.pipeline(...)`` returns a module pass usable wherever TVM takes a Relax pipeline::

    ex = tvm.compile(mod, "llvm", relax_pipeline="ios")            # the target's default
    ex = tvm.compile(mod, "nvidia/nvidia-h100", relax_pipeline="ios")
    ex = tvm.compile(mod, "llvm", relax_pipeline=tvm_ios.pipeline(engine="stages", r=2, s=4))

It runs, under the target ``tvm.compile`` enters, these steps (each a small function below,
so adding one is one line in :meth:`Pipeline.steps`):

1. :func:`graphturbo_passes` (``graphturbo=`` a hardware preset): ``GroupSubgraphs`` →
   ``SplitInstances`` → ``OrderInstances``, instances inline so that the next steps
   schedule and emit their ops;
2. :func:`schedule_pass`: ``IOSPass`` with the target's cost model
   (:func:`cost_model_for`; the measured log's figures with ``log=``);
3. :func:`engine_pass` (``engine="rprogram"``): ``RProgramPass``, the CPU vDevice on
   ``llvm`` and persistent kernels on CUDA; ``engine="stages"`` keeps TVM's kernels;
4. :func:`kernel_passes` (``kernels=`` a tuning database): the tuned kernels;
5. the report (passes, schedule, rPrograms, inputs, vEUs) recorded in the library as the
   function :data:`~tvm_ios.runtime.library.METADATA_FUNC`, then TVM's default build for
   the target.

The named variants registered on ``import tvm`` are in :data:`VARIANTS`.
"""
from __future__ import annotations

import dataclasses
import logging

from tvm import relax

from . import _tvm
from ._autoload import NAMES
from .passes.apply_schedule import schedule_of
from .runtime.library import attach_metadata, function_inputs

__all__ = ["pipeline", "Pipeline", "VARIANTS", "ENGINES", "cost_model_for", "graphturbo_hw",
           "graphturbo_passes", "schedule_pass", "engine_pass", "kernel_passes",
           "default_build"]

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
    kernels : str or Path, optional
        A meta_schedule tuning database directory (:func:`kernel_passes`).
    r, s : int
        IOS pruning: most ops per group, most groups per stage.
    **options
        ``strategy`` (default ``parallel`` for rprogram, ``both`` for stages), ``policy``
        (``ios`` or ``wavefront``), ``device`` (a cost preset overriding the target's),
        ``func_name``, ``metadata`` (extra fields for the library's record).
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

    def __post_init__(self):
        if self.engine not in ENGINES:
            raise ValueError(f"tvm_ios.pipeline: engine must be one of {ENGINES}, got "
                             f"{self.engine!r}")
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
        self.report: dict | None = None

    def transform_module(self, mod, ctx):  # noqa: D102  (tvm.transform protocol)
        target = _tvm.current_target() or _tvm.make_target("llvm")
        mod, self.report = self.rewrite(mod, target)
        mod = attach_metadata(mod, self.report)
        return default_build(target)(mod)

    def steps(self, target) -> list:
        """The steps in order: each ``make(mod)`` returns the pass to run on ``mod`` as it
        stands then, or None to skip the step."""
        opts = self.options
        steps = []
        if opts.graphturbo is not None:
            hw = graphturbo_hw(target) if opts.graphturbo == "auto" else opts.graphturbo
            steps += [lambda _m, p=p: p for p in graphturbo_passes(hw)]
        steps.append(lambda m: schedule_pass(m, target, opts))
        steps.append(lambda _m: engine_pass(target, opts))
        steps += [lambda _m, p=p: p for p in kernel_passes(opts.kernels, target)]
        return steps

    def rewrite(self, mod, target) -> tuple:
        """Run the tvm-ios steps on ``mod`` for ``target``; returns ``(mod, report)``."""
        opts = self.options
        report = {"target": _tvm.target_to_dict(target), "target_kind": target.kind.name,
                  "engine": opts.engine, "graphturbo": opts.graphturbo, "r": opts.r,
                  "s": opts.s, "strategy": opts.strategy, "passes": [], "rprogram_list": [],
                  "inputs": function_inputs(mod, opts.func_name), **(opts.metadata or {})}
        for make in self.steps(target):
            step = make(mod)
            if step is not None:
                mod = step(mod)
                _record_step(report, step)
        _record_result(report, mod, opts.func_name)
        logger.info("tvm_ios.pipeline: %s; %d stages, %d rPrograms",
                    " -> ".join(report["passes"]), report["stages"], report["rprograms"])
        return mod, report


def _record_step(report: dict, step) -> None:
    """What ``step`` did, into ``report``: its name, IOSPass's cost model, the rPrograms."""
    name = str(step.info.name).replace("tvm_ios.", "")
    report["passes"].append(name)
    if name == "IOSPass":
        report["cost_model"] = repr(step.cost_model)
    if name == "RProgramPass":
        report["rprogram_list"] += [{"name": p.name, "num_veus": p.num_veus,
                                     "tasks": p.num_tasks} for p in step.programs]


def _record_result(report: dict, mod, func_name: str) -> None:
    """The schedule recorded on ``mod``, the counts, and the vEUs a CPU build needs."""
    schedule = schedule_of(mod, func_name)
    programs = report["rprogram_list"]
    cpu = report["target_kind"] == "llvm"
    report.update(schedule=schedule.to_dict() if schedule else None,
                  stages=len(schedule.stages) if schedule else 0, rprograms=len(programs),
                  num_veus=max((p["num_veus"] for p in programs), default=0) if cpu else 0)
    report["passes"].append(f"default build ({report['target_kind']})")


def graphturbo_hw(target) -> str:
    """The GraphTurbo preset of ``target``: its GPU for CUDA; ``dsa`` elsewhere until a CPU
    preset exists."""
    if target.kind.name == "cuda":
        from .kernels.vdevice import target_vdevice  # noqa: PLC0415

        return target_vdevice(target).name
    return "dsa"


def graphturbo_passes(hw) -> list:
    """GraphTurbo's grouping, splitting and ordering of instances for ``hw``.

    Instances stay inline (``outline=False``): their ops are units the IOS step schedules
    (instances of one layer can share a stage) and the engine emits."""
    from .passes.group_subgraphs import GroupSubgraphs  # noqa: PLC0415
    from .passes.order_instances import OrderInstances  # noqa: PLC0415
    from .passes.split_instances import SplitInstances  # noqa: PLC0415

    return [GroupSubgraphs(hw), SplitInstances(outline=False), OrderInstances()]


def cost_model_for(target, engine: str = "rprogram", device: str | None = None, mod=None,
                   log=None, **ios_options):
    """The cost model the pipeline schedules with on ``target``.

    ``device`` names an analytical preset; by default the target's: the CPU vDevice's
    (``cpu``, one unit per pool worker) for rPrograms on ``llvm``, ``llvm`` (kernels one
    after another) for stages on ``llvm``, the GPU's (``h100``, ``a100``) on CUDA. With
    ``log`` (and the module ``mod`` to be scheduled), logged stages are priced by their
    measurements and the rest by that preset, scaled to the measured ones.
    """
    from .cost.analytical import AnalyticalCostModel  # noqa: PLC0415

    analytical = AnalyticalCostModel(device or _preset(target, engine))
    if log is None:
        return analytical
    from .cost.hybrid import HybridCostModel  # noqa: PLC0415
    from .cost.measured import MeasuredCostModel  # noqa: PLC0415
    from .schedule.ios import ios_schedule  # noqa: PLC0415

    measured = MeasuredCostModel(mod, None, log, target=str(target))
    hybrid = HybridCostModel(measured, analytical)
    graph = next(iter(measured.extractions.values())).graph
    ios_schedule(graph, hybrid, **ios_options)  # prices every candidate once
    hybrid.calibrate()
    logger.info("cost model from log %s: %s (%s)", getattr(measured.log, "path", log),
                hybrid, measured.counts)
    return hybrid


def _preset(target, engine: str):
    from .cost.devices import get_device  # noqa: PLC0415

    kind = target.kind.name
    if kind == "cuda":
        from .kernels.vdevice import target_vdevice  # noqa: PLC0415

        return target_vdevice(target).name
    if kind == "llvm" and engine == "stages":
        return "llvm"
    if kind == "llvm":
        from .kernels.vdevice import pool_threads  # noqa: PLC0415

        return dataclasses.replace(get_device("cpu"), units=max(1, pool_threads()))
    raise ValueError(f"tvm_ios.pipeline: no cost model for target kind {kind!r} (llvm and "
                     "cuda are supported); pass device= to name an analytical preset")


def schedule_pass(mod, target, opts: Options):
    """``IOSPass`` with the cost model of :func:`cost_model_for` and ``opts``' r, s; or
    ``ApplySchedule`` of ``opts.schedule`` (falling back to the sequential schedule)."""
    if opts.schedule is not None:
        from .passes.apply_schedule import ApplySchedule  # noqa: PLC0415

        return ApplySchedule(opts.schedule, func_name=opts.func_name, fallback=True)
    from .passes.ios_pass import IOSPass  # noqa: PLC0415

    ios = dict(max_group_size=opts.r, max_num_groups=opts.s, strategy=opts.strategy)
    cost = cost_model_for(target, opts.engine, opts.device, mod, opts.log, **ios)
    bound = {} if opts.max_block_bound is None else {"max_block_bound": opts.max_block_bound}
    return IOSPass(cost, func_name=opts.func_name, **ios, **bound)


def engine_pass(target, opts: Options):
    """``RProgramPass`` for ``target`` with ``engine="rprogram"``; None for stages."""
    if opts.engine != "rprogram":
        return None
    from .passes.rprogram_pass import RProgramPass  # noqa: PLC0415

    return RProgramPass(opts.policy, func_name=opts.func_name, target=target)


def kernel_passes(kernels, target) -> list:
    """Passes that put the tuned kernels of ``kernels`` (a meta_schedule database
    directory) into the build; none without one.

    The hook of issue #11 (tuned kernels): filled there, it is the one place where
    ``kernels=`` enters the pipeline.
    """
    if kernels is None:
        return []
    raise ValueError(f"tvm_ios.pipeline: kernels={str(kernels)!r}: applying a kernel tuning "
                     "database is not available in this version of tvm-ios")


def default_build(target):
    """TVM's default Relax build for ``target``: the target's own pipeline (with dlight
    schedules) on GPUs, the generic one elsewhere (what ``tvm.compile`` picks)."""
    if "gpu" in target.keys:
        return relax.get_default_pipeline(target)
    return relax.get_pipeline("default")
