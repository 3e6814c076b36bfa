"""The steps of the tvm-ios Relax pipeline (:mod:`tvm_ios.relax_pipeline`), one function each.

Each returns the pass(es) of its step for a target and the pipeline's options, so that each
can be tested alone and a new step is one function and one line in ``Pipeline.steps``:

* :func:`graphturbo_passes`: GraphTurbo's grouping, splitting and ordering;
* :func:`cost_model_for`: the target's cost model (a measured log's figures where it has them);
* :func:`schedule_pass`: IOS with it (for rPrograms: without merges, and never a concurrent
  stage priced slower than its ops in turn);
* :func:`engine_pass`: the rProgram engine for the target;
* :func:`kernel_passes`: a kernel database's tuned kernels;
* :func:`default_build`: TVM's own build for the target.
"""
from __future__ import annotations

import logging
from pathlib import Path

from tvm import relax

from .. import _tvm

__all__ = ["graphturbo_hw", "graphturbo_passes", "graphturbo_takes", "cost_model_for", "schedule_pass",
           "rprogram_schedule_pass", "engine_veus", "fallback_judges", "model_judge_pass",
           "engine_pass", "kernel_passes", "open_kernel_db", "default_build"]

logger = logging.getLogger(__name__)


def graphturbo_hw(target) -> str:
    """The GraphTurbo preset of ``target``: its GPU for CUDA, ``cpu`` (a core's L2 as the local
    buffer) for ``llvm``, the ``dsa`` of the paper elsewhere."""
    if target.kind.name == "cuda":
        from ..kernels.vdevice import target_vdevice

        return target_vdevice(target).name
    return "cpu" if target.kind.name == "llvm" else "dsa"


def graphturbo_takes(mod, func_name: str = "main") -> bool:
    """Whether GraphTurbo's passes take ``mod``: a function with one tensor output. A model
    returning several outputs (a tuple) is scheduled by IOS alone, with a warning: GraphTurbo's
    layer graph makes the returned tuple a layer, and its instance emitter cannot rebuild it
    (the fuzzer's reproducer: tests/testing/test_fuzz.py)."""
    func = mod[func_name]
    if isinstance(func.body.body.ty, relax.TupleType):
        logger.warning("GraphTurbo skipped for %s: it returns several outputs (a tuple), "
                       "which GraphTurbo's passes do not take yet; IOS schedules it alone",
                       func_name)
        return False
    return True


def graphturbo_passes(hw) -> list:
    """GraphTurbo's grouping, splitting and ordering of instances for ``hw``.

    Instances stay inline (``outline=False``): their ops are units the IOS step schedules
    within GraphTurbo's order of instances (the branches of one instance side by side, one
    instance after another: :mod:`tvm_ios.passes.instance_order`) and the engine emits."""
    from ..passes.group_subgraphs import GroupSubgraphs
    from ..passes.order_instances import OrderInstances
    from ..passes.split_instances import SplitInstances

    return [GroupSubgraphs(hw), SplitInstances(outline=False), OrderInstances()]


def cost_model_for(target, engine: str = "rprogram", device: str | None = None, mod=None,
                   log=None, kernels=None, **ios_options):
    """The cost model the pipeline schedules with on ``target``.

    ``device`` names an analytical preset; by default the target's: the CPU vDevice's
    (``cpu``, one unit per pool worker) for rPrograms on ``llvm``, ``llvm`` (kernels one
    after another) for stages on ``llvm``, the GPU's (``h100``, ``a100``) on CUDA. With
    ``log`` (and the module ``mod`` to be scheduled), or a kernel database ``kernels`` that
    keeps a stage log (``stages.jsonl``, measured with its kernels), logged stages are
    priced by their measurements and the rest by that preset, scaled to the measured ones.
    With ``kernels``, a merge is priced only where the log has its figure
    (:func:`~tvm_ios.cost.hybrid.logged_cost_model`).
    """
    from ..cost.analytical import AnalyticalCostModel
    from ..cost.hybrid import logged_cost_model, predictor_preset

    analytical = AnalyticalCostModel(device or predictor_preset(target, engine))
    if log is None and kernels is not None:
        log = kernels.stage_log
    logged_target = str(kernels.target) if kernels is not None else str(target)
    return logged_cost_model(mod, log, analytical, logged_target, kernels,
                             "rprogram" if engine == "rprogram" else "sequential",
                             **ios_options)


