"""Prepacked weights: meta_schedule's weight layout rewrite in the sequential build.

A tuned convolution reads its weights in loop-nest order. meta_schedule's ``RewriteLayout``
post-processor lets the search pick a layout for a weight too (the blocked layout its loop
nest reads in order); the rewrite is a separate block in the kernel, which TVM splits out of
the kernel (``SplitLayoutRewritePreproc``) and, the weights being constants, folds at
compile time (``FoldConstant``): the packed weights are what the build carries. On this
Zen 5, with weights that do not fit the caches (95 MB in Inception V3, 32 MB of L3), the
kernels tuned so made TVM tuned sequential 1.23x as fast (3.75 against 4.61 ms).

A kernel database's ``packed`` variant holds those kernels (tuned as the parallel variant
is, plus the post-processor; :mod:`~..tuning.search`). :func:`mark_packed` decides per kernel, from
the records, which of the two a build takes: the packed one where its time is the better
(both are timed cold by the same runner), the plain parallel one otherwise.
:func:`fold_packed` then packs the weights. This is how the sequential build's kernels (and
each stage's sequential kernels) are packed (:func:`~.tuned_build.apply_kernels`).

A vEU kernel is packed the same way, one variant over: ``serial-packed`` holds the serial
variant's kernels tuned with the rewrite, and :func:`~.tuned_build.serial_kernels` packs an
op's lowered module before the CPU vDevice inlines it, so the packed weights are constants
the rProgram is called with (:data:`PLAIN` pairs each packed variant with its plain one).
"""
from __future__ import annotations

import logging

from tvm import relax

from .. import _tvm

__all__ = ["LAYOUT_FREE", "PLAIN", "TUNED_ATTR", "mark_layout_free", "mark_packed", "unmark",
           "fold_packed", "kernels_of", "with_functions", "is_marked"]

logger = logging.getLogger(__name__)

#: PrimFunc attribute naming the parameters whose layout a kernel may choose (its weights).
LAYOUT_FREE = "layout_free_buffers"
#: Packed variant -> the plain variant a kernel falls back to (the same kernels, unpacked).
PLAIN = {"packed": "parallel", "serial-packed": "serial"}
#: PrimFunc attribute meta_schedule sets on an applied schedule.
TUNED_ATTR = "tirx.is_scheduled"


def mark_layout_free(mod):
    """``mod`` (fused) with every kernel's weight parameters marked layout-free
    (``AttachAttrLayoutFreeBuffers``): the workloads the packed variant is tuned on."""
    return relax.transform.AttachAttrLayoutFreeBuffers()(mod)


def is_rprogram(func) -> bool:
    """Whether a PrimFunc is an rProgram (its kernels are the serial variants')."""
    return func.attrs is not None and "tvm_ios.rprogram" in func.attrs


def kernels_of(mod):
    """``(global var, PrimFunc)`` of the kernels of ``mod`` (rProgram functions left out)."""
    return [(gv, f) for gv, f in mod.functions.items() if isinstance(f, _tvm.tirx.PrimFunc)
            and not is_rprogram(f)]


def mark_packed(mod, kernels, variant: str = "packed"):
    """``mod`` (fused) with the kernels the build packs marked layout-free, and only those:
    where the record of a kernel in the packed ``variant`` is faster than its plain one
    (:data:`PLAIN`; or it has only a packed one). A kernel an earlier variant scheduled
    stays as it was (a packed one marked: its weights are still to fold). Returns
    ``(mod, number marked)``."""
    kept = {_tvm.structural_hash(f.without_attr(LAYOUT_FREE)): f for _, f in kernels_of(mod)
            if f.attrs is not None and f.attrs.get(TUNED_ATTR, False)}
    marked = mark_layout_free(mod)
    funcs, packed = {}, 0
    for gv, func in kernels_of(marked):
        plain = func.without_attr(LAYOUT_FREE)
        scheduled = kept.get(_tvm.structural_hash(plain)) if kept else None
        if scheduled is not None:  # scheduled by an earlier variant: marked as it was
            funcs[gv] = scheduled
            continue
        if not is_marked(func):
            continue
        with_packing = None if "tvm_ios.rprogram" in func.attrs else \
            kernels.best_us(variant, func, gv.name_hint)  # (an rProgram's are inlined)
        without = kernels.best_us(PLAIN[variant], plain, gv.name_hint) \
            if with_packing is not None else None
        if with_packing is not None and (without is None or with_packing < without):
            packed += 1
            logger.debug("%s packed: %.1f us, plain %s us", gv.name_hint, with_packing, without)
            continue
        funcs[gv] = plain
    return with_functions(marked, funcs), packed


def is_marked(func) -> bool:
    """Whether ``func`` is a PrimFunc with weights marked layout-free."""
    return isinstance(func, _tvm.tirx.PrimFunc) and func.attrs is not None \
        and LAYOUT_FREE in func.attrs


def unmark(mod, keep):
    """``mod`` with the mark taken off every kernel but those ``keep(func)`` is true of."""
    return with_functions(mod, {gv: f.without_attr(LAYOUT_FREE)
                                for gv, f in mod.functions.items()
                                if is_marked(f) and not keep(f)})


def with_functions(mod, funcs: dict):
    """A copy of ``mod`` with the functions of ``funcs`` (by global var) replaced."""
    if not funcs:
        return mod
    return _tvm.IRModule({**dict(mod.functions.items()), **funcs}, attrs=mod.attrs)


def fold_packed(mod):
    """``mod`` with the weight layout rewrites of its marked kernels split out and, where
    the weights are constants, folded; kernels no longer called are dropped.

    The split sees only the marked kernels (and the Relax functions): TVM's pass walks the
    blocks of every PrimFunc it is given, and an rProgram function has none."""
    others = {gv: f for gv, f in mod.functions.items()
              if isinstance(f, _tvm.tirx.PrimFunc) and not is_marked(f)}
    split = relax.transform.SplitLayoutRewritePreproc()(_tvm.IRModule(
        {gv: f for gv, f in mod.functions.items() if gv not in others}, attrs=mod.attrs))
    mod = with_functions(split, others)
    mod = relax.transform.FoldConstant()(mod)
    entries = [name for name, _ in _tvm.relax_functions(mod)]
    return relax.transform.DeadCodeElimination(entries)(mod)
