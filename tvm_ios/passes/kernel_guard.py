"""A graph rewrite kept only where a kernel database holds the kernels it makes.

A rewrite before the build (:class:`~.trim_dead_taps.TrimDeadTaps`,
:class:`~.dedup_ops.DedupOps`) changes what TVM fuses: a trimmed convolution is a new
kernel, and a convolution whose repeated ReLUs became one fuses that ReLU as its epilogue
(NASNet-A's stem: ``fused_conv2d_add_relu``). A database tuned before the rewrite (another
CPU's, committed) lacks those kernels, and they would run untuned: NASNet-A at 64 px took
75.6 ms with three of them untuned, 24.0 ms tuned. :func:`kept_for_kernels` keeps the
rewrite only where the rewritten graph has no more untuned kernels than the original, and
says so in a warning where it does not.
"""
from __future__ import annotations

import logging

__all__ = ["kept_for_kernels"]

logger = logging.getLogger(__name__)


def kept_for_kernels(rewrite, mod, rewritten, kernels, cover: int, what: str, skipped: str):
    """``rewrite`` (the pass that made ``rewritten`` from ``mod``), or None where ``kernels``
    lacks tuned kernels the rewritten graph needs and the original does not.

    Parameters
    ----------
    rewrite : tvm.transform.Pass
        The rewrite, returned as it is when kept.
    mod, rewritten : IRModule
        The graph before and after it (in NCHW; put in the database's layout here).
    kernels : KernelDB or None
        The database (None: every rewrite kept, nothing is tuned anyway).
    cover : int
        Trials the build tunes each missing kernel with (> 0: the rewrite is kept, its
        kernels are tuned at build time).
    what, skipped : str
        For the warning: the kernels' description and what not applying the rewrite means.
    """
    from ..kernels.cover import untuned_anchors  # noqa: PLC0415
    from ..kernels.tuned_build import apply_kernels  # noqa: PLC0415
    from .blocked_layout import in_layout  # noqa: PLC0415

    if kernels is None or cover > 0:
        return rewrite

    def untuned(graph):  # (in the layout the database was tuned in, as builds take it)
        return untuned_anchors(apply_kernels(in_layout(graph, kernels), kernels))
    missing = untuned(rewritten)
    if len(missing) > len(untuned(mod)):
        logger.warning("kernel database %s lacks tuned kernels for %s (%s, ...): %s "
                       "(`tvm-ios tune-kernels` tunes them; `--cover N` tunes them at build "
                       "time)", kernels.path, what, ", ".join(missing[:3]), skipped)
        return None
    return rewrite
