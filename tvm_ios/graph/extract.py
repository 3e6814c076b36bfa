"""Extract the :class:`OpGraph` of a Relax function: schedulable units and their edges.

Works on high-level Relax (before legalization), grouping bindings the way TVM's FuseOps
would: an anchor (conv2d, pool, matmul) plus the elementwise epilogue ops that only it
feeds (bias add, relu). A depthwise conv followed by the 1x1 conv that alone reads it is
one ``sepconv`` unit. Free ops (concat, split, reshape, residual adds) only carry edges.
Ops the extractor does not know become unschedulable units with a warning, never dropped.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

from tvm import relax

from .. import _tvm
from .analysis import ancestors
from .opgraph import OpGraph, OpNode
from .opinfo import ANCHORS, EPILOGUES, FREE, anchor_flops, anchor_kind, itemsize

__all__ = ["Extraction", "extract", "op_graph", "dataflow_block_index"]

logger = logging.getLogger(__name__)


@dataclass
class Extraction:
    """An op graph with the map back to the Relax bindings it came from.

    ``units[i]`` lists the indices (into ``block.bindings``) of unit i's bindings in order;
    ``block_index`` is the dataflow block of ``func.body.blocks`` that was extracted.
    """

    graph: OpGraph
    func: relax.Function
    block_index: int
    units: list[list[int]] = field(default_factory=list)


def dataflow_block_index(func: relax.Function) -> int:
    """Index of the dataflow block holding the model (the one with most bindings)."""
    blocks = list(func.body.blocks)
    candidates = [i for i, b in enumerate(blocks) if isinstance(b, relax.DataflowBlock)]
    if not candidates:
        raise ValueError("op_graph: the function has no dataflow block; "
                         "build the model inside `with bb.dataflow():`")
    return max(candidates, key=lambda i: len(blocks[i].bindings))


def op_graph(mod_or_func, func_name: str = "main") -> OpGraph:
    """The op graph of a Relax function, or of ``mod[func_name]`` of a module.

    Units are fused conv(+bias+relu), separable convs, pools and matmuls; free ops (concat,
    split, reshape, residual adds) only carry edges; unknown ops become unschedulable units,
    with a warning (see the module docstring).

    Parameters
    ----------
    mod_or_func : IRModule or relax.Function
        The module (its ``func_name``) or the function.
    func_name : str
        The function of a module, and the graph's name.

    Returns
    -------
    OpGraph
        Its units and their dependences, in the function's order.
    """
    func = mod_or_func[func_name] if hasattr(mod_or_func, "functions") else mod_or_func
    return extract(func, name=func_name).graph


def extract(func: relax.Function, name: str = "main") -> Extraction:
    """Extract the op graph of a Relax function (see the module docstring)."""
    block_index = dataflow_block_index(func)
    bindings = list(func.body.blocks[block_index].bindings)
    state = _Walker(bindings, _use_counts(func))
    for index, binding in enumerate(bindings):
        state.visit(index, binding)
    return state.finish(func, block_index, name)


def _use_counts(func: relax.Function) -> dict:
    counts: dict = {}

    def visit(node):
        if isinstance(node, relax.Var):
            counts[node] = counts.get(node, 0) + 1
    for block in func.body.blocks:
        for binding in block.bindings:
            relax.analysis.post_order_visit(binding.value, visit)
    relax.analysis.post_order_visit(func.body.body, visit)
    return counts


def _tensor_args(call: relax.Call) -> list[relax.Expr]:
    args = []
    for arg in call.args:
        if isinstance(arg, relax.Tuple):
            args.extend(arg.fields)
        else:
            args.append(arg)
    return args


class _Walker:
    """Assigns each binding to a unit (anchor or epilogue) or to the free data flow."""

    def __init__(self, bindings, uses):
        self.bindings, self.uses = bindings, uses
        self.unit_of_var: dict = {}      # var -> unit id whose output it is (open for epilogue)
        self.sources: dict = {}          # var -> frozenset of unit ids feeding it
        self.units: list[list[int]] = []
        self.nodes: list[OpNode] = []
        self.edges: set[tuple[int, int]] = set()
        self.joins: list[frozenset] = []
        self.var_index: dict = {}        # var -> binding index (stable names for attrs)

    def _srcs(self, expr) -> frozenset:
        out: set = set()

        def visit(node):
            if isinstance(node, relax.Var):
                out.update(self.sources.get(node, ()))
        relax.analysis.post_order_visit(expr, visit)
        return frozenset(out)

    def visit(self, index: int, binding) -> None:
        var, value = binding.var, binding.value
        self.var_index[var] = index
        op = _tvm.op_name(value)
        if op in ANCHORS:
            self._fuse_or_new(index, var, value, op)
        elif op in EPILOGUES and self._epilogue_of(value) is not None:
            unit = self._epilogue_of(value)
            self._extend(unit, index, var, value, op)
        elif op in FREE or op in EPILOGUES or not isinstance(value, relax.Call):
            srcs = self._srcs(value)
            self.sources[var] = srcs
            if len(srcs) > 1 and self.uses.get(var, 0) > 0:
                self.joins.append(srcs)
        else:
            logger.warning("OpGraph: op %s (binding %s) is not known to the extractor; it "
                           "is kept as an unschedulable unit that runs alone", op,
                           _tvm.var_name(var))
            self._new_unit(index, var, value, kind=str(op), schedulable=False,
                           flops=math.prod(_tvm.shape_of(var) or (0,)))

    def _var_key(self, var) -> str:
        """A stable identity for a tensor: its binding index or, for a parameter, its name."""
        if var in self.var_index:
            return f"%{self.var_index[var]}"
        return f"param:{_tvm.var_name(var)}"

    # -- units ----------------------------------------------------------------------------
    def _epilogue_of(self, call: relax.Call):
        """The unit this elementwise op fuses into, or None."""
        owners = [self.unit_of_var[a] for a in _tensor_args(call) if a in self.unit_of_var]
        if len(owners) != 1:
            return None
        for arg in _tensor_args(call):
            if arg in self.unit_of_var:
                if self.uses.get(arg, 0) != 1:
                    return None
            elif self._srcs(arg):
                return None  # the other operand is an activation: a residual join
        return owners[0]

    def _fuse_or_new(self, index, var, call, op) -> None:
        attrs = _tvm.attrs_dict(call)
        data = call.args[0]
        in_shape = _tvm.shape_of(data)
        kind = anchor_kind(op, attrs, in_shape)
        owner = self.unit_of_var.get(data)
        if (kind == "conv2d" and owner is not None and self.nodes[owner].kind == "depthwise"
                and self.uses.get(data, 0) == 1 and attrs.get("groups") == 1
                and _tvm.shape_of(call.args[1])[2:] == (1, 1)):
            node = self.nodes[owner]
            node.kind = "sepconv"
            node.flops += anchor_flops(op, [in_shape, _tvm.shape_of(call.args[1])],
                                       _tvm.shape_of(var), attrs)
            node.attrs["pointwise_channels"] = _tvm.shape_of(var)[1]
            node.attrs["epilogue"].append("conv2d")
            self._extend(owner, index, var, call, op, count_flops=False)
            return
        in_shapes = [_tvm.shape_of(a) for a in _tensor_args(call)]
        unit = self._new_unit(index, var, call, kind=kind,
                              flops=anchor_flops(op, in_shapes, _tvm.shape_of(var), attrs))
        node = self.nodes[unit]
        if op == "relax.nn.conv2d":
            weight = _tvm.shape_of(call.args[1])
            node.attrs.update(
                input=self._var_key(data), in_shape=list(in_shape or ()),
                in_channels=weight[1] * attrs.get("groups", 1), kernel=list(weight[2:]),
                channels=weight[0], strides=attrs["strides"], padding=attrs["padding"],
                dilation=attrs["dilation"], groups=attrs["groups"],
                data_layout=attrs["data_layout"], kernel_layout=attrs["kernel_layout"],
                epilogue=[], bias=False)
        elif op in ("relax.nn.max_pool2d", "relax.nn.avg_pool2d"):
            node.attrs.update(pool=op.split(".")[-1], pool_size=attrs.get("pool_size"),
                              strides=attrs.get("strides"))

    def _new_unit(self, index, var, value, kind, flops, schedulable=True) -> int:
        unit = len(self.nodes)
        shape = _tvm.shape_of(var) or ()
        dtype = _tvm.dtype_of(var) or "float32"
        nbytes = sum(math.prod(_tvm.shape_of(a) or (0,)) for a in _tensor_args(value)) \
            if isinstance(value, relax.Call) else 0
        nbytes = (nbytes + math.prod(shape)) * itemsize(dtype)
        self.nodes.append(OpNode(name=_tvm.var_name(var), kind=kind, shape=shape, dtype=dtype,
                                 flops=int(flops), bytes=int(nbytes),
                                 schedulable=schedulable, attrs={}))
        self.units.append([index])
        for src in self._srcs(value):
            self.edges.add((src, unit))
        self._set_output(unit, var)
        return unit

    def _extend(self, unit, index, var, call, op, count_flops=True) -> None:
        node = self.nodes[unit]
        self.units[unit].append(index)
        if count_flops:
            node.flops += math.prod(_tvm.shape_of(var) or (0,))
            if "epilogue" in node.attrs and node.kind == "conv2d":
                node.attrs["epilogue"].append(_epilogue_tag(op, call, self.unit_of_var))
                node.attrs["bias"] = node.attrs["bias"] or op == "relax.add"
        for src in self._srcs(call):
            if src != unit:
                self.edges.add((src, unit))
        for arg in _tensor_args(call):
            if arg not in self.unit_of_var and not self._srcs(arg):
                node.bytes += math.prod(_tvm.shape_of(arg) or (0,)) * itemsize(node.dtype)
        node.shape = _tvm.shape_of(var) or node.shape
        self._set_output(unit, var)

    def _set_output(self, unit, var) -> None:
        self.nodes[unit].name = _tvm.var_name(var)
        self.unit_of_var = {v: u for v, u in self.unit_of_var.items() if u != unit}
        self.unit_of_var[var] = unit
        self.sources[var] = frozenset({unit})

    def finish(self, func, block_index, name) -> Extraction:
        _uniquify(self.nodes)
        graph = OpGraph(self.nodes, self.edges, name=name)
        closure = [a | (1 << i) for i, a in enumerate(ancestors(graph))]
        junctions = set()
        for srcs in self.joins:
            mask = 0
            for unit in srcs:
                mask |= closure[unit]
            junctions.add(mask)
        graph = OpGraph(self.nodes, self.edges, junctions=junctions, name=name)
        return Extraction(graph, func, block_index, self.units)


def _epilogue_tag(op: str, call: relax.Call, unit_of_var: dict) -> str:
    """``relu``, or ``add:c`` for a per-channel operand (mergeable), ``add:x`` otherwise."""
    short = op.split(".")[-1]
    others = [a for a in _tensor_args(call) if a not in unit_of_var]
    if not others:
        return short
    shape = _tvm.shape_of(others[0])
    if shape is not None and len(shape) in (3, 4) and all(d == 1 for d in shape[-2:]) \
            and all(d == 1 for d in shape[:-3]):
        return f"{short}:c"
    return f"{short}:x"


def _uniquify(nodes: list[OpNode]) -> None:
    seen: dict[str, int] = {}
    for node in nodes:
        base = node.name
        if base in seen:
            seen[base] += 1
            node.name = f"{base}_{seen[base]}"
        else:
            seen[base] = 0
