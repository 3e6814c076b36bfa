"""Operator merge: when a set of convolutions can run as one, and the merged conv's shape.

IOS merges convolutions that read the same tensor into one convolution whose kernels are
the originals stacked along the output channels, smaller kernels zero-padded and centred
to the largest one, followed by a split. That is exact when the ops share the input,
stride, dilation, groups (1), layout, dtype, epilogue and output size, and when each
kernel's padding, shifted by its centring offset, equals the merged padding.

The scheduler asks :func:`merge_plan` whether a stage can merge (and the cost model prices
the plan); the rewrite pass applies the same plan, so both agree by construction.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..graph.opgraph import OpGraph

__all__ = ["MergePlan", "merge_plan", "merge_key"]

_SAME_KEYS = ("input", "strides", "dilation", "groups", "data_layout", "kernel_layout",
              "epilogue", "bias")


@dataclass(frozen=True)
class MergePlan:
    """How to merge convolutions ``ops`` (node ids, in the order of the output split).

    ``kernel`` is the merged (KH, KW); ``pads[i]`` are the (top, left, bottom, right) zeros
    added around op i's kernel; ``padding`` is the merged conv's input padding;
    ``channels[i]`` op i's output channels.
    """

    ops: tuple[int, ...]
    kernel: tuple[int, int]
    padding: tuple[int, int, int, int]
    pads: tuple[tuple[int, int, int, int], ...]
    channels: tuple[int, ...]
    in_channels: int

    @property
    def out_channels(self) -> int:
        """Output channels of the merged conv."""
        return sum(self.channels)


def merge_key(node) -> tuple | None:
    """What ops must share to merge (kind, dtype, output size, input, stride, ...), or None
    for an op that never merges. Ops with different keys cannot merge."""
    if node.kind != "conv2d" or not node.schedulable:
        return None
    if node.attrs.get("groups", 1) != 1 or node.attrs.get("data_layout", "NCHW") != "NCHW":
        return None
    return (node.dtype, _frozen(node.shape[2:])) + tuple(_frozen(node.attrs.get(k))
                                                        for k in _SAME_KEYS)


def _frozen(value):
    """A hashable copy of an attribute value (lists become tuples)."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    return value


def merge_plan(graph: OpGraph, ops: Sequence[int]) -> MergePlan | None:
    """Return the merge plan of ``ops``, or None when they cannot be merged exactly."""
    ops = tuple(sorted(ops))
    if len(ops) < 2:
        return None
    nodes = [graph.nodes[i] for i in ops]
    keys = {merge_key(n) for n in nodes}
    if len(keys) != 1 or None in keys:
        return None
    first = nodes[0]
    kh = max(n.attrs["kernel"][0] for n in nodes)
    kw = max(n.attrs["kernel"][1] for n in nodes)
    dil_h, dil_w = first.attrs.get("dilation", (1, 1))
    pads, merged_padding = [], None
    for node in nodes:
        dh, dw = kh - node.attrs["kernel"][0], kw - node.attrs["kernel"][1]
        if dh % 2 or dw % 2:
            return None  # the smaller kernel cannot be centred
        top, left = dh // 2, dw // 2
        pad = (top, left, dh - top, dw - left)
        t, l, b, r = node.attrs["padding"]
        # Padding the kernel by p zeros needs p * dilation more input padding.
        padding = (t + top * dil_h, l + left * dil_w, b + pad[2] * dil_h, r + pad[3] * dil_w)
        if merged_padding is None:
            merged_padding = padding
        elif padding != merged_padding:
            return None
        pads.append(pad)
    return MergePlan(ops=ops, kernel=(kh, kw), padding=merged_padding, pads=tuple(pads),
                     channels=tuple(int(n.attrs["channels"]) for n in nodes),
                     in_channels=int(first.attrs["in_channels"]))
