"""Output-shape rules for the operators of a :class:`~tvm_ios.models.netdef.Net`.

Every rule takes the node attributes and the input shapes (NCHW, batch included) and returns
the output shape, or raises :class:`ValueError` with the reason (a spatial size that shrank to
zero, channels that do not match, ...). The rules follow PyTorch's conventions, which Relax's
own shape inference matches for the attributes used here (``relax_emit`` checks it per node).
"""
from __future__ import annotations

import logging
import math
from typing import Callable, Sequence

logger = logging.getLogger(__name__)

Shape = tuple[int, ...]

__all__ = ["OPS", "infer_shape", "param_shapes", "window_out"]


def window_out(size: int, kernel: int, stride: int, pad: int, dilation: int = 1,
               ceil_mode: bool = False) -> int:
    """Output length of a sliding window (convolution or pooling) along one axis.

    Parameters
    ----------
    size, kernel, stride, pad, dilation : int
        Input length, window length, step, zero padding on each side and window dilation.
    ceil_mode : bool
        Round the number of steps up instead of down (PyTorch rule: the last window must
        start inside the input or the left padding).

    Returns
    -------
    int
        The output length; may be ``<= 0`` when the input is too small.
    """
    span = dilation * (kernel - 1) + 1
    if ceil_mode:
        out = math.ceil((size + 2 * pad - span) / stride) + 1
        if (out - 1) * stride >= size + pad:
            out -= 1
        return out
    return (size + 2 * pad - span) // stride + 1


def _spatial(shape: Shape, attrs: dict, dilation=(1, 1), ceil_mode=False) -> tuple[int, int]:
    kh, kw = attrs["kernel"]
    sh, sw = attrs["stride"]
    ph, pw = attrs["padding"]
    oh = window_out(shape[2], kh, sh, ph, dilation[0], ceil_mode)
    ow = window_out(shape[3], kw, sw, pw, dilation[1], ceil_mode)
    if oh < 1 or ow < 1:
        raise ValueError(f"input {shape[2]}x{shape[3]} too small for window {kh}x{kw} "
                         f"(stride {sh}x{sw}, padding {ph}x{pw}): output {oh}x{ow}")
    return oh, ow


def _conv(attrs: dict, shapes: Sequence[Shape]) -> Shape:
    (x,) = shapes
    if len(x) != 4:
        raise ValueError(f"conv expects an NCHW input, got shape {x}")
    if x[1] % attrs["groups"] or attrs["out_channels"] % attrs["groups"]:
        raise ValueError(f"groups={attrs['groups']} does not divide in_channels={x[1]} "
                         f"and out_channels={attrs['out_channels']}")
    oh, ow = _spatial(x, attrs, attrs["dilation"])
    return (x[0], attrs["out_channels"], oh, ow)


def _pool(attrs: dict, shapes: Sequence[Shape]) -> Shape:
    (x,) = shapes
    ph, pw = attrs["padding"]
    kh, kw = attrs["kernel"]
    if 2 * ph > kh or 2 * pw > kw:
        raise ValueError(f"pool padding {ph}x{pw} larger than half the window {kh}x{kw}")
    oh, ow = _spatial(x, attrs, ceil_mode=attrs.get("ceil_mode", False))
    return (x[0], x[1], oh, ow)


def _same(attrs: dict, shapes: Sequence[Shape]) -> Shape:
    return tuple(shapes[0])


def _elementwise(attrs: dict, shapes: Sequence[Shape]) -> Shape:
    if len(shapes) < 2:
        raise ValueError(f"needs at least 2 inputs, got {len(shapes)}")
    if any(tuple(s) != tuple(shapes[0]) for s in shapes):
        raise ValueError(f"inputs have different shapes: {[tuple(s) for s in shapes]}")
    return tuple(shapes[0])


def _concat(attrs: dict, shapes: Sequence[Shape]) -> Shape:
    if not shapes:
        raise ValueError("concat needs at least one input")
    first = shapes[0]
    for s in shapes:
        if len(s) != len(first) or s[:1] + s[2:] != first[:1] + first[2:]:
            raise ValueError(f"concat inputs differ outside the channel axis: "
                             f"{[tuple(t) for t in shapes]}")
    return (first[0], sum(s[1] for s in shapes)) + tuple(first[2:])


def _global_pool(attrs: dict, shapes: Sequence[Shape]) -> Shape:
    (x,) = shapes
    return (x[0], x[1], 1, 1)


def _flatten(attrs: dict, shapes: Sequence[Shape]) -> Shape:
    (x,) = shapes
    return (x[0], math.prod(x[1:]))


def _linear(attrs: dict, shapes: Sequence[Shape]) -> Shape:
    (x,) = shapes
    if len(x) != 2:
        raise ValueError(f"linear expects a (batch, features) input, got shape {x}; flatten first")
    return (x[0], attrs["out_features"])


_RULES: dict[str, Callable[[dict, Sequence[Shape]], Shape]] = {
    "conv": _conv,
    "relu": _same,
    "relu6": _same,
    "shift": _same,
    "max_pool": _pool,
    "avg_pool": _pool,
    "global_avg_pool": _global_pool,
    "concat": _concat,
    "add": _elementwise,
    "mean": _elementwise,
    "flatten": _flatten,
    "linear": _linear,
}

#: Operator kinds a Net may contain (``input`` has no rule: its shape is given).
OPS = ("input",) + tuple(_RULES)


def infer_shape(op: str, attrs: dict, in_shapes: Sequence[Shape]) -> Shape:
    """Output shape of operator ``op`` with ``attrs`` applied to inputs of ``in_shapes``.

    Parameters
    ----------
    op : str
        One of :data:`OPS` other than ``"input"``.
    attrs : dict
        The node attributes, as stored by the :class:`Net` builder methods.
    in_shapes : sequence of tuple of int
        Shapes of the inputs, in order.

    Returns
    -------
    tuple of int

    Raises
    ------
    ValueError
        When ``op`` is unknown or the inputs do not fit.
    """
    if op not in _RULES:
        raise ValueError(f"unknown operator kind {op!r}; known: {sorted(_RULES)}")
    return tuple(int(d) for d in _RULES[op](attrs, [tuple(s) for s in in_shapes]))


def param_shapes(op: str, attrs: dict, in_shapes: Sequence[Shape]) -> dict[str, Shape]:
    """Parameter shapes by role of operator ``op`` on inputs of ``in_shapes``.

    Conv: ``w`` (O, I / groups, kh, kw) and ``b`` (O,); linear: ``w`` (out, in) and
    ``b`` (out,); other operators have none.
    """
    if op == "conv":
        out, groups = attrs["out_channels"], attrs["groups"]
        return {"w": (out, in_shapes[0][1] // groups) + tuple(attrs["kernel"]), "b": (out,)}
    if op == "linear":
        out = attrs["out_features"]
        return {"w": (out, in_shapes[0][1]), "b": (out,)}
    return {}
