"""Mechanics shared by the GraphTurbo passes: emitting sub-graph instances on slices.

Given the layer graph of a function, its sub-graphs (bitsets of layers), their splits and
an instance order, :class:`InstanceEmitter` re-emits the model's dataflow block: weight-only
bindings first, then every instance in order, each computing its part of the SG output from
slices of its inputs (convolutions and pools with their padding adjusted at the cut), with
the parts of producer instances it reads gathered by a slice or a concatenation. Every
variable an instance emits is named ``gt<sg>_<k>_<name>`` so a later pass can regroup them.
SG outputs returned by the block are rebuilt whole (a concatenation of the parts) and bound
to their original variables.
"""
from __future__ import annotations

import logging
import re

from tvm import relax

from .. import _tvm
from ..graphturbo.tensor_regions import full_box, input_box, intersect, window_range
from ..graphturbo.splitinfo import SGContext, partition

__all__ = ["InstanceEmitter", "instance_tag", "instance_runs", "TAG"]

logger = logging.getLogger(__name__)

TAG = re.compile(r"^gt(\d+)_(\d+)_")


def instance_tag(name: str) -> tuple[int, int] | None:
    """``(sg, k)`` of a variable emitted for an instance, or None."""
    match = TAG.match(name)
    return (int(match.group(1)), int(match.group(2))) if match else None


def instance_runs(func) -> list[tuple[int, int]]:
    """The instances of ``func`` in binding order, one ``(sg, k)`` per contiguous run of
    their bindings (an instance split by other bindings appears more than once)."""
    runs = []
    for block in func.body.blocks:
        for binding in block.bindings:
            tag = instance_tag(_tvm.var_name(binding.var))
            if tag is not None and (not runs or runs[-1] != tag):
                runs.append(tag)
    return runs


@_tvm.mutator
class InstanceEmitter(_tvm.PyExprMutator):
    """Re-emits the layer graph's dataflow block as ordered instances (see module doc)."""

    def __init__(self, ctx: SGContext, sgs: list[int], splits: list[tuple[int, int]],
                 order: list[tuple[int, int]], mod=None, outline: bool = True):
        super().__init__(mod)
        self.ctx, self.sgs, self.splits, self.order = ctx, sgs, splits, order
        self.outline = outline
        self.fn: _Outline | None = None
        self.target = ctx.lg.func.body.blocks[ctx.lg.block_index]
        self.bindings = list(self.target.bindings)
        self.params = {_tvm.var_name(p): p for p in ctx.lg.func.params}
        self.pieces: dict[int, list] = {}

    def visit_dataflow_block_(self, block):
        if not block.same_as(self.target):
            return super().visit_dataflow_block_(block)
        self.builder_._begin_dataflow_block()
        for i, b in enumerate(self.bindings):
            if i not in self.ctx.lg.infos:
                self.builder_.emit_normalized(b)
        for sg, k in self.order:
            self._emit_instance(sg, k)
        for sg, mask in enumerate(self.sgs):
            var = self.bindings[self.ctx.lg.bindings[self.ctx.output_layer(mask)][-1]].var
            if not isinstance(var, relax.DataflowVar):
                shape = _tvm.shape_of(var)
                value = self.builder_.normalize(self._gather(sg, full_box(shape), f"gt{sg}_out"))
                self.builder_.emit_normalized(relax.VarBinding(var, value))
        return self.builder_._end_block()

    # -- instances ----------------------------------------------------------------------
    def _emit_instance(self, sg: int, k: int) -> None:
        mask = self.sgs[sg]
        layer = self.ctx.output_layer(mask)
        shape = self.ctx.lg.graph.nodes[layer].shape
        dim, factor = self.splits[sg]
        box = partition(shape, dim, factor)[k]
        need, _ = self.ctx.regions(mask, box)
        local: dict[int, tuple] = {}
        prefix = f"gt{sg}_{k}_"
        self.fn = _Outline(prefix + "inst") if self.outline else None
        for b in self.ctx.bindings(mask):
            if b in need:
                value = self._rewrite(b, need[b], local, prefix)
                name = prefix + _tvm.var_name(self.bindings[b].var)
                local[b] = (self._emit(value, name), need[b])
        last = self.ctx.lg.bindings[layer][-1]
        var, have = local[last]
        piece = var if have == box else self._emit(_slice(var, have, box), prefix + "part")
        if self.fn is not None:
            piece = self.fn.finish(self.builder_, piece, prefix + "call")
            self.fn = None
        self.pieces.setdefault(sg, []).append((box, piece))

    def _emit(self, value, name: str):
        """Emit inside the current instance (its function when outlining)."""
        return (self.fn.bb if self.fn is not None else self.builder_).emit(value, name)

    def _outside(self, var):
        """A main-function variable as seen from inside the current instance."""
        if self.fn is None or not isinstance(var, relax.Var):
            return var
        return self.fn.param(var)

    def _operand(self, src: str, shape, box, local, prefix):
        """A variable holding ``box`` of the operand ``src``."""
        if src.startswith("param:"):
            var = self.params[src[6:]]
            return self._outside(var if box == full_box(shape) else self.builder_.emit(
                _slice(var, full_box(shape), box), prefix + "in"))
        index = int(src[1:])
        if index in local:
            var, have = local[index]
            return var if have == box else self._emit(_slice(var, have, box), prefix + "slice")
        value = self._gather(self._owner(index), box, prefix + "gather")
        return self._outside(value if isinstance(value, relax.Var) else self.builder_.emit(
            value, prefix + "gather"))

    def _owner(self, index: int) -> int:
        for sg, mask in enumerate(self.sgs):
            if self.ctx.lg.bindings[self.ctx.output_layer(mask)][-1] == index:
                return sg
        raise RuntimeError(f"GraphTurbo emitter: %{index} is read across SGs but is no output")

    def _gather(self, sg: int, box, name: str):
        """An expression for ``box`` of SG ``sg``'s output, from its emitted parts."""
        parts = []
        for have, var in self.pieces.get(sg, []):
            inter = intersect(have, box)
            if inter is not None:
                parts.append(var if inter == have else
                             self.builder_.emit(_slice(var, have, inter), name))
        if not parts:
            raise RuntimeError(f"GraphTurbo emitter: SG {sg} read before it ran")
        if len(parts) == 1:
            return parts[0]
        return relax.op.concat(parts, axis=self.splits[sg][0])

    def _rewrite(self, b: int, out_box, local, prefix):
        info = self.ctx.lg.infos[b]
        value = self.bindings[b].value
        new = {}
        for where, src, shape in info.args:
            new[where] = self._operand(src, shape, input_box(info, shape, out_box), local,
                                       prefix)
        if isinstance(value, relax.Var):
            return new[(0, -1)]
        if info.rule == "window":
            weight = self._outside(value.args[1]) if len(value.args) > 1 else None
            return _window(value, new[(0, -1)], weight, info, out_box)
        args = []
        for pos, arg in enumerate(value.args):
            if isinstance(arg, relax.Tuple):
                args.append(relax.Tuple([new[(pos, j)] if (pos, j) in new else self._outside(f)
                                         for j, f in enumerate(arg.fields)]))
            elif (pos, -1) in new:
                args.append(new[(pos, -1)])
            elif info.rule == "map" and _tvm.shape_of(arg) is not None:
                shape, arg = _tvm.shape_of(arg), self._outside(arg)
                want = input_box(info, shape, out_box)
                args.append(arg if want == full_box(shape) else _slice(arg, full_box(shape), want))
            else:
                args.append(self._outside(arg))
        if _tvm.op_name(value) == "relax.reshape" and out_box != full_box(info.out_shape):
            args[1] = relax.ShapeExpr([hi - lo for lo, hi in out_box])
        return relax.Call(value.op, args, value.attrs, value.ty_args)


