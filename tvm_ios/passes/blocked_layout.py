"""``BlockedLayout``: convolutions in TVM's blocked ``NCHW{b}c`` layout, end to end.

In ``NCHW`` a CPU convolution kernel vectorises over the width of its feature map: the
maps of a model at a small input size are 35, 17, 7, 3 or 1 wide, and the vector lanes
past the width are wasted. In ``NCHW{b}c`` (channels split into blocks of ``b``, the
block innermost) it vectorises over ``b`` output channels whatever the map's width, as
ONNX Runtime's MLAS kernels do. A probe on this project's Zen 4 machine (2 threads,
Inception V3's 3x3 convolution of 32 into 64 channels on a 35x35 map, meta_schedule
with 256 trials each, timed warm): ``NCHW`` 338 us, ``NCHW16c`` 215 us (ONNX Runtime's
took 216 us in the CPU table's profile).

The pass runs Relax's ``ConvertLayout`` with every ``relax.nn.conv2d`` asked for data
layout ``NCHW{b}c`` and weight layout ``OIHW{b}i{b}o``; it carries the layout through
the ops that follow (bias adds, activations, concatenations, pooling) and transforms
back where an op needs ``NCHW`` (a reshape, the model's output). A convolution whose
channels ``b`` does not divide (an image's 3 input channels) stays in ``NCHW``. The
weights' layout transforms are folded into constants
(:class:`~tvm_ios.passes.fold_layout_transforms.FoldLayoutTransforms`, then
``FoldConstant``), so the blocked weights are packed once, at compile time.

TVM's own legalization refuses convolutions of blocked layouts; the kernels layer adds
one (:mod:`~tvm_ios.kernels.blocked_conv`).
"""
from __future__ import annotations

import logging

import tvm
from tvm import relax

from .. import _tvm
from ..kernels.blocked_conv import is_blocked, register_blocked_conv2d
from .fold_layout_transforms import FoldLayoutTransforms

__all__ = ["BlockedLayout", "blocked_layouts", "layout_for_kernels", "in_layout",
           "conv_layouts"]

logger = logging.getLogger(__name__)

_CONV = "relax.nn.conv2d"


def blocked_layouts(block: int) -> tuple[str, str]:
    """``(data layout, weight layout)`` of a convolution blocked by ``block`` channels."""
    if block < 2:
        raise ValueError(f"a blocked layout needs a block of at least 2 channels, not {block}")
    return f"NCHW{block}c", f"OIHW{block}i{block}o"


def conv_layouts(mod) -> list[str]:
    """The data layout of every convolution of ``mod``."""
    found = []

    def visit(node):
        if isinstance(node, relax.Call) and _tvm.op_name(node) == _CONV:
            found.append(str(node.attrs.data_layout))
    for _, func in _tvm.relax_functions(mod):
        relax.analysis.post_order_visit(func, visit)
    return found


@tvm.transform.module_pass(opt_level=0, name="BlockedLayout")
class BlockedLayout:
    """Convolutions (and the ops their layout reaches) in ``NCHW{block}c``.

    Parameters
    ----------
    block : int
        Channels per block (16: one AVX-512 vector of float32).
    """

    def __init__(self, block: int = 16):
        self.block = block
        self.layouts = blocked_layouts(block)

    def transform_module(self, mod: tvm.IRModule, _ctx) -> tvm.IRModule:
        """The module with its convolutions blocked and the weights' transforms folded (a
        module with blocked convolutions already is returned as it is)."""
        register_blocked_conv2d()
        if any(is_blocked(layout) for layout in conv_layouts(mod)):
            return mod  # (ConvertLayout fails on blocked convolutions: the pass runs once)
        out = relax.transform.ConvertLayout({_CONV: list(self.layouts)})(mod)
        out = FoldLayoutTransforms()(out)  # (the weights' packing, in numpy: fast)
        out = relax.transform.DeadCodeElimination()(relax.transform.FoldConstant()(out))
        layouts = conv_layouts(out)
        logger.info("BlockedLayout: %d of %d convolutions in %s", layouts.count(
            self.layouts[0]), len(layouts), self.layouts[0])
        return out


def layout_for_kernels(kernels) -> BlockedLayout | None:
    """The pass that puts a graph in the layout ``kernels`` were tuned in (None for NCHW or
    no database): every build with a database takes its graph through it."""
    block = kernels.block if kernels is not None else None
    return BlockedLayout(block) if block else None


def in_layout(mod, kernels):
    """``mod`` in the convolution layout ``kernels`` were tuned in (``NCHW`` or no
    database: ``mod`` itself)."""
    layout = layout_for_kernels(kernels)
    return mod if layout is None else layout(mod)
