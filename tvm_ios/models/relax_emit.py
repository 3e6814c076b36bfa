"""Emit a Relax module from a :class:`~tvm_ios.models.netdef.Net`.

``to_relax`` builds ``main(data, <params...>)`` with ``relax.BlockBuilder`` in one dataflow
block, attribute ``num_input = 1``, and returns the parameters separately (bind them with
``tvm_ios._tvm.bind_params`` before compiling, or pass them after the input).

Patterns a graph extractor can rely on
--------------------------------------
* A conv node becomes, in consecutive bindings::

      <node>      = R.nn.conv2d(x, <node>_w, ...)          # NCHW / OIHW
      <node>_bias = R.add(<node>, <node>_b)                # <node>_b has shape (1, C, 1, 1)
      <node>_relu = R.nn.relu(<node>_bias)                 # only with act="relu"
      <node>_relu6 = R.clip(<node>_bias, 0, 6)             # only with act="relu6"

  The bias is reshaped to ``(1, C, 1, 1)`` on the host (the ``params`` dict holds it in that
  shape), so the chain has no weight-only reshape in it; after ``BindParams`` it is
  ``add(conv2d, const[1, C, 1, 1])``, the same as an ONNX import after ``FoldConstant``.
* A linear node is ``R.matmul(x, <node>_w)`` with the weight stored transposed ``(in, out)``
  on the host, then ``R.add(·, <node>_b)`` with an ``(out,)`` bias.
* ``add`` / ``mean`` of k inputs are left-to-right ``R.add`` chains (``mean`` ends with
  ``R.multiply`` by ``1/k``); ``global_avg_pool`` is ``adaptive_avg_pool2d(output_size=1)``;
  ``shift`` is ``strided_slice`` + ``nn.pad``.
* The last binding of every node is named after the node; Relax's shape of it is checked
  against the Net's inferred shape.
"""
from __future__ import annotations

import logging
from typing import Callable

import numpy as np
import tvm
from tvm import relax

from .weights import init_params

logger = logging.getLogger(__name__)

__all__ = ["to_relax", "relax_layout"]


