"""Mechanics shared by the schedule passes: binding order and operator-merge emission.

Given an :class:`~tvm_ios.graph.extract.Extraction` and a validated schedule, the bindings of
the model's dataflow block are re-emitted so that units appear stage by stage, group by
group; free bindings (concats, reshapes, weight preprocessing) are placed just before their
first user. A merge stage becomes: the kernels zero-padded and concatenated, one conv, the
shared epilogue with its per-channel operands concatenated, a split, and each original
unit's output variable bound to its slice, so every later use stays valid.
"""
from __future__ import annotations

import logging

from tvm import relax

from .. import _tvm
from ..graph.extract import Extraction
from ..schedule.merge import MergePlan, merge_plan
from ..schedule.schedule import Schedule

logger = logging.getLogger(__name__)

__all__ = ["emission_plan", "StageRewriter"]


def emission_plan(ext: Extraction, schedule: Schedule) -> list:
    """Items ``("bind", index)`` and ``("merge", MergePlan)`` in emission order."""
    block = ext.func.body.blocks[ext.block_index]
    bindings = list(block.bindings)
    position = {b.var: i for i, b in enumerate(bindings)}
    deps = [_deps(b.value, position) for b in bindings]
    owner = {b: u for u, unit in enumerate(ext.units) for b in unit}
    emitted: set[int] = set()
    plan: list = []

    def emit(index: int) -> None:
        if index in emitted:
            return
        if index in owner:
            raise RuntimeError(f"binding {index} of unit {owner[index]} is needed before its "
                               "stage; the schedule was not validated")
        for dep in deps[index]:
            emit(dep)
        emitted.add(index)
        plan.append(("bind", index))

    def emit_unit(unit: int) -> None:
        unit_set = set(ext.units[unit])
        for index in ext.units[unit]:
            for dep in deps[index]:
                if dep not in unit_set:
                    emit(dep)
        for index in ext.units[unit]:
            emitted.add(index)
            plan.append(("bind", index))

    for stage in schedule.stages:
        ids = [ext.graph.index[name] for name in stage.ops]
        if stage.strategy == "merge":
            merge = merge_plan(ext.graph, ids)
            for unit in merge.ops:
                for index in ext.units[unit]:
                    emitted.add(index)  # replaced by the merged bindings
            for unit in merge.ops:
                for index in ext.units[unit]:
                    for dep in deps[index]:
                        if owner.get(dep) not in merge.ops:
                            emit(dep)
            plan.append(("merge", merge))
        else:
            for unit in ids:
                emit_unit(unit)
    for index in range(len(bindings)):
        emit(index)
    return plan


def _deps(expr, position: dict) -> list[int]:
    found: set[int] = set()

    def visit(node):
        if isinstance(node, relax.Var) and node in position:
            found.add(position[node])
    relax.analysis.post_order_visit(expr, visit)
    return sorted(found)


@_tvm.mutator
class StageRewriter(_tvm.PyExprMutator):
    """Re-emits one dataflow block of a function in the order of an emission plan."""

    def __init__(self, ext: Extraction, plan: list, mod=None):
        super().__init__(mod)
        self.ext, self.plan = ext, plan
        self.target = ext.func.body.blocks[ext.block_index]
        self.bindings = list(self.target.bindings)

    def visit_dataflow_block_(self, block):
        if not block.same_as(self.target):
            return super().visit_dataflow_block_(block)
        self.builder_._begin_dataflow_block()
        for kind, item in self.plan:
            if kind == "bind":
                self.builder_.emit_normalized(self.bindings[item])
            else:
                self._emit_merge(item)
        return self.builder_._end_block()

    def _emit_merge(self, plan: MergePlan) -> None:
        graph, units = self.ext.graph, self.ext.units
        chains = [[self.bindings[i] for i in units[u]] for u in plan.ops]
        convs = [chain[0].value for chain in chains]
        weights = []
        for conv, (top, left, bottom, right) in zip(convs, plan.pads):
            weight = conv.args[1]
            if top or left or bottom or right:
                weight = relax.op.nn.pad(weight, [0, 0, 0, 0, top, bottom, left, right])
            weights.append(weight)
        attrs = _tvm.attrs_dict(convs[0])
        name = "_".join(graph.nodes[u].name for u in plan.ops[:3])[:60] + "_merged"
        merged_w = self.builder_.emit(relax.op.concat(weights, axis=0), name + "_w")
        value = self.builder_.emit(relax.op.nn.conv2d(
            convs[0].args[0], merged_w, strides=attrs["strides"], padding=plan.padding,
            dilation=attrs["dilation"], groups=1, data_layout=attrs["data_layout"],
            kernel_layout=attrs["kernel_layout"], out_dtype=_tvm.dtype_of(chains[0][0].var)),
            name)
        for step in range(1, len(chains[0])):
            value = self.builder_.emit(self._merged_epilogue(chains, step, value), name)
        split_points, acc = [], 0
        for channels in plan.channels[:-1]:
            acc += channels
            split_points.append(acc)
        parts = self.builder_.emit(relax.op.split(value, split_points, axis=1), name + "_split")
        for k, chain in enumerate(chains):
            out_var = chain[-1].var
            binding = relax.VarBinding(out_var, relax.TupleGetItem(parts, k))
            self.builder_.emit_normalized(binding)

    @staticmethod
    def _merged_epilogue(chains, step: int, value):
        """Epilogue op ``step`` of the chains, applied to the merged tensor."""
        calls = [chain[step].value for chain in chains]
        previous = [chain[step - 1].var for chain in chains]
        args = []
        for position, arg in enumerate(calls[0].args):
            if arg.same_as(previous[0]):
                args.append(value)
            elif _tvm.shape_of(arg) is not None:  # a per-channel tensor operand (bias)
                shape = _tvm.shape_of(arg)
                operands = [c.args[position] for c in calls]
                args.append(relax.op.concat(operands, axis=len(shape) - 3))
            else:
                args.append(arg)
        return relax.Call(calls[0].op, args, calls[0].attrs, calls[0].ty_args)