def fallback_judges(target, opts, mod, kernels=None):
    """The measured fallback decision of the rProgram engine on ``llvm``
    (:func:`~tvm_ios.cost.stage_judges.stage_judges`): both sides of each concurrent stage from
    the stage log of ``opts.log`` or ``kernels``, measured here when ``opts.measure`` (True
    or a ``Measurer``); None elsewhere, with one pool worker (no stage to judge), or without a
    log and without measuring."""
    if opts.engine != "rprogram" or opts.policy != "ios" or target.kind.name != "llvm" \
            or engine_veus(target) < 2:
        return None
    from ..cost.stage_judges import stage_judges

    log = _judges_log(opts, kernels)
    logged = log is not None and (not isinstance(log, (str, Path)) or Path(log).is_file())
    if not opts.measure and not logged:  # (a MeasureLog object counts as a log)
        return None
    measurer = opts.measure
    if measurer is True:
        from ..cost.stage_judges import judge_measurer

        measurer = judge_measurer(kernels.target if kernels is not None else target)
    logged_target = str(kernels.target) if kernels is not None else str(target)
    return stage_judges(mod, log, measurer or None, kernels, logged_target)


def _judges_log(opts, kernels):
    """The stage log the judges read and append to: ``opts.log``, else the kernel
    database's (None without either)."""
    if opts.log is not None:
        return opts.log
    return kernels.stage_log if kernels is not None else None


def schedule_pass(opts, cost_model, judges=None, decisions: list | None = None,
                  num_veus: int | None = None):
    """The schedule step: ``ApplySchedule`` of ``opts.schedule`` (a stale one falls back to
    the sequential schedule); for the rProgram engine's ios policy, :func:`rprogram_schedule_pass`
    (with ``judges``, :func:`fallback_judges`; its decisions appended to ``decisions``; for
    rPrograms of ``num_veus`` vEUs, :func:`engine_veus`); else ``IOSPass`` with
    ``cost_model`` and ``opts``' r, s and strategy."""
    if opts.schedule is not None:
        from ..passes.apply_schedule import ApplySchedule

        return ApplySchedule(opts.schedule, func_name=opts.func_name, fallback=True)
    ios = dict(max_group_size=opts.r, max_num_groups=opts.s)
    if opts.max_block_bound is not None:
        ios["max_block_bound"] = opts.max_block_bound
    if opts.engine == "rprogram" and opts.policy == "ios":
        return rprogram_schedule_pass(cost_model, opts.func_name, judges, decisions,
                                      num_veus=num_veus, **ios)
    from ..passes.ios_pass import IOSPass

    return IOSPass(cost_model, func_name=opts.func_name, strategy=opts.strategy, **ios)


def rprogram_schedule_pass(cost_model, func_name: str = "main", judges=None,
                           decisions: list | None = None, num_veus: int | None = None,
                           **ios_options):
    """A pass recording the schedule the rPrograms follow
    (:func:`~tvm_ios.cost.stage_judges.rprogram_schedule`): IOS without merges, then every
    concurrent stage ``cost_model`` prices slower than its ops one after another made
    sequential (an rProgram's vEUs run one-core kernels, so a stage of large ops can lose
    what its concurrency gains). The bindings are left in place: ``RProgramPass`` emits
    them from the schedule. With ``num_veus`` below 2, the sequential schedule."""
    from ..cost.stage_judges import rprogram_schedule

    @_tvm.module_pass(opt_level=0, name="tvm_ios.IOSSchedule")
    def _schedule(mod, _ctx):
        return rprogram_schedule(mod, cost_model, func_name, decisions, judges=judges,
                                 num_veus=num_veus, **ios_options)

    return _schedule


