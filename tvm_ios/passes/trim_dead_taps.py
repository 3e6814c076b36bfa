"""``TrimDeadTaps``: drop the kernel taps of a convolution that only ever read padding.

When a convolution's zero padding is wider than its input reaches (small feature maps:
Inception V3 at 75 px runs its 1x3, 3x1 and 3x3 convolutions on 1x1 maps and its 1x7 and 7x1
ones on 3x3 maps), some taps of the kernel multiply padding zeros at every output position.
Their weights are read from memory on every inference and their products are all zero. The
pass cuts them off: the weight is sliced to the live taps (``strided_slice``, folded into a
constant where the weight is one) and the padding shrunk by what was cut, so every output
element sums the same nonzero products as before (up to the order of the sum) and keeps its
shape. Inception V3 at 75 px: 95 MB of weights read per inference, 69 MB after the pass.

For a spatial axis with input extent ``n``, padding ``before`` and ``after``, kernel extent
``k``, stride ``s``, dilation ``d`` and output extent ``m``, tap ``t`` reads input positions
``o * s + t * d - before`` for ``o`` in ``[0, m)``; it is live when one of them lies in
``[0, n)``. The live taps are a contiguous range ``[t0, t1]``; the new padding is
``before - t0 * d`` and whatever keeps the output extent ``m``. A convolution is left as it
is when no tap is dead, or when the trimmed padding would be negative (dilated kernels).

By default only convolutions whose weight is a constant are trimmed (weights bound, as every
tvm-ios build binds them): a weight passed in at run time would be sliced on every call.
"""
from __future__ import annotations

import logging

from tvm import relax

from .. import _tvm
from .kernel_guard import kept_for_kernels, replays_last_run

__all__ = ["TrimDeadTaps", "live_taps", "trim_for_kernels"]

logger = logging.getLogger(__name__)


def live_taps(n: int, before: int, kernel: int, stride: int, dilation: int,
              out: int) -> tuple[int, int] | None:
    """``(t0, t1)``, the first and last tap of one spatial axis that read input (not
    padding) at some output position; None when none does."""
    live = [t for t in range(kernel)
            if any(0 <= o * stride + t * dilation - before < n for o in range(out))]
    return (live[0], live[-1]) if live else None


def _axis_plan(n, before, kernel, stride, dilation, out):
    """``(t0, t1, new_before, new_after)`` for one axis, None when nothing can be cut."""
    taps = live_taps(n, before, kernel, stride, dilation, out)
    if taps is None or taps == (0, kernel - 1):
        return None
    t0, t1 = taps
    new_before = before - t0 * dilation
    new_after = (out - 1) * stride + (t1 - t0) * dilation + 1 - n - new_before
    if new_before < 0 or new_after < 0:
        return None
    return t0, t1, new_before, new_after


@_tvm.mutator
class _Trimmer(_tvm.PyExprMutator):
    """Rewrites every ``relax.nn.conv2d`` call with dead taps (2-D layouts ``NCHW``-like:
    the spatial axes named ``H`` and ``W`` in the data and kernel layouts)."""

    def __init__(self, mod, bound_only: bool):
        super().__init__(mod)
        self.bound_only = bound_only
        self.trimmed: list[str] = []

    def visit_call_(self, call):
        call = super().visit_call_(call)
        if not isinstance(call.op, _tvm.Op) or call.op.name != "relax.nn.conv2d":
            return call
        trimmed = self._trim(call)
        return call if trimmed is None else trimmed

    def _trim(self, call):
        if self.bound_only and not _tvm.is_tensor_constant(call.args[1]):
            return None
        attrs = _tvm.attrs_dict(call)
        data_shape, weight_shape = _tvm.shape_of(call.args[0]), _tvm.shape_of(call.args[1])
        out_shape = _tvm.shape_of(call)
        if data_shape is None or weight_shape is None or out_shape is None:
            return None
        data_layout, kernel_layout = str(attrs["data_layout"]), str(attrs["kernel_layout"])
        out_layout = str(attrs.get("out_layout") or data_layout)
        if any(set(lay) - set("NCHWOI") or len(lay) != 4
               for lay in (data_layout, kernel_layout, out_layout)):
            return None  # blocked layouts (NCHW16c): left as they are
        pad = [int(p) for p in attrs["padding"]]  # top, left, bottom, right
        plans = []
        for k, axis in enumerate("HW"):
            plans.append(_axis_plan(
                data_shape[data_layout.index(axis)], pad[k],
                weight_shape[kernel_layout.index(axis)], int(attrs["strides"][k]),
                int(attrs["dilation"][k]), out_shape[out_layout.index(axis)]))
        if plans == [None, None]:
            return None
        begin, end, axes, padding = [], [], [], list(pad)
        for k, (axis, plan) in enumerate(zip("HW", plans)):
            if plan is None:
                continue
            t0, t1, padding[k], padding[k + 2] = plan
            axes.append(kernel_layout.index(axis))
            begin.append(t0)
            end.append(t1 + 1)
        weight = relax.op.strided_slice(call.args[1], axes, begin, end)
        trimmed = relax.op.nn.conv2d(
            call.args[0], weight, strides=attrs["strides"], padding=padding,
            dilation=attrs["dilation"], groups=int(attrs["groups"]), data_layout=data_layout,
            kernel_layout=kernel_layout, out_layout=out_layout,
            out_dtype=_tvm.dtype_of(call))
        self.trimmed.append(f"{weight_shape} -> {dict(zip(axes, zip(begin, end)))}")
        return trimmed


@_tvm.module_pass(opt_level=0, name="tvm_ios.TrimDeadTaps")
class TrimDeadTaps:
    """Cut the kernel taps of every convolution that read only zero padding.

    Parameters
    ----------
    fold : bool
        Fold the sliced weights into constants (``FoldConstant``), so the build reads only
        the live taps.
    bound_only : bool
        Trim only convolutions whose weight is a constant.

    Examples
    --------
    >>> mod = tvm.transform.Sequential([relax.transform.BindParams("main", params),
    ...                                 TrimDeadTaps()])(mod)
    """

    def __init__(self, fold: bool = True, bound_only: bool = True):
        self.fold, self.bound_only = fold, bound_only
        self.trimmed: list[str] = []  # weight shape -> live taps, of the last run

    @replays_last_run
    def transform_module(self, mod, ctx):
        out, self.trimmed = _trim_module(mod, self.bound_only)
        if not self.trimmed:
            return mod
        logger.info("TrimDeadTaps: %d convolutions trimmed", len(self.trimmed))
        return relax.transform.FoldConstant()(out) if self.fold else out


def _trim_module(mod, bound_only: bool):
    trimmer = _Trimmer(mod, bound_only)
    return _tvm.rewrite_functions(trimmer, mod), trimmer.trimmed


def trim_for_kernels(mod, kernels=None, cover: int = 0):
    """``TrimDeadTaps()`` where ``mod`` has convolution taps that read only padding, else None.

    With a kernel database (and no ``cover`` trials to tune what it lacks at build time) the
    graph is trimmed only if the database holds the trimmed graph's kernels as well as the
    untrimmed one's: a database tuned before the trimmed convolutions existed (another CPU's,
    committed) would leave them untuned, slower than the untrimmed tuned ones; a warning
    says so."""
    trim = TrimDeadTaps()
    trimmed = trim(mod)
    if not trim.trimmed:
        return None
    return kept_for_kernels(trim, mod, trimmed, kernels, cover, "the trimmed convolutions",
                            "dead taps not cut")
