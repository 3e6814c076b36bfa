"""The layer graph GraphTurbo groups: units of the op graph plus the free activation ops.

GraphTurbo's initial sub-graphs are *layers* (a conv with its bias and ReLU, a pool, a
residual add with its ReLU, ...). :func:`layer_graph` takes the units of
:func:`tvm_ios.graph.extract.extract` and adds every free op that computes on activations
(residual adds, concatenations, reshapes) as a layer of its own, straight chains of them
joined, so each layer has exactly one output tensor and the edges are real data flow.
Bindings that only touch weights are left out (they are emitted where first needed).
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

from tvm import relax

from .. import _tvm
from ..graph.extract import extract
from ..graph.opgraph import OpGraph, OpNode
from ..graph.opinfo import EPILOGUES, itemsize
from .tensor_regions import BindInfo

__all__ = ["LayerGraph", "layer_graph", "GraphTurboError"]

logger = logging.getLogger(__name__)

_WINDOW = {"relax.nn.conv2d", "relax.nn.max_pool2d", "relax.nn.avg_pool2d"}
_BATCH = {"relax.matmul", "relax.linear", "relax.nn.softmax", "relax.nn.log_softmax"}
_PREFIX = {"relax.nn.adaptive_avg_pool2d", "relax.reshape", "relax.flatten"}


@_tvm.register_error
class GraphTurboError(ValueError):
    """Input GraphTurbo cannot schedule (dynamic shapes, a local buffer too small, ...)."""


@dataclass
class LayerGraph:
    """Layers (as an :class:`OpGraph`) with the bindings each is made of.

    ``bindings[i]`` lists the binding indices of layer i; ``infos`` maps each activation
    binding index to its :class:`BindInfo`; ``outputs`` are layers whose output leaves the
    dataflow block or is returned.
    """

    graph: OpGraph
    func: relax.Function
    block_index: int
    bindings: list = field(default_factory=list)
    infos: dict = field(default_factory=dict)
    outputs: list = field(default_factory=list)
    input_bytes: int = 0


def layer_graph(func: relax.Function, name: str = "main") -> LayerGraph:
    """Build the layer graph of a Relax function (see the module docstring)."""
    ext = extract(func, name=name)
    block = func.body.blocks[ext.block_index]
    bindings = list(block.bindings)
    acts = _activation_vars(func, bindings)
    pos = {b.var: i for i, b in enumerate(bindings)}
    infos = {}
    for i, b in enumerate(bindings):
        if b.var in acts:
            if _tvm.shape_of(b.var) is None and isinstance(b.var.ty, relax.TensorType):
                raise GraphTurboError(
                    f"GraphTurbo: binding {_tvm.var_name(b.var)} (%{i}) of {name} has a "
                    f"dynamic or unknown shape {b.var.ty}; GraphTurbo needs static shapes, "
                    "as the paper does")
            infos[i] = _bind_info(i, b, acts, pos)
    layer_of: dict[int, int] = {}
    groups: list[list[int]] = []
    for unit in ext.units:
        unit = [i for i in unit if i in infos]
        if not unit:
            continue
        for i in unit:
            layer_of[i] = len(groups)
        groups.append(unit)
    uses = _use_counts(bindings)
    for i in sorted(infos):
        if i in layer_of:
            continue
        srcs = [int(s[1:]) for _, s, _ in infos[i].args if s.startswith("%")]
        prev = layer_of.get(srcs[0]) if len(srcs) == 1 else None
        if (prev is not None and len(groups[prev]) and all(
                infos[j].rule != 'window' for j in groups[prev]) and groups[prev][-1] == srcs[0]
                and uses.get(srcs[0], 0) == 1):
            groups[prev].append(i)
            layer_of[i] = prev
        else:
            layer_of[i] = len(groups)
            groups.append([i])
    groups.sort(key=lambda g: g[-1])
    return _finish(func, ext.block_index, bindings, groups, infos, name)


def _finish(func, block_index, bindings, groups, infos, name) -> LayerGraph:
    layer_of = {i: k for k, g in enumerate(groups) for i in g}
    nodes, edges = [], set()
    for k, group in enumerate(groups):
        nodes.append(_layer_node(bindings, group, infos))
        for i in group:
            for _, src, _ in infos[i].args:
                if src.startswith("%") and layer_of[int(src[1:])] != k:
                    edges.add((layer_of[int(src[1:])], k))
    names = set()
    for node in nodes:
        while node.name in names:
            node.name += "_"
        names.add(node.name)
    outputs = [k for k, g in enumerate(groups)
               if not isinstance(bindings[g[-1]].var, relax.DataflowVar)]
    inputs = {src: shape for g in groups for i in g for _, src, shape in infos[i].args
              if src.startswith("param:")}
    in_bytes = sum(math.prod(shape) * 4 for shape in inputs.values())
    graph = OpGraph(nodes, edges, name=name)
    return LayerGraph(graph, func, block_index, groups, infos, outputs, in_bytes)


def _layer_node(bindings, group, infos) -> OpNode:
    last = bindings[group[-1]].var
    shape = _tvm.shape_of(last) or ()
    dtype = _tvm.dtype_of(last) or "float32"
    flops, kinds = 0, []
    for i in group:
        value = bindings[i].value
        op = _tvm.op_name(value) or type(value).__name__
        kinds.append(op.split(".")[-1])
        flops += _flops(value, bindings[i].var, op)
    kind = kinds[0] if kinds[0] in ("conv2d", "max_pool2d", "avg_pool2d", "matmul") \
        else "+".join(dict.fromkeys(kinds))
    rules = sorted({infos[i].rule for i in group})
    return OpNode(name=_tvm.var_name(last), kind=kind, shape=shape, dtype=dtype,
                  flops=int(flops), bytes=math.prod(shape) * itemsize(dtype),
                  attrs={"rules": rules, "ops": kinds})


def _flops(value, var, op) -> int:
    out = math.prod(_tvm.shape_of(var) or (0,))
    if op == "relax.nn.conv2d":
        w = _tvm.shape_of(value.args[1])
        return 2 * out * w[1] * w[2] * w[3]
    if op in ("relax.matmul", "relax.linear"):
        return 2 * out * (_tvm.shape_of(value.args[0]) or (1,))[-1]
    return out


def _activation_vars(func, bindings) -> set:
    params = list(func.params)
    if func.attrs is not None and "num_input" in func.attrs:
        params = params[: int(func.attrs["num_input"])]
    else:
        params = params[:1]
    acts = set(params)
    for b in bindings:
        found = []
        relax.analysis.post_order_visit(b.value, lambda n: found.append(n)
                                        if isinstance(n, relax.Var) and n in acts else None)
        if found:
            acts.add(b.var)
    return acts


def _use_counts(bindings) -> dict:
    pos = {b.var: i for i, b in enumerate(bindings)}
    counts: dict[int, int] = {}
    for b in bindings:
        seen = []
        relax.analysis.post_order_visit(b.value, lambda n: seen.append(pos[n])
                                        if isinstance(n, relax.Var) and n in pos else None)
        for i in seen:
            counts[i] = counts.get(i, 0) + 1
    for i, b in enumerate(bindings):
        if not isinstance(b.var, relax.DataflowVar):
            counts[i] = counts.get(i, 0) + 1
    return counts


def _operands(value, acts, pos) -> list:
    """Activation operands of a call: (position, source key, shape)."""
    out = []
    if isinstance(value, relax.Var) and value in acts:
        key = f"%{pos[value]}" if value in pos else f"param:{_tvm.var_name(value)}"
        return [((0, -1), key, _tvm.shape_of(value) or ())]
    if not isinstance(value, relax.Call):
        return out
    for k, arg in enumerate(value.args):
        fields = arg.fields if isinstance(arg, relax.Tuple) else [arg]
        for j, f in enumerate(fields):
            if isinstance(f, relax.Var) and f in acts:
                key = f"%{pos[f]}" if f in pos else f"param:{_tvm.var_name(f)}"
                where = (k, j) if isinstance(arg, relax.Tuple) else (k, -1)
                out.append((where, key, _tvm.shape_of(f) or ()))
    return out


def _bind_info(index, binding, acts, pos) -> BindInfo:
    value = binding.value
    op = _tvm.op_name(value)
    out_shape = _tvm.shape_of(binding.var) or ()
    args = _operands(value, acts, pos)
    info = BindInfo(index, "opaque", out_shape, args)
    if op in _WINDOW:
        attrs = _tvm.attrs_dict(value)
        layout = attrs.get("data_layout", attrs.get("layout", "NCHW"))
        ceil = attrs.get("ceil_mode", False) and op != "relax.nn.max_pool2d"
        if layout == "NCHW" and not ceil and len(args) == 1 \
                and args[0][0] == (0, -1) and attrs.get("kernel_layout", "OIHW") == "OIHW":
            kernel = (_tvm.shape_of(value.args[1])[2:] if op == "relax.nn.conv2d"
                      else tuple(attrs["pool_size"]))
            pad = list(attrs["padding"]) + [0] * 4
            info.rule = "window"
            info.window = {"kernel": list(kernel), "strides": list(attrs["strides"]),
                           "padding": [pad[0], pad[1], pad[2], pad[3]],
                           "dilation": list(attrs["dilation"])}
    elif op in EPILOGUES or isinstance(value, relax.Var):
        info.rule = "map"
    elif op == "relax.concat":
        info.rule = "map"
        info.axis = int(_tvm.attrs_dict(value)["axis"]) % len(out_shape)
    elif op in _BATCH and len(out_shape) >= 1:
        info.rule = "batch"
    elif op in _PREFIX and len(out_shape) >= 1:
        info.rule = "prefix"
    return info
