"""Legalization of ``relax.nn.conv2d`` in blocked layouts (``NCHW16c`` data, ``OIHW16i16o``
weights), which TVM's own refuses ("cannot be legalized by TOPI at this moment").

:func:`register_blocked_conv2d` registers, once per process, a legalization that lowers
exactly those convolutions with ``topi.nn.conv2d_NCHWc`` (any group count) and hands every
other convolution to TVM's unchanged. The kernels layer's lowering modules call it on
import, so every ``LegalizeOps`` of a tvm-ios build (and of a worker process that builds a
stage) lowers a graph :class:`~tvm_ios.passes.blocked_layout.BlockedLayout` rewrote.
"""
from __future__ import annotations

import tvm
from tvm import relax

from .. import _tvm

__all__ = ["register_blocked_conv2d", "is_blocked", "parse_layout"]

_CONV = "relax.nn.conv2d"


def is_blocked(layout: str) -> bool:
    """Whether a layout string splits an axis into blocks (``NCHW16c``: yes)."""
    return any(ch.isdigit() for ch in str(layout))


def parse_layout(layout: str) -> int | None:
    """Channels per block of a layout name: ``NCHW`` -> None, ``NCHW16c`` -> 16; any other
    name is an error that says which are known."""
    text = str(layout)
    digits = text[4:-1]
    if text == "NCHW":
        return None
    if text.startswith("NCHW") and text.endswith("c") and digits.isdigit() and int(digits) > 1:
        return int(digits)
    raise ValueError(f"unknown layout {layout!r}: NCHW or NCHW<b>c (NCHW8c, NCHW16c)")


def _legalize_blocked(bb: relax.BlockBuilder, call: relax.Call, fallback):
    attrs = call.attrs
    if not is_blocked(attrs.data_layout) and not is_blocked(attrs.kernel_layout):
        return fallback(bb, call)
    out_dtype = str(attrs.out_dtype or "")
    out_dtype = out_dtype if out_dtype not in ("", "None") else _tvm.dtype_of(call.args[0])
    target = _tvm.current_target() or _tvm.make_target("llvm")
    with target:  # (conv2d_NCHWc asks for a target context; its compute does not use it)
        return bb.call_te(_tvm.topi.nn.conv2d_NCHWc, call.args[0], call.args[1], attrs.strides,
                          attrs.padding, attrs.dilation, str(attrs.data_layout),
                          str(attrs.out_layout or attrs.data_layout), out_dtype,
                          primfunc_name_hint="conv2d_NCHWc")


_REGISTERED: list = []


def register_blocked_conv2d() -> None:
    """Make ``LegalizeOps`` lower blocked-layout ``relax.nn.conv2d`` calls (once per process).

    TVM's legalization is kept for every other convolution: the registered function hands
    them to it unchanged."""
    if _REGISTERED:
        return
    op = tvm.ir.Op.get(_CONV)
    fallback = op.get_attr("FLegalize")
    _REGISTERED.append(fallback)
    tvm.ir.register_op_attr(_CONV, "FLegalize",
                            lambda bb, call: _legalize_blocked(bb, call, fallback), level=11)
