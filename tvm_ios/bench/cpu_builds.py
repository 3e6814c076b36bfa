"""The TVM builds of the CPU comparison, from one Relax module with its weights bound.

* ``TVM default``: ``tvm.compile(mod, "llvm")``, what a TVM user gets without tuning;
* ``TVM tuned sequential``: legalized, fused, the kernel database's parallel kernels
  applied, compiled for the database's target (:func:`~tvm_ios.kernels.tuned_build.
  apply_kernels`);
* ``tvm-ios sequential (tuned)``: the graph as the tvm-ios builds take it
  (:func:`ios_graph`: repeated calls computed once,
  :class:`~tvm_ios.passes.dedup_ops.DedupOps`, and the convolution taps that read only
  padding cut, :class:`~tvm_ios.passes.trim_dead_taps.TrimDeadTaps`), its ops in model
  order, tuned: what the graph rewrites gain apart from the schedule;
* ``tvm-ios stages (tuned)``: IOS stages (merges included) one kernel at a time, tuned;
* ``tvm-ios rProgram (tuned)``: IOS without merges, stages never slower than sequential
  (:func:`~tvm_ios.cost.stage_judges.rprogram_schedule`; with a measurer both sides of each
  concurrent stage are measured, :func:`~tvm_ios.cost.stage_judges.stage_judges`), each
  concurrent stage one rProgram of ``num_veus`` vEUs running the database's serial kernels,
  the other ops tuned.

:func:`stage_cost_model` prices stages with the stage log kept beside the database
(``stages.jsonl``, measured with its kernels by ``tvm-ios tune --kernels``) where it has
them, and with the CPU roofline, scaled to the logged figures, elsewhere.
"""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import tvm

from .. import _tvm, models
from ..cost.analytical import AnalyticalCostModel
from ..cost.stage_judges import rprogram_schedule, stage_judges
from ..cost.hybrid import logged_cost_model, predictor_preset
from ..cost.model_judge import judge_module
from ..tuning.coverage import apply_covered
from ..tuning.kernel_db import STAGE_LOG, default_kernels_dir, open_kernels
from ..kernels.tuned_build import tuned_functions
from ..passes.apply_schedule import schedule_of
from ..passes.blocked_layout import in_layout
from ..passes.ios_pass import IOSPass
from ..passes.rprogram_pass import RProgramPass
from ..passes.dedup_ops import dedup_for_kernels
from ..passes.trim_dead_taps import trim_for_kernels

__all__ = ["stage_cost_model", "build_default", "build_tuned", "build_ios_sequential",
           "build_stages", "build_rprogram", "rprogram_plan", "ios_graph", "stage_log",
           "STAGE_LOG", "zoo_case"]

logger = logging.getLogger(__name__)


def zoo_case(spec: str, seed: int = 0):
    """``(name, size, mod, x, kernels)`` of a zoo model given as ``NAME[:SIZE]``: its Relax
    module with the weights bound, a standard-normal input drawn with ``seed``, and the
    committed kernel database of the model and size for this CPU (``benchmarks/kernels``)."""
    name, _, size = spec.partition(":")
    size = int(size) if size else None
    net = models.net(name, image_size=size)
    mod, params = models.get(name, image_size=size)
    x = np.random.default_rng(seed).standard_normal(net.input_node.shape).astype("float32")
    return (name, size, _tvm.bind_params(mod, params), x,
            open_kernels(default_kernels_dir(name, size)))


def stage_cost_model(mod, kernels, engine: str = "rprogram", log: str | Path | None = None):
    """Logged stage figures (measured with ``kernels``), the roofline scaled to them for the
    rest: the cost model the ``ios`` pipeline builds (:func:`~tvm_ios.cost.hybrid.
    logged_cost_model`), so that a column's schedule is the one ``tvm-ios run`` builds."""
    target = kernels.target if kernels is not None else "llvm"
    roofline = AnalyticalCostModel(predictor_preset(target, engine))
    return logged_cost_model(mod, log or stage_log(kernels), roofline, str(target), kernels,
                             engine,
                             strategy="both" if engine == "sequential" else "parallel")


def build_default(mod):
    """TVM's default llvm build."""
    return tvm.compile(mod, target="llvm")


def _compile_tuned(mod, kernels, info: dict, cover: int = 0):
    """``mod`` fused, tuned (the kernels the database lacks tuned first with ``cover``
    trials each, what was covered into ``info["covered"]``) and compiled."""
    target = kernels.target if kernels is not None else "llvm"
    covered: dict = {}
    mod = apply_covered(mod, kernels, target, cover, covered)
    if covered:
        info.setdefault("covered", []).append(covered)
    info["tuned_kernels"], info["kernels"] = tuned_functions(mod)
    executable = tvm.compile(mod, target=target)
    info["_module"], info["_executable"] = mod, executable  # for profiles; not plain data
    return executable


def build_tuned(mod, kernels, info: dict | None = None, cover: int = 0):
    """TVM tuned sequential (in the layout the database was tuned in, fused; the kernels the
    database lacks tuned with ``cover`` trials each, else untuned)."""
    return _compile_tuned(in_layout(mod, kernels), kernels, info if info is not None else {},
                          cover)


