"""Tuned kernels into a build: legalize and fuse, apply a kernel database, count what it hit.

meta_schedule tunes and applies fused PrimFuncs, so a module first goes through TVM's own
legalization and fusion (:func:`fuse_for_tuning`: ``DecomposeOpsForInference``,
``CanonicalizeBindings``, ``relax.pipeline.zero_pipeline()``); ``extract_tasks`` finds no
task on an unfused module. :func:`apply_kernels` then replaces every PrimFunc the database
holds by its tuned schedule (``MetaScheduleApplyDatabase`` under the target and the
database) and reports how many were found. rProgram PrimFuncs (attribute
``tvm_ios.rprogram``) are left alone: their inlined kernels were chosen when they were built.

:func:`serial_kernels` is what the CPU vDevice applies to the kernels of one op before it
inlines them into a vEU: the serial variant of the database, else the parallel one with its
``parallel`` loops made serial (a vEU is one thread; nested parallelism is not allowed).
"""
from __future__ import annotations

import logging

import tvm
from tvm import relax

from .. import _tvm
from .._tvm import tvm_ffi
from . import prepack
from .blocked_conv import register_blocked_conv2d
from .prepack import TUNED_ATTR
from .tir_util import fresh

__all__ = ["fuse_for_tuning", "apply_kernels", "serial_kernels", "parallel_kernels",
           "strip_parallel", "kernel_times", "tuned_functions", "is_tuned", "TUNED_ATTR"]

logger = logging.getLogger(__name__)
register_blocked_conv2d()  # (a blocked graph's convolutions lower too)


def fuse_for_tuning(mod, target):
    """``mod`` legalized and fused as meta_schedule expects (under ``target``)."""
    passes = [relax.transform.DecomposeOpsForInference(), relax.transform.CanonicalizeBindings(),
              relax.pipeline.zero_pipeline()]
    with _tvm.make_target(target):
        return _tvm.Sequential(passes)(mod)


def tuned_functions(mod) -> tuple[int, int]:
    """``(tuned, total)`` PrimFuncs of ``mod`` (rProgram functions not counted)."""
    funcs = [f for _, f in prepack.kernels_of(mod)]
    tuned = sum(is_tuned(f) for f in funcs)
    return tuned, len(funcs)


def _apply(mod, kernels, variant: str):
    target = kernels.target_for(variant)
    with target, kernels.database(variant):
        return relax.transform.MetaScheduleApplyDatabase(enable_warning=False)(mod)


def apply_kernels(mod, kernels, target=None, variant: str = "parallel", fuse: bool = True):
    """``mod`` fused and, with ``kernels``, with the database's schedules applied.

    Parameters
    ----------
    mod : IRModule
        A Relax module (weights bound or not).
    kernels : KernelDB or None
        The database (None: fuse only, the untuned build of the same shape).
    target : optional
        Target of the build (default the database's).
    variant : {"parallel", "serial"}
        Which of the database's variants to apply.
    fuse : bool
        Legalize and fuse first (off for a module that already is).

    Notes
    -----
    A parallel kernel the database lacks gets the op's one-core kernel where it has that,
    the serial-packed one where its record beats the serial one: a stage module fuses an op
    alone (ResNeXt-29's last 1x1 convolution of a block with its bias), where the model
    fuses it with the residual add that follows, so a parallel variant tuned on the model's
    kernels only has no record of it (``tune-kernels`` tunes these too:
    :func:`~tvm_ios.cost.stage_module.op_stages`); untuned, TVM's naive loop nest took
    0.3-1 s per call against 10 ms serial and 5.3 ms serial-packed.
    """
    target = target or (kernels.target if kernels is not None else "llvm")
    if fuse:
        mod = fuse_for_tuning(mod, target)
    if kernels is None:
        return mod
    mod = _pack(mod, kernels, "packed") if variant == "parallel" else mod
    if kernels.has(variant):
        mod = _apply(mod, kernels, variant)
    tuned, total = tuned_functions(mod)
    if variant == "parallel" and tuned < total:  # kernels only a stage module has: see above
        mod = _pack(mod, kernels, "serial-packed")
        mod = _apply(mod, kernels, "serial") if kernels.has("serial") else mod
        tuned, total = tuned_functions(mod)
    mod = _fold(mod)
    logger.info("kernel database %s (%s): %d of %d kernels tuned", kernels.path, variant,
                tuned, total)
    return mod