def engine_veus(target) -> int | None:
    """The vEUs of the rProgram engine's CPU vDevice on ``llvm``: one per worker of TVM's
    thread pool (one worker: no rProgram, the sequential schedule); None elsewhere (a GPU's
    vEUs are its persistent blocks, more than any stage has groups)."""
    if target.kind.name != "llvm":
        return None
    from ..kernels.vdevice import pool_threads

    return pool_threads()


def model_judge_pass(target, opts, kernels, decisions: list, lower):
    """The whole-model judge of the rProgram engine on ``llvm``
    (:func:`~tvm_ios.cost.model_judge.judge_module`): the concurrent stages the stage judges
    kept (``decisions``), judged again in the whole model, each candidate built with
    ``lower(mod) -> executable`` when ``opts.measure``, from logged figures otherwise; None
    where there is nothing to judge (another engine, policy or target, a given schedule,
    one pool worker, no stage log and no measuring)."""
    if opts.engine != "rprogram" or opts.policy != "ios" or target.kind.name != "llvm" \
            or opts.schedule is not None or engine_veus(target) < 2:
        return None
    log = _judges_log(opts, kernels)
    # whole models are timed here: not for a measurer of RPC servers
    here = bool(opts.measure) and getattr(opts.measure, "rpc", None) is None
    if log is None and not here:
        return None
    from ..cost.model_judge import judge_module

    @_tvm.module_pass(opt_level=0, name="tvm_ios.ModelJudge")
    def _judge(mod, _ctx):
        judged, verdict, _ = judge_module(
            mod, decisions, lower if here else None, log=log,
            target=kernels.target if kernels is not None else target, kernels=kernels,
            threads=engine_veus(target), func_name=opts.func_name)
        logger.info("tvm_ios.pipeline: %s", verdict)
        return judged

    return _judge


def engine_pass(target, opts, kernels=None):
    """``RProgramPass`` for ``target`` with ``engine="rprogram"`` (the CPU vDevice inlines
    ``kernels``' serial kernels); None for stages."""
    if opts.engine != "rprogram":
        return None
    from ..passes.rprogram_pass import RProgramPass

    cpu = {"kernels": kernels} if target.kind.name == "llvm" else {}
    return RProgramPass(opts.policy, func_name=opts.func_name, target=target, **cpu)


def open_kernel_db(kernels):
    """``kernels`` as a :class:`~tvm_ios.tuning.kernel_db.KernelDB`: one already, or opened
    from its directory (None, with a warning, when it was tuned for another CPU)."""
    if kernels is None:
        return None
    from ..tuning.kernel_db import KernelDB, open_kernels

    return kernels if isinstance(kernels, KernelDB) else open_kernels(kernels)


def kernel_passes(kernels, target, cover: int = 0) -> list:
    """Passes that put the tuned kernels of ``kernels`` (a KernelDB of ``tvm-ios
    tune-kernels``) into the build: legalized, fused, the database's kernels applied, those
    it lacks tuned first with ``cover`` trials each (:func:`~tvm_ios.tuning.coverage.
    kernels_pass`); none without one. llvm only."""
    if kernels is None:
        return []
    if target.kind.name != "llvm":
        raise ValueError(f"tvm_ios.pipeline: the kernel database {kernels.path} holds llvm "
                         f"kernels; it cannot build for target kind {target.kind.name!r}")
    from ..tuning.coverage import kernels_pass

    return [kernels_pass(kernels, cover)]


def default_build(target):
    """TVM's default Relax build for ``target``: the target's own pipeline (with dlight
    schedules) on GPUs, the generic one elsewhere (what ``tvm.compile`` picks)."""
    if "gpu" in target.keys:
        return relax.get_default_pipeline(target)
    return relax.get_pipeline("default")
