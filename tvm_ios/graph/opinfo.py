"""What the graph extractor knows about Relax operators: their role and their cost.

Roles:

* anchor: starts a schedulable unit (convolutions, pools, matmuls);
* epilogue: elementwise ops fused into the unit that produces their input (bias add,
  relu, clip, ...), as TVM's FuseOps does;
* free: data movement and joins that are not stages of their own (concat, reshape,
  split, tuple access, residual add of two activations);
* anything else is unknown: kept as an unschedulable unit that runs alone.
"""
from __future__ import annotations

import math

__all__ = ["ANCHORS", "EPILOGUES", "FREE", "anchor_kind", "anchor_flops", "itemsize"]

ANCHORS = {
    "relax.nn.conv2d": "conv2d",
    "relax.nn.max_pool2d": "pool",
    "relax.nn.avg_pool2d": "pool",
    "relax.nn.adaptive_avg_pool2d": "pool",
    "relax.matmul": "matmul",
    "relax.linear": "matmul",
    "relax.nn.conv1d": "conv1d",
    "relax.nn.softmax": "reduce",
    "relax.nn.log_softmax": "reduce",
    "relax.mean": "reduce",
    "relax.sum": "reduce",
    "relax.max": "reduce",
}

EPILOGUES = {
    "relax.add", "relax.multiply", "relax.subtract", "relax.divide", "relax.nn.relu",
    "relax.clip", "relax.sigmoid", "relax.tanh", "relax.nn.silu", "relax.nn.gelu",
    "relax.nn.leakyrelu", "relax.astype", "relax.maximum", "relax.minimum",
}

FREE = {
    "relax.concat", "relax.reshape", "relax.split", "relax.strided_slice", "relax.flatten",
    "relax.permute_dims", "relax.squeeze", "relax.expand_dims", "relax.nn.dropout",
    "relax.broadcast_to", "relax.take", "relax.zeros", "relax.ones", "relax.full",
    "relax.nn.pad", "relax.layout_transform",
}


def anchor_kind(op: str, attrs: dict, in_shape: tuple | None) -> str:
    """Kind of the unit an anchor op starts (depthwise convs are ``"depthwise"``)."""
    kind = ANCHORS[op]
    if kind == "conv2d" and in_shape and attrs.get("groups", 1) > 1:
        return "depthwise" if attrs["groups"] == in_shape[1] else "grouped_conv"
    return kind


def anchor_flops(op: str, in_shapes: list[tuple], out_shape: tuple, attrs: dict) -> int:
    """Floating-point operations of one anchor op."""
    out_elems = math.prod(out_shape) if out_shape else 0
    if op == "relax.nn.conv2d" and len(in_shapes) > 1 and in_shapes[1]:
        weight = in_shapes[1]  # OIHW: (Cout, Cin / groups, kh, kw); blocked OIHW{b}i{b}o:
        taps = weight[1:5] if len(weight) == 6 else weight[1:4]  # (.., Cin / b, kh, kw, b, b)
        return 2 * out_elems * math.prod(taps)
    if op in ("relax.matmul", "relax.linear") and in_shapes and in_shapes[0]:
        return 2 * out_elems * in_shapes[0][-1]
    if op in ("relax.nn.max_pool2d", "relax.nn.avg_pool2d"):
        size = attrs.get("pool_size", [1, 1])
        return out_elems * int(size[0]) * int(size[1])
    if in_shapes and in_shapes[0]:
        return math.prod(in_shapes[0])
    return out_elems


def itemsize(dtype: str) -> int:
    """Bytes per element of a dtype string."""
    digits = "".join(ch for ch in dtype if ch.isdigit())
    return max(1, int(digits) // 8) if digits else 4
