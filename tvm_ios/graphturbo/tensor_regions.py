"""Rectangular regions of tensors and how an op maps an output region to its input regions.

A *box* is a tuple of ``(lo, hi)`` pairs, one per dimension. Each activation binding of a
model is described by a :class:`BindInfo` (plain data); :func:`input_box` says which part of
an input the op needs to produce a box of its output. Convolutions and pools (``window``)
need a halo along H and W; elementwise ops and concatenations (``map``) need the same box
(broadcast dimensions whole); ``prefix`` ops (reshape, flatten, global pools) can be cut
along the leading dimensions their input and output share; ``batch`` ops (matmul, softmax)
only along the batch dimension; ``opaque`` ones not at all. An op that cannot produce part
of a dimension computes it whole (:func:`producible`). Pure Python, no TVM.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["BindInfo", "full_box", "box_bytes", "box_volume", "intersect", "hull",
           "input_box", "window_range", "supports", "producible"]

Box = tuple


@dataclass
class BindInfo:
    """What the splitter needs to know about one activation binding.

    Parameters
    ----------
    index : int
        Binding index in the dataflow block.
    rule : str
        ``"window"``, ``"map"``, ``"prefix"``, ``"batch"`` or ``"opaque"``.
    out_shape : tuple of int
        Output shape.
    args : list of (int, str, tuple)
        Activation operands: (argument position, source key, shape). Source keys are
        ``"%i"`` for binding ``i`` and ``"param:name"`` for function inputs.
    window : dict
        For ``window``: ``kernel`` (kh, kw), ``strides``, ``padding`` (top, left, bottom,
        right), ``dilation``.
    axis : int or None
        For a concatenation, its axis.
    """

    index: int
    rule: str
    out_shape: tuple
    args: list = field(default_factory=list)
    window: dict = field(default_factory=dict)
    axis: int | None = None


def full_box(shape) -> Box:
    """The box covering a whole tensor."""
    return tuple((0, int(n)) for n in shape)


def box_volume(box: Box) -> int:
    """Number of elements in a box."""
    return math.prod(hi - lo for lo, hi in box)


def box_bytes(box: Box, itemsize: int = 4) -> int:
    """Bytes of a box."""
    return box_volume(box) * itemsize


def intersect(a: Box, b: Box) -> Box | None:
    """Intersection of two boxes, or None when empty."""
    out = tuple((max(x0, y0), min(x1, y1)) for (x0, x1), (y0, y1) in zip(a, b))
    return None if any(lo >= hi for lo, hi in out) else out


def hull(a: Box | None, b: Box) -> Box:
    """Smallest box holding both (``a`` may be None)."""
    if a is None:
        return b
    return tuple((min(x0, y0), max(x1, y1)) for (x0, x1), (y0, y1) in zip(a, b))


def window_range(lo: int, hi: int, kernel: int, stride: int, pad: int, dilation: int,
                 size_in: int) -> tuple[int, int, int, int]:
    """Input rows ``[lo_in, hi_in)`` and paddings that produce output rows ``[lo, hi)``.

    Returns ``(lo_in, hi_in, pad_lo, pad_hi)``: the clipped input range and the zero
    padding that replaces the rows clipped away at the tensor's real borders.
    """
    need_lo = lo * stride - pad
    need_hi = (hi - 1) * stride - pad + (kernel - 1) * dilation + 1
    lo_in, hi_in = max(need_lo, 0), min(need_hi, size_in)
    return lo_in, hi_in, lo_in - need_lo, need_hi - hi_in


def input_box(info: BindInfo, arg_shape: tuple, out_box: Box) -> Box:
    """Box of an operand (of shape ``arg_shape``) needed to compute ``out_box``."""
    if info.rule == "window":
        box = [out_box[0], (0, arg_shape[1])]
        for dim, k in ((2, 0), (3, 1)):
            lo, hi = out_box[dim]
            w = info.window
            pad = w["padding"][k]
            lo_in, hi_in, _, _ = window_range(lo, hi, w["kernel"][k], w["strides"][k], pad,
                                              w["dilation"][k], arg_shape[dim])
            box.append((lo_in, hi_in))
        return tuple(box)
    if info.rule == "map":
        offset = len(info.out_shape) - len(arg_shape)
        box = []
        for dim, size in enumerate(arg_shape):
            out_dim = dim + offset
            if size == 1 and info.out_shape[out_dim] != 1:
                box.append((0, 1))
            elif info.axis is not None and out_dim == info.axis:
                box.append((0, size))
            else:
                box.append(out_box[out_dim])
        return tuple(box)
    if info.rule in ("batch", "prefix"):
        box = list(full_box(arg_shape))
        for dim in range(_shared_prefix(info, arg_shape) if info.rule == "prefix" else 1):
            if dim < len(arg_shape) and arg_shape[dim] == info.out_shape[dim]:
                box[dim] = out_box[dim]
        return tuple(box)
    if tuple(out_box) != full_box(info.out_shape):
        raise ValueError(f"binding %{info.index} ({info.rule}) cannot be split")
    return full_box(arg_shape)


def supports(info: BindInfo, dim: int) -> bool:
    """Whether the op can produce a part of its output cut along ``dim``."""
    if info.rule == "window":
        return dim in (0, 2, 3)
    if info.rule == "map":
        if info.axis is not None and dim == info.axis:
            return False
        rank = len(info.out_shape)
        return all(dim < rank - len(s) or s[dim - rank + len(s)] in (1, info.out_shape[dim])
                   for _, _, s in info.args)
    if info.rule == "batch":
        return dim == 0 and all(s and s[0] == info.out_shape[0] for _, _, s in info.args)
    if info.rule == "prefix":
        return all(dim < _shared_prefix(info, s) for _, _, s in info.args)
    return False


def _shared_prefix(info: BindInfo, arg_shape: tuple) -> int:
    """Number of leading dimensions an operand shares, size for size, with the output."""
    count = 0
    for a, b in zip(arg_shape, info.out_shape):
        if a != b:
            break
        count += 1
    return count


def producible(info: BindInfo, box: Box) -> Box:
    """``box`` widened to what the op can produce: whole along dimensions it cannot cut."""
    full = full_box(info.out_shape)
    return tuple(part if part == whole or supports(info, dim) else whole
                 for dim, (part, whole) in enumerate(zip(box, full)))
