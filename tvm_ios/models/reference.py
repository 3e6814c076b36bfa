"""NumPy reference executor for a :class:`~tvm_ios.models.netdef.Net`.

Slow but simple and independent of TVM: it calibrates the random weights
(:mod:`tvm_ios.models.weights`) and is the oracle the Relax emitter is tested against. Parameters
are in the framework-neutral layout of the Net (conv OIHW + ``(O,)`` bias, linear ``(out, in)``).
"""
from __future__ import annotations

import logging
from typing import Callable, Mapping

import numpy as np

from .shapes import window_out

logger = logging.getLogger(__name__)

__all__ = ["run", "run_node", "conv2d"]


def _taps(xp: np.ndarray, kernel, stride, dilation, out_hw):
    """Yield ((ky, kx), strided view of the padded input seen by that kernel tap)."""
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel, stride, dilation, out_hw
    for ky in range(kh):
        for kx in range(kw):
            y0, x0 = ky * dh, kx * dw
            yield (ky, kx), xp[:, :, y0:y0 + sh * (oh - 1) + 1:sh, x0:x0 + sw * (ow - 1) + 1:sw]


def conv2d(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, stride=(1, 1), padding=(0, 0),
           dilation=(1, 1), groups: int = 1) -> np.ndarray:
    """Grouped, dilated 2-d convolution (NCHW input, OIHW weight), float32.

    Depthwise convolutions accumulate one broadcast multiply per kernel tap; the others are
    one batched matrix product over an im2col view (a plain product for 1x1 kernels).

    Parameters
    ----------
    x, w, b : numpy.ndarray
        Input, weight and optional ``(O,)`` bias.
    stride, padding, dilation : (int, int)
        Window step, symmetric zero padding and dilation.
    groups : int
        Number of channel groups.

    Returns
    -------
    numpy.ndarray
    """
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    og = o // groups
    oh = window_out(h, kh, stride[0], padding[0], dilation[0])
    ow = window_out(wd, kw, stride[1], padding[1], dilation[1])
    if (kh, kw) == (1, 1) and groups == 1 and tuple(padding) == (0, 0):
        xs = x[:, :, ::stride[0], ::stride[1]].reshape(n, c, oh * ow)
        out = np.matmul(w.reshape(o, c), xs).reshape(n, o, oh, ow)
    elif cg == 1 and og == 1:  # depthwise: broadcasting multiply-accumulate per tap
        xp = np.pad(x, ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
        out = np.zeros((n, o, oh, ow), dtype=np.float32)
        tmp = np.empty_like(out)
        for (ky, kx), view in _taps(xp, (kh, kw), stride, dilation, (oh, ow)):
            np.multiply(view, w[:, 0, ky, kx][None, :, None, None], out=tmp)
            out += tmp
    else:
        xp = np.pad(x, ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
        span = (dilation[0] * (kh - 1) + 1, dilation[1] * (kw - 1) + 1)
        win = np.lib.stride_tricks.sliding_window_view(xp, span, axis=(2, 3))
        win = win[:, :, ::stride[0], ::stride[1], ::dilation[0], ::dilation[1]][:, :, :oh, :ow]
        cols = win.reshape(n, groups, cg, oh, ow, kh, kw).transpose(1, 0, 3, 4, 2, 5, 6)
        cols = cols.reshape(groups, n * oh * ow, cg * kh * kw)
        wg = w.reshape(groups, og, cg * kh * kw).transpose(0, 2, 1)
        out = np.matmul(cols, wg).reshape(groups, n, oh, ow, og)
        out = out.transpose(1, 0, 4, 2, 3).reshape(n, o, oh, ow)
    if b is not None:
        out = out + b[None, :, None, None]
    return np.ascontiguousarray(out, dtype=np.float32)


def _pool(x: np.ndarray, attrs: dict, kind: str) -> np.ndarray:
    (kh, kw), (sh, sw), (ph, pw) = attrs["kernel"], attrs["stride"], attrs["padding"]
    ceil = attrs.get("ceil_mode", False)
    n, c, h, w = x.shape
    oh, ow = window_out(h, kh, sh, ph, 1, ceil), window_out(w, kw, sw, pw, 1, ceil)
    extra_h = max(0, (oh - 1) * sh + kh - h - 2 * ph)
    extra_w = max(0, (ow - 1) * sw + kw - w - 2 * pw)
    pads = ((0, 0), (0, 0), (ph, ph + extra_h), (pw, pw + extra_w))
    if kind == "max":
        xp = np.pad(x, pads, constant_values=-np.inf)
        return np.max([v for _, v in _taps(xp, (kh, kw), (sh, sw), (1, 1), (oh, ow))], axis=0)
    total = sum(v for _, v in _taps(np.pad(x, pads), (kh, kw), (sh, sw), (1, 1), (oh, ow)))
    if attrs["count_include_pad"]:
        return (total / (kh * kw)).astype(np.float32)
    ones = np.pad(np.ones((1, 1, h, w), np.float32), pads)
    count = sum(v for _, v in _taps(ones, (kh, kw), (sh, sw), (1, 1), (oh, ow)))
    return (total / count).astype(np.float32)


def _shift(x: np.ndarray, dy: int, dx: int) -> np.ndarray:
    out = np.zeros_like(x)
    h, w = x.shape[2:]
    out[:, :, :h - dy, :w - dx] = x[:, :, dy:, dx:]
    return out


def _activation(y: np.ndarray, act: str | None) -> np.ndarray:
    if act == "relu":
        return np.maximum(y, 0)
    if act == "relu6":
        return np.clip(y, 0, 6)
    return y


def run_node(node, args: list[np.ndarray], params: Mapping[str, np.ndarray]) -> np.ndarray:
    """Compute one node from its input arrays (and its parameters, looked up by name)."""
    op, a = node.op, node.attrs
    if op == "conv":
        y = conv2d(args[0], params[node.param_name("w")], params[node.param_name("b")],
                   a["stride"], a["padding"], a["dilation"], a["groups"])
        return _activation(y, a["act"])
    if op == "linear":
        return args[0] @ params[node.param_name("w")].T + params[node.param_name("b")]
    if op in ("relu", "relu6"):
        return _activation(args[0], op)
    if op in ("max_pool", "avg_pool"):
        return _pool(args[0], a, op[:3])
    if op == "global_avg_pool":
        return args[0].mean(axis=(2, 3), keepdims=True)
    if op == "concat":
        return np.concatenate(args, axis=a["axis"])
    if op in ("add", "mean"):
        total = sum(args[1:], args[0])
        return total / np.float32(len(args)) if op == "mean" else total
    if op == "shift":
        return _shift(args[0], a["dy"], a["dx"])
    if op == "flatten":
        return args[0].reshape(args[0].shape[0], -1)
    raise ValueError(f"reference executor: unsupported operator {op!r} (node {node.name})")


def run(net, params: Mapping[str, np.ndarray], data: np.ndarray,
        hook: Callable | None = None) -> np.ndarray:
    """Run ``net`` on ``data`` with NumPy and return the output.

    Parameters
    ----------
    net : Net
        The network.
    params : mapping of str to numpy.ndarray
        Parameters by full name, Net layout.
    data : numpy.ndarray
        Input of the shape of ``net.input_node``.
    hook : callable, optional
        ``hook(node, args) -> ndarray or None`` called before each node; a non-None return
        replaces the node's computation (used by weight calibration).

    Returns
    -------
    numpy.ndarray
    """
    if tuple(data.shape) != net.input_node.shape:
        raise ValueError(f"{net.name}: input shape {data.shape} != {net.input_node.shape}")
    values: dict[str, np.ndarray] = {}
    uses: dict[str, int] = {}
    for node in net:
        for i in node.inputs:
            uses[i] = uses.get(i, 0) + 1
    out_name = net.output_node.name
    for node in net:
        args = [values[i] for i in node.inputs]
        result = hook(node, args) if hook else None
        if node.op == "input":
            result = np.asarray(data, dtype=np.float32)
        elif result is None:
            result = run_node(node, args, params)
        values[node.name] = np.asarray(result, dtype=np.float32)
        for i in node.inputs:  # free what no later node reads
            uses[i] -= 1
            if uses[i] == 0 and i != out_name:
                del values[i]
    return values[out_name]