def is_tuned(func) -> bool:
    """Whether PrimFunc ``func`` carries a schedule applied from a database."""
    return bool(func.attrs is not None and func.attrs.get(TUNED_ATTR, False))


def strip_parallel(func):
    """``func`` with every ``parallel`` loop made serial."""
    tirx = _tvm.tirx

    def serial(loop):
        if loop.kind != tirx.ForKind.PARALLEL:
            return loop
        return tirx.For(loop.loop_var, loop.min, loop.extent, tirx.ForKind.SERIAL, loop.body,
                        loop.thread_binding, loop.annotations)
    body = tvm_ffi.structural_map(func.body, (tirx.For, serial))
    return func.with_body(body)


def serial_kernels(kernels):
    """A transform of an op's lowered module: serial tuned kernels where the database has
    them (with packed weights, folded into constants, where its ``serial-packed`` record is
    the faster), else parallel tuned ones made serial; untuned kernels stay as TVM lowered
    them."""

    def transform(mod):
        if kernels is None:
            return mod
        mod = _pack(mod, kernels, "serial-packed")
        funcs = dict(mod.functions.items())
        if kernels.has("serial"):
            funcs.update(_apply(mod, kernels, "serial").functions.items())
        rest = {gv: f for gv, f in funcs.items() if isinstance(f, _tvm.tirx.PrimFunc)
                and not is_tuned(f)}
        if rest and kernels.has("parallel"):  # only what the serial variant did not tune
            funcs.update(_apply(tvm.IRModule(rest), kernels, "parallel").functions.items())
        mod = tvm.IRModule({gv: fresh(strip_parallel(f))
                            if isinstance(f, _tvm.tirx.PrimFunc) else f
                            for gv, f in funcs.items()}, attrs=mod.attrs)
        return _fold(mod)
    return transform


def _pack(mod, kernels, variant: str):
    """``mod`` with the kernels whose ``variant`` (a packed one) record is the faster marked
    and scheduled from it; the others as they were."""
    if not kernels.has(variant):
        return mod
    mod, marked = prepack.mark_packed(mod, kernels, variant)
    mod = _apply(mod, kernels, variant) if marked else mod
    return prepack.unmark(mod, is_tuned)  # a packed kernel not applied: plain after all


def _fold(mod):
    """``mod`` with the weights of its packed kernels packed (folded), if it has any."""
    packed = sum(prepack.is_marked(f) for _, f in mod.functions.items())
    if packed:
        logger.debug("%d kernels with packed weights", packed)
    return prepack.fold_packed(mod) if packed else mod


def parallel_kernels(kernels):
    """A transform of an op's lowered module: the database's parallel kernels, as tuned (what
    :mod:`~tvm_ios.kernels.cpu.slicing` cuts across vEUs); the rest as TVM lowered them."""

    def transform(mod):
        if kernels is None or not kernels.has("parallel"):
            return mod
        funcs = _apply(mod, kernels, "parallel").functions.items()
        return tvm.IRModule({gv: fresh(f) if isinstance(f, _tvm.tirx.PrimFunc) else f
                             for gv, f in funcs}, attrs=mod.attrs)
    return transform


def kernel_times(mod, kernels, variant: str) -> float | None:
    """What TVM's runner measured (best of the database's record, us) for all the PrimFuncs
    of a lowered, untuned ``mod`` in one variant, summed; None when one has no record."""
    total = 0.0
    for gv, func in mod.functions.items():
        if not isinstance(func, _tvm.tirx.PrimFunc):
            continue
        best = kernels.best_us(variant, func, gv.name_hint)
        if best is None:
            return None
        total += best
    return total
