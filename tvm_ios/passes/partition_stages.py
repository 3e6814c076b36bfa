"""``PartitionStages``: cut a Relax function into pipeline stage functions.

Given the binding indices where new stages start (``cuts``, into the function's dataflow
block), the pass adds one Relax function per stage, ``{func}_stage{i}``. Stages talk only
to their neighbours, as in a pipeline: stage i takes every value that it or a later stage
reads and that was defined before it (an earlier stage's result or a parameter of the
function), and returns, as a tuple, every value a later stage or the function's result
reads, passing through those it does not use itself; so the outputs of stage i are exactly
the inputs of stage i + 1, in definition order. The original function is
rewritten to call the stages in order, so the module computes exactly what it computed
before (checked by running both); a pipeline executor compiles each stage function on its
own (see :func:`stage_module`). Cuts are chosen by the pipeline schedulers
(:mod:`tvm_ios.pipelining`), usually at layer boundaries (:func:`layer_cuts`).
"""
from __future__ import annotations

import logging

from tvm import relax

from .. import _tvm
from ..graph.extract import Extraction, dataflow_block_index

__all__ = ["PartitionStages", "layer_cuts", "stage_names", "stage_module"]

logger = logging.getLogger(__name__)


def stage_names(func_name: str, count: int) -> list[str]:
    """Global names of the stage functions."""
    return [f"{func_name}_stage{i}" for i in range(count)]


def layer_cuts(ext: Extraction, stages) -> list[int]:
    """Binding indices where stages start, for ``stages`` (layers per stage) over the units
    of ``ext`` (each stage starts at its first layer's first binding)."""
    if sum(stages) != len(ext.units) or min(stages, default=0) < 1:
        raise ValueError(f"PartitionStages: stages {list(stages)} must be >= 1 and cover the "
                         f"{len(ext.units)} layers")
    cuts, layer = [], 0
    for count in list(stages)[:-1]:
        layer += count
        cuts.append(min(ext.units[layer]))
    return cuts


def stage_module(mod, name: str):
    """A module holding the stage function ``name`` alone, as ``main``."""
    func = mod[name].with_attr("global_symbol", "main")
    return _tvm.IRModule({"main": func})


def _uses(expr) -> list:
    found = []
    relax.analysis.post_order_visit(
        expr, lambda node: found.append(node) if isinstance(node, relax.Var) else None)
    return found


@_tvm.mutator
class _StageSplitter(_tvm.PyExprMutator):
    """Emits stage functions and the rewritten caller with the mutator's block builder."""

    def split(self, func: relax.Function, name: str, cuts: list[int]):
        block = func.body.blocks[0]
        bindings = list(block.bindings)
        bounds = [0] + cuts + [len(bindings)]
        ranges = list(zip(bounds, bounds[1:]))
        stage_of = {b.var: k for k, (lo, hi) in enumerate(ranges) for b in bindings[lo:hi]}
        reads = [set() for _ in ranges]
        for k, (lo, hi) in enumerate(ranges):
            for binding in bindings[lo:hi]:
                reads[k].update(v for v in _uses(binding.value) if stage_of.get(v) != k)
        reads.append(set(_uses(func.body.body)))      # the result reads after the last stage
        order = _order(func, bindings)
        ins, outs = [], []
        for k, (lo, hi) in enumerate(ranges):
            later = set().union(*reads[k:])
            ins.append(sorted((v for v in later if order(v) < lo), key=order))
            after = set().union(*reads[k + 1:])
            outs.append(sorted((v for v in after if order(v) < hi), key=order))
        gvars = [self._emit_stage(stage, bindings[lo:hi], ins[k], outs[k])
                 for k, ((lo, hi), stage) in enumerate(zip(ranges, stage_names(name, len(ranges))))]
        self._emit_caller(func, name, gvars, ins, outs)
        return self.builder_.get()

    def _emit_stage(self, name, bindings, ins, outs):
        bb = self.builder_
        params = [relax.Var(_tvm.var_name(v), v.ty) for v in ins]
        with bb.function(name, params):
            for old, new in zip(ins, params):
                self.set_var_remap(old, new)
            with bb.dataflow():
                for binding in bindings:
                    if not isinstance(binding, relax.VarBinding):
                        raise ValueError(f"PartitionStages: unsupported binding {binding.var}")
                    value = self.visit_expr(binding.value)
                    emit = bb.emit_output if binding.var in outs else bb.emit
                    self.set_var_remap(binding.var, emit(value, _tvm.var_name(binding.var)))
                results = [self.get_var_remap(v) for v in outs]
            return bb.emit_func_output(relax.Tuple(results))

    def _emit_caller(self, func, name, gvars, ins, outs):
        bb = self.builder_
        params = [relax.Var(_tvm.var_name(v), v.ty) for v in func.params]
        attrs = dict(func.attrs) if func.attrs is not None else None
        with bb.function(name, params, attrs=attrs):
            for old, new in zip(func.params, params):
                self.set_var_remap(old, new)
            for gvar, stage_in, stage_out in zip(gvars, ins, outs):
                res = bb.emit(relax.Call(gvar, [self.get_var_remap(v) for v in stage_in]))
                for k, var in enumerate(stage_out):
                    self.set_var_remap(var, bb.emit(relax.TupleGetItem(res, k)))
            bb.emit_func_output(self.visit_expr(func.body.body))


def _order(func, bindings):
    """Position of a variable's definition: parameters before every binding (negative)."""
    position = {p: i - len(func.params) for i, p in enumerate(func.params)}
    position.update({b.var: i for i, b in enumerate(bindings)})
    return lambda var: position.get(var, -len(func.params) - 1)


@_tvm.module_pass(opt_level=0, name="tvm_ios.PartitionStages")
class PartitionStages:
    """Cut ``func_name`` into stage functions at binding indices ``cuts``.

    Parameters
    ----------
    cuts : sequence of int
        Strictly increasing indices into the dataflow block's bindings, each in
        ``(0, number of bindings)``; stage i holds bindings ``[cuts[i-1], cuts[i])``.
    func_name : str
        The function to partition (its body must be one dataflow block).
    """

    def __init__(self, cuts, func_name: str = "main"):
        self.cuts = [int(c) for c in cuts]
        self.func_name = func_name

    def transform_module(self, mod, ctx):  # noqa: D102  (tvm.transform protocol)
        if self.func_name not in [gv.name_hint for gv in mod.get_global_vars()]:
            raise ValueError(f"PartitionStages: module has no function {self.func_name!r}")
        func = mod[self.func_name]
        blocks = list(func.body.blocks)
        if len(blocks) != 1 or dataflow_block_index(func) != 0:
            raise ValueError(f"PartitionStages: {self.func_name} must be one dataflow block, "
                             f"it has {len(blocks)} blocks")
        count = len(blocks[0].bindings)
        if any(not 0 < c < count for c in self.cuts) or \
                any(a >= b for a, b in zip(self.cuts, self.cuts[1:])):
            raise ValueError(f"PartitionStages: cuts {self.cuts} must increase strictly "
                             f"within (0, {count})")
        logger.info("PartitionStages: %s into %d stages", self.func_name, len(self.cuts) + 1)
        rest = _tvm.IRModule({gv: f for gv, f in mod.functions.items()
                              if gv.name_hint != self.func_name})
        out = _StageSplitter(rest).split(func, self.func_name, self.cuts)
        return out
