"""A build meets a kernel its database lacks: say which, or tune it there (``cover``).

A build fuses its ops as its schedule leaves them, and a schedule that moves ops changes
what TVM fuses (the sum of two convolutions fuses into whichever runs later). A database
tuned for one schedule can then lack a kernel of another: NASNet-A's stages build, its
schedule chosen after the stage log had grown, ran ``fused_conv2d36_add15_add162`` untuned,
2.80 ms a call, 8 calls, 22.4 of its 55 ms, where the tuned sequential build took 35 ms in
all. :func:`apply_covered` applies the database; each convolution or matmul kernel still
untuned then is either named in a warning (with the fix), or, with ``cover`` trials, tuned
into the database (:func:`~.tuning.tune_kernels`, its round for tasks without a record)
and the database applied again. Pools, concatenations and element-wise kernels are not
searched (:data:`~.tuning_tasks.ANCHORS`).
"""
from __future__ import annotations

import logging
import time

from .. import _tvm
from ..kernels import prepack
from ..kernels.tuned_build import apply_kernels, is_tuned
from .search import tune_kernels
from .tasks import ANCHORS

__all__ = ["untuned_anchors", "apply_covered", "kernels_pass"]

logger = logging.getLogger(__name__)


def untuned_anchors(mod) -> list[str]:
    """Names of the PrimFuncs of ``mod`` with a convolution or matmul in their name (the
    fused kernels TVM names after their ops) that carry no tuned schedule, sorted."""
    return sorted(gv.name_hint for gv, func in prepack.kernels_of(mod)
                  if not is_tuned(func) and any(a in gv.name_hint for a in ANCHORS))


def apply_covered(mod, kernels, target=None, cover: int = 0, report: dict | None = None):
    """``mod`` legalized, fused and tuned from ``kernels``
    (:func:`~.tuned_build.apply_kernels`), the convolution and matmul kernels the database
    lacks tuned first with ``cover`` trials each.

    Parameters
    ----------
    mod : IRModule
        A Relax module, not yet fused (weights bound or not).
    kernels : KernelDB or None
        The database (None: fused, untuned).
    target : optional
        Target of the build (default the database's).
    cover : int
        Trials for each convolution or matmul kernel the database has no record of, measured
        here and appended to the database before it is applied again (0: build them untuned,
        with a warning naming them).
    report : dict, optional
        Filled with what was covered: ``kernels`` (names), ``trials``, ``wall_s``.

    Returns
    -------
    IRModule
        The fused module with the database's schedules applied.
    """
    out = apply_kernels(mod, kernels, target)
    missing = untuned_anchors(out) if kernels is not None else []
    covered = _cover(mod, kernels, target, cover, missing, report) \
        if missing and cover > 0 else None
    if covered is not None:
        out, missing = covered
    if missing:
        logger.warning("kernel database %s has no record of %d convolution/matmul kernels of "
                       "this build, which run untuned: %s (cover=N, `--cover N`, tunes them "
                       "with N trials each first)", kernels.path, len(missing),
                       ", ".join(missing))
    return out


def _cover(mod, kernels, target, cover: int, missing: list[str], report: dict | None):
    """Tune the tasks of ``mod`` the database lacks, apply it again: ``(module, still
    untuned)``, or None when they cannot be tuned here (the module stays as applied)."""
    logger.info("kernel database %s lacks %d kernels of this build (%s): %d trials each",
                kernels.path, len(missing), ", ".join(missing), cover)
    start = time.perf_counter()
    try:
        tuned = tune_kernels(mod, kernels, variants=("parallel",), trials=0, cover=cover)
    except ImportError as err:  # xgboost and friends: the tuning extra
        logger.warning("cannot tune the missing kernels (%s): pip install 'tvm-ios[tune]'",
                       err)
        return None
    kernels.pack()  # the committed (.xz) copies
    out = apply_kernels(mod, kernels, target)
    left = untuned_anchors(out)
    if report is not None:
        report.update(kernels=missing, trials=sum(r.trials for r in tuned),
                      wall_s=round(time.perf_counter() - start, 1))
    return out, left


def kernels_pass(kernels, cover: int = 0):
    """A module pass applying a kernel database (a :class:`~.kernel_db.KernelDB` or its
    directory; one tuned for another CPU is refused with a warning: untuned) to a Relax
    module: legalized, fused, tuned kernels in (what the ``ios`` pipeline runs on llvm),
    those the database lacks tuned first with ``cover`` trials each (:func:`apply_covered`)."""
    from .kernel_db import KernelDB, open_kernels  # noqa: PLC0415

    db = kernels if isinstance(kernels, KernelDB) else open_kernels(kernels)

    @_tvm.module_pass(opt_level=0, name="tvm_ios.ApplyKernels")
    def _apply_pass(mod, _ctx):
        return apply_covered(mod, db, db.target if db is not None else "llvm", cover)

    return _apply_pass