def _slice(var, have, want):
    """``strided_slice`` taking box ``want`` out of a tensor holding box ``have``."""
    axes, begin, end = [], [], []
    for dim, ((h0, _), (w0, w1)) in enumerate(zip(have, want)):
        if (w0 - h0, w1 - h0) != (0, have[dim][1] - h0):
            axes.append(dim)
            begin.append(w0 - h0)
            end.append(w1 - h0)
    if not axes:
        return var
    return relax.op.strided_slice(var, axes, begin, end)


def _window(call, data, weight, info, out_box):
    """The conv or pool of ``call`` on a slice, with the padding of the cut."""
    w = info.window
    pads = []
    for dim, k in ((2, 0), (3, 1)):
        in_size = info.args[0][2][dim]
        _, _, lo, hi = window_range(*out_box[dim], w["kernel"][k], w["strides"][k],
                                    w["padding"][k], w["dilation"][k], in_size)
        pads.append((lo, hi))
    padding = (pads[0][0], pads[1][0], pads[0][1], pads[1][1])
    attrs = _tvm.attrs_dict(call)
    op = _tvm.op_name(call)
    if op == "relax.nn.conv2d":
        return relax.op.nn.conv2d(data, weight, strides=attrs["strides"], padding=padding,
                                  dilation=attrs["dilation"], groups=attrs["groups"],
                                  data_layout=attrs["data_layout"],
                                  kernel_layout=attrs["kernel_layout"],
                                  out_layout=attrs["out_layout"],
                                  out_dtype=call.attrs.out_dtype)
    pool = relax.op.nn.max_pool2d if op == "relax.nn.max_pool2d" else relax.op.nn.avg_pool2d
    return pool(data, attrs["pool_size"], attrs["strides"], padding, attrs["dilation"],
                False, attrs.get("count_include_pad", False),
                attrs["layout"], attrs["out_layout"])


class _Outline:
    """One instance being built as a private Relax function, called from ``main``."""

    def __init__(self, name: str):
        self.name = name
        self.bb = relax.BlockBuilder()
        self.params: list = []
        self.args: list = []
        self.mapping: dict = {}
        self.frames = [self.bb.function(name, private=True)]
        self.frames[0].__enter__()
        self.frames.append(self.bb.dataflow())
        self.frames[1].__enter__()

    def param(self, var):
        """The function parameter standing for a variable of ``main``."""
        if var not in self.mapping:
            fresh = relax.Var(_tvm.var_name(var), var.ty)
            self.mapping[var] = fresh
            self.params.append(fresh)
            self.args.append(var)
        return self.mapping[var]

    def finish(self, main_builder, result, call_name: str):
        """Close the function, add it to the module, emit its call in ``main``."""
        out = self.bb.emit_output(result)
        self.frames[1].__exit__(None, None, None)
        self.bb.emit_func_output(out, params=self.params)
        self.frames[0].__exit__(None, None, None)
        gvar = main_builder.add_func(self.bb.get()[self.name], self.name)
        return main_builder.emit(relax.Call(gvar, self.args), call_name)


def sg_masks(lg, groups: list[list[str]]) -> list[int]:
    """Bitsets of SGs given by layer names."""
    index = lg.graph.index
    return [sum(1 << index[name] for name in names) for names in groups]
