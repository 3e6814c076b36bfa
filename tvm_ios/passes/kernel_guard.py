"""A graph rewrite kept only where a kernel database holds the kernels it makes.

A rewrite before the build (:class:`~.trim_dead_taps.TrimDeadTaps`,
:class:`~.dedup_ops.DedupOps`) changes what TVM fuses: a trimmed convolution is a new
kernel, and a convolution whose repeated ReLUs became one fuses that ReLU as its epilogue
(NASNet-A's stem: ``fused_conv2d_add_relu``). A database tuned before the rewrite (another
CPU's, committed) lacks those kernels, and they would run untuned: NASNet-A at 64 px took
75.6 ms with three of them untuned, 24.0 ms tuned. :func:`kept_for_kernels` keeps the
rewrite only where the rewritten graph has no more untuned kernels than the original, and
says so in a warning where it does not.

Deciding runs the rewrite once: :func:`replays_last_run` lets the pass return that run's
output when the caller then applies it to the same module, and the untuned kernels of the
last graph looked up are kept for the next rewrite's guard (the deduplicated graph is the
one the trim is decided on), so no graph is rewritten or looked up twice.
"""
from __future__ import annotations

import functools
import logging
import stat
import weakref

__all__ = ["kept_for_kernels", "replays_last_run"]

logger = logging.getLogger(__name__)

_last_lookup: list = []  # [(graph, kernels, their files' state, untuned anchors)]: the last
# graph looked up (graph and database weakly held: the cache keeps no model alive)


def replays_last_run(transform_module):
    """``transform_module`` of a rewrite pass, returning its last output again (not running
    twice) when it is given the module of its last run (the one its guard decided on)."""
    @functools.wraps(transform_module)
    def transform(self, mod, ctx):
        last = getattr(self, "_last_run", None)
        if last is not None and last[0].same_as(mod):
            return last[1]
        out = transform_module(self, mod, ctx)
        self._last_run = (mod, out)
        return out
    return transform


def _untuned(graph, kernels) -> list:
    """The anchors of ``graph``'s kernels ``kernels`` has no tuned record of, built as builds
    take it (in the database's layout); the last graph's kept for the next guard."""
    from ..tuning.coverage import untuned_anchors  # noqa: PLC0415
    from ..kernels.tuned_build import apply_kernels  # noqa: PLC0415
    from .blocked_layout import in_layout  # noqa: PLC0415

    state = _files_state(kernels)
    last = _last_lookup[0] if _last_lookup else None
    cached = last[0]() if last else None
    if cached is not None and cached.same_as(graph) and last[1]() is kernels \
            and last[2] == state:
        return last[3]
    anchors = untuned_anchors(apply_kernels(in_layout(graph, kernels), kernels))
    _last_lookup[:] = [(weakref.ref(graph), weakref.ref(kernels), state, anchors)]
    return anchors


def _files_state(kernels) -> tuple:
    """Size and time of each file of ``kernels``: records tuned since a lookup change it."""
    stats = ((str(p), p.stat()) for p in kernels.path.glob("*/*"))  # one stat per entry
    return tuple(sorted((name, st.st_size, st.st_mtime_ns) for name, st in stats
                        if stat.S_ISREG(st.st_mode)))


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
    if kernels is None or cover > 0:
        return rewrite
    before = len(_untuned(mod, kernels))
    missing = _untuned(rewritten, kernels)  # (last: the next rewrite's guard starts there)
    if len(missing) > before:
        logger.warning("kernel database %s lacks tuned kernels for %s (%s, ...): %s "
                       "(`tvm-ios tune-kernels` tunes them; `--cover N` tunes them at build "
                       "time)", kernels.path, what, ", ".join(missing[:3]), skipped)
        return None
    return rewrite