def ios_graph(mod, kernels=None, cover: int = 0):
    """``mod`` (weights bound) as the tvm-ios builds and the ``ios`` pipeline take it: each
    repeated operator call computed once and the convolution taps that read only zero
    padding cut, where ``kernels`` (or ``cover``) has the kernels these rewrites make
    (:func:`~tvm_ios.passes.dedup_ops.dedup_for_kernels`,
    :func:`~tvm_ios.passes.trim_dead_taps.trim_for_kernels`), in the layout the kernels were
    tuned in (:func:`~tvm_ios.passes.blocked_layout.in_layout`)."""
    dedup = dedup_for_kernels(mod, kernels, cover)
    mod = mod if dedup is None else dedup(mod)
    trim = trim_for_kernels(mod, kernels, cover)
    return in_layout(mod if trim is None else trim(mod), kernels)


def build_ios_sequential(mod, kernels, info: dict | None = None, cover: int = 0):
    """:func:`ios_graph` of ``mod``, its ops in model order, tuned (``cover``: as
    :func:`build_tuned`): the graph rewrite's share of the tvm-ios builds' speed."""
    return _compile_tuned(ios_graph(mod, kernels, cover), kernels,
                          info if info is not None else {}, cover)


def build_stages(mod, kernels, cost=None, info: dict | None = None, cover: int = 0,
                 **ios_options):
    """IOS stages of :func:`ios_graph` one kernel at a time, tuned kernels (``cover``: as
    :func:`build_tuned`)."""
    info = info if info is not None else {}
    mod = ios_graph(mod, kernels, cover)
    cost = cost or stage_cost_model(mod, kernels, engine="sequential")
    scheduled = IOSPass(cost, **ios_options)(mod)
    schedule = schedule_of(scheduled)
    info["stages"] = len(schedule.stages) if schedule else None
    return _compile_tuned(scheduled, kernels, info, cover)


def stage_log(kernels) -> Path | None:
    """The stage log kept beside a kernel database (None without a database)."""
    return kernels.stage_log if kernels is not None else None


def rprogram_plan(mod, kernels, num_veus: int, measurer=None, balance: bool = False,
                  decisions: list | None = None, cost=None, from_log: bool = False,
                  cover: int = 0, **ios_options):
    """The schedule the rProgram column starts from, before the whole-model judge.

    Returns ``(recorded, rewrite)``: ``mod`` with the schedule recorded (each concurrent
    stage kept only if judged faster than its groups in turn: with more than one vEU, by
    both sides measured into the stage log with ``measurer``, or with ``from_log`` by the
    log's measured figures alone; else by ``cost``, default :func:`stage_cost_model`), and
    the ``RProgramPass`` that lowers it with that cost model. With one vEU nothing runs
    concurrently: the plan is then :func:`ios_graph`'s module as it is, no schedule priced
    or recorded, and no rewrite (before, a schedule was priced and recorded that no pass
    applied, so the build was the same). Each stage decision is appended to
    ``decisions``. ``mod`` is taken as :func:`ios_graph` gives it (with ``cover``, as the
    build will).
    """
    mod = ios_graph(mod, kernels, cover)
    if num_veus <= 1:
        logger.info("one vEU: the rProgram build is the sequential graph (no stage to run "
                    "concurrently)")
        return mod, None
    engine = "balanced" if balance else "rprogram"
    cost = cost or stage_cost_model(mod, kernels, engine=engine)
    judges = None
    if measurer is not None or from_log:
        judges = stage_judges(mod, stage_log(kernels), measurer, kernels,
                              str(kernels.target) if kernels is not None else None, engine)
    recorded = rprogram_schedule(mod, cost, decisions=decisions, judges=judges,
                                 **ios_options)
    rewrite = RProgramPass("ios", num_veus=num_veus, cost_model=cost, kernels=kernels,
                           balance=balance)
    return recorded, rewrite


def build_rprogram(mod, kernels, num_veus: int, cost=None, info: dict | None = None,
                   measurer=None, balance: bool = False, cover: int = 0, **ios_options):
    """Concurrent stages as rPrograms of ``num_veus`` vEUs, tuned kernels; with ``measurer``
    each concurrent stage is kept only if measured faster than its groups in turn (both
    measured into the database's stage log), and the stages kept are judged again in the
    whole model (:func:`~tvm_ios.cost.model_judge.judge_module`; without ``measurer``, by
    its logged figures where the log has them); ``cover``: as :func:`build_tuned`."""
    info = info if info is not None else {}
    info["fallback"] = []
    info["veus"] = num_veus
    recorded, rewrite = rprogram_plan(mod, kernels, num_veus, measurer, balance,
                                      info["fallback"], cost, cover=cover, **ios_options)
    if rewrite is None:
        info["rprograms"] = 0
        return _compile_tuned(recorded, kernels, info, cover)
    built: dict = {}  # id(executable) -> what its build recorded

    def lower(candidate):
        sub: dict = {}
        executable = _compile_tuned(rewrite(candidate), kernels, sub, cover)
        built[id(executable)] = {**sub, "rprograms": len(rewrite.programs)}
        return executable

    judged, verdict, executable = judge_module(
        recorded, info["fallback"], lower if measurer is not None else None,
        log=stage_log(kernels), target=kernels.target if kernels is not None else "llvm",
        kernels=kernels, threads=num_veus)
    info["model_judge"] = vars(verdict)
    if executable is None:
        executable = lower(judged)
    info.update(built[id(executable)])
    return executable