def relax_layout(net, params: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Convert Net-layout parameters to the shapes the emitted ``main`` takes.

    Conv biases become ``(1, C, 1, 1)``, linear weights ``(in, out)``; the rest is unchanged.
    """
    out: dict[str, np.ndarray] = {}
    for node in net:
        for role in node.params:
            name = node.param_name(role)
            if name not in params:
                raise KeyError(f"{net.name}: missing parameter {name!r}")
            value = np.ascontiguousarray(params[name], dtype=np.float32)
            if node.op == "conv" and role == "b":
                value = value.reshape(1, -1, 1, 1)
            elif node.op == "linear" and role == "w":
                value = np.ascontiguousarray(value.T)
            out[name] = value
    return out


def _shape(var: relax.Expr) -> tuple[int, ...]:
    return tuple(int(d) for d in var.ty.shape)


class _Emitter:
    """Walks the Net in order and emits one or more bindings per node."""

    def __init__(self, bb: relax.BlockBuilder, pvars: dict[str, relax.Var]):
        self.bb = bb
        self.pvars = pvars

    def emit(self, node, args: list[relax.Expr]) -> relax.Var:
        return _EMIT[node.op](self, node, args)

    def _emit(self, expr: relax.Expr, name: str) -> relax.Var:
        return self.bb.emit(expr, name_hint=name)

    def conv(self, node, args):
        a = node.attrs
        y = self._emit(relax.op.nn.conv2d(args[0], self.pvars[node.param_name("w")],
                                          strides=a["stride"], padding=a["padding"],
                                          dilation=a["dilation"], groups=a["groups"]),
                       node.name)
        y = self._emit(relax.op.add(y, self.pvars[node.param_name("b")]), f"{node.name}_bias")
        if a["act"] == "relu":
            y = self._emit(relax.op.nn.relu(y), f"{node.name}_relu")
        elif a["act"] == "relu6":
            y = self._emit(relax.op.clip(y, 0.0, 6.0), f"{node.name}_relu6")
        return y

    def linear(self, node, args):
        y = self._emit(relax.op.matmul(args[0], self.pvars[node.param_name("w")]), node.name)
        return self._emit(relax.op.add(y, self.pvars[node.param_name("b")]), f"{node.name}_bias")

    def relu(self, node, args):
        return self._emit(relax.op.nn.relu(args[0]), node.name)

    def relu6(self, node, args):
        return self._emit(relax.op.clip(args[0], 0.0, 6.0), node.name)

    def max_pool(self, node, args):
        a = node.attrs
        return self._emit(relax.op.nn.max_pool2d(args[0], a["kernel"], a["stride"],
                                                 a["padding"], ceil_mode=a["ceil_mode"]),
                          node.name)

    def avg_pool(self, node, args):
        a = node.attrs
        return self._emit(relax.op.nn.avg_pool2d(args[0], a["kernel"], a["stride"],
                                                 a["padding"],
                                                 count_include_pad=a["count_include_pad"]),
                          node.name)

    def global_avg_pool(self, node, args):
        return self._emit(relax.op.nn.adaptive_avg_pool2d(args[0], output_size=1), node.name)

    def concat(self, node, args):
        return self._emit(relax.op.concat(args, axis=node.attrs["axis"]), node.name)

    def add(self, node, args, final_name=None):
        acc = args[0]
        for i, arg in enumerate(args[1:], start=1):
            last = i == len(args) - 1
            name = (final_name or node.name) if last else f"{node.name}_sum{i}"
            acc = self._emit(relax.op.add(acc, arg), name)
        return acc

    def mean(self, node, args):
        total = self.add(node, args, final_name=f"{node.name}_sum")
        scale = relax.const(1.0 / len(args), "float32")
        return self._emit(relax.op.multiply(total, scale), node.name)

    def shift(self, node, args):
        dy, dx = node.attrs["dy"], node.attrs["dx"]
        _, _, h, w = node.shape
        y = self._emit(relax.op.strided_slice(args[0], axes=[2, 3], begin=[dy, dx],
                                              end=[h, w]), f"{node.name}_slice")
        return self._emit(relax.op.nn.pad(y, (0, 0, 0, 0, 0, dy, 0, dx)), node.name)

    def flatten(self, node, args):
        return self._emit(relax.op.reshape(args[0], node.shape), node.name)


_EMIT: dict[str, Callable] = {op: getattr(_Emitter, op) for op in (
    "conv", "linear", "relu", "relu6", "max_pool", "avg_pool", "global_avg_pool", "concat",
    "add", "mean", "shift", "flatten")}


def to_relax(net, batch_size: int | None = None, params: dict[str, np.ndarray] | None = None,
             seed: int = 0, calibrate: bool = True) -> tuple[tvm.IRModule, dict[str, np.ndarray]]:
    """Build the Relax module of ``net``.

    Parameters
    ----------
    net : Net
        The network definition.
    batch_size : int, optional
        Batch size of ``data``; default the net's own.
    params : dict, optional
        Net-layout parameters (:func:`~tvm_ios.models.weights.init_params` output); default
        ``init_params(net, seed)``.
    seed : int
        Seed for the default parameters.
    calibrate : bool
        Calibrate the default parameters (a NumPy forward pass, seconds at published sizes);
        False gives plain He-normal weights, enough when only timings matter.

    Returns
    -------
    mod : tvm.IRModule
        ``main(data, <params...>)`` with attribute ``num_input = 1``.
    params : dict of str to numpy.ndarray
        Parameter name to value in the Relax layout (see :func:`relax_layout`), in the order of
        ``main``'s parameters after ``data``.
    """
    if batch_size is not None and batch_size != net.batch_size:
        net = net.resized(batch_size=batch_size)
    if params is None:
        params = init_params(net, seed, calibrate_weights=calibrate)
    params = relax_layout(net, params)
    data = net.input_node
    data_var = relax.Var(data.name, relax.TensorType(data.shape, "float32"))
    pvars = {name: relax.Var(name, relax.TensorType(value.shape, "float32"))
             for name, value in params.items()}
    bb = relax.BlockBuilder()
    emitter = _Emitter(bb, pvars)
    with bb.function("main", [data_var, *pvars.values()], attrs={"num_input": 1}):
        with bb.dataflow():
            values: dict[str, relax.Expr] = {data.name: data_var}
            for node in net:
                if node.op == "input":
                    continue
                var = emitter.emit(node, [values[i] for i in node.inputs])
                if _shape(var) != node.shape:
                    raise RuntimeError(f"{net.name}: Relax infers shape {_shape(var)} for node "
                                       f"{node.name!r} ({node.op}), the Net {node.shape}")
                values[node.name] = var
            out = bb.emit_output(values[net.output_node.name], name_hint="output")
        bb.emit_func_output(out)
    mod = bb.get()
    logger.debug("emitted %s: %d nodes, %d params", net.name, len(net), len(params))
    return mod, params
