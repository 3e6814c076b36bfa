"""``RProgramPass``: run each multi-group stage (or wavefront rProgram) as one kernel.

After :class:`~tvm_ios.passes.ios_pass.IOSPass` (or with the schedule it records), the pass
plans rPrograms with a policy (``"ios"``: one per concurrent stage of two or more groups;
``"wavefront"``: Rammer's Algorithm 1 over the whole graph), lowers every op of a program
with TVM's own kernels, combines them into one PrimFunc per rProgram (the CPU vDevice for
``llvm``) and replaces the program's bindings by one ``call_tir``. Each op's output variable
is re-bound to its slot of the call's result, so every later use stays valid. Sequential
stages keep their own kernels. A program that cannot be built (an op TVM lowers to
something other than kernels, a tensor flowing through a free op inside the program) keeps
its ops' own kernels with a warning.
"""
from __future__ import annotations

import logging

from tvm import relax

from .. import _tvm
from ..cost.analytical import AnalyticalCostModel
from ..graph.extract import extract
from ..kernels.codegen_cpu import CPUBackendError, build_cpu_primfunc
from ..kernels.roperator import estimate_roperators
from ..kernels.tvm_kernels import UnsupportedKernel, lower_bindings
from ..kernels.vdevice import cpu_vdevice
from ..schedule.ios import ios_schedule
from ..schedule.schedule import Schedule, ScheduleError
from ..schedule.validate import validate_schedule
from ..kernels.regions import augment, binding_deps, plan_regions
from .apply_schedule import record_schedule, schedule_of

__all__ = ["RProgramPass", "POLICIES"]

logger = logging.getLogger(__name__)
POLICIES = ("ios", "wavefront")


@_tvm.module_pass(opt_level=0, name="tvm_ios.RProgramPass")
class RProgramPass:
    """Replace multi-group stages by rProgram kernels (CPU vDevice for ``llvm``).

    Parameters
    ----------
    policy : {"ios", "wavefront"}
        How rPrograms are planned.
    num_veus : int, optional
        vEUs per rProgram (default: the workers of TVM's thread pool); checked.
    cost_model : CostModel, optional
        For the IOS schedule when the module has none recorded.
    func_name : str
        The function to rewrite.
    """

    def __init__(self, policy: str = "ios", num_veus: int | None = None, cost_model=None,
                 func_name: str = "main"):
        if policy not in POLICIES:
            raise ValueError(f"RProgramPass: policy must be one of {POLICIES}, got {policy!r}")
        self.policy, self.func_name = policy, func_name
        if num_veus is not None:
            cpu_vdevice().check(num_veus, what="RProgramPass")  # one vEU per pool worker
        self.vdevice = cpu_vdevice(num_veus)
        self.cost_model = cost_model or AnalyticalCostModel("cpu")
        self.programs: list = []

    def transform_module(self, mod, ctx):  # noqa: D102  (tvm.transform protocol)
        if self.func_name not in [gv.name_hint for gv in mod.get_global_vars()]:
            raise ValueError(f"RProgramPass: module has no function {self.func_name!r}")
        ext = extract(mod[self.func_name], name=self.func_name)
        graph, members = augment(ext)
        schedule, items = self._plan(mod, ext, graph)
        rewriter = _RegionRewriter(ext, members, items, mod)
        new_func = rewriter.visit_expr(ext.func)
        mod = rewriter.builder_.get()
        mod[mod.get_global_var(self.func_name)] = new_func
        self.programs = rewriter.built
        regions = sum(kind == "region" for kind, *_ in items)
        logger.info("RProgramPass: %d rPrograms built, %d kept as own kernels",
                    len(rewriter.built), regions - len(rewriter.built))
        return record_schedule(mod, self.func_name, schedule)

    def _schedule(self, mod, graph) -> Schedule:
        recorded = _recorded(mod, self.func_name, graph)
        if recorded is not None and all(s.strategy == "concurrent" for s in recorded.stages):
            return recorded
        return ios_schedule(graph, self.cost_model, strategy="parallel")

    def _plan(self, mod, ext, graph) -> tuple[Schedule, list]:
        """The schedule recorded on the module and the emission items."""
        rops = estimate_roperators(graph, "cpu")
        schedule = self._schedule(mod, ext.graph) if self.policy == "ios" else None
        return plan_regions(ext.graph, graph, rops, self.vdevice, self.policy, schedule,
                            self.func_name)


def _recorded(mod, func_name, graph) -> Schedule | None:
    """The schedule recorded on ``mod`` if it still fits the graph (merges change it)."""
    recorded = schedule_of(mod, func_name)
    if recorded is None:
        return None
    try:
        validate_schedule(graph, recorded)
    except ScheduleError:
        return None
    return recorded


@_tvm.mutator
class _RegionRewriter(_tvm.PyExprMutator):
    """Re-emits the model's block item by item, one call_tir per rProgram region."""

    def __init__(self, ext, members, items, mod):
        super().__init__(mod)
        self.ext, self.members, self.items = ext, members, items
        self.target = ext.func.body.blocks[ext.block_index]
        self.bindings = list(self.target.bindings)
        self.deps = binding_deps(self.bindings)
        self.emitted: set[int] = set()
        self.built: list = []

    def visit_dataflow_block_(self, block):
        if not block.same_as(self.target):
            return super().visit_dataflow_block_(block)
        self.builder_._begin_dataflow_block()
        for item in self.items:
            if item[0] == "region":
                self._emit_region(item[1], item[2])
            else:
                for index in self.members[item[1]]:
                    self._emit(index)
        for index in range(len(self.bindings)):
            self._emit(index)
        return self.builder_._end_block()

    def _emit(self, index: int) -> None:
        if index in self.emitted:
            return
        for dep in self.deps[index]:
            self._emit(dep)
        self.emitted.add(index)
        self.builder_.emit_normalized(self.bindings[index])

    def _emit_region(self, ops, program) -> None:
        inside = {i for op in ops for i in self.members[op]}
        outside = sorted({d for i in inside for d in self.deps[i] if d not in inside})
        try:
            if any(self._reaches(d, inside) for d in outside):
                raise UnsupportedKernel("a free op outside the program carries data between "
                                        "its ops")
            call, outs = self._build(ops, program)
        except (UnsupportedKernel, CPUBackendError) as err:
            logger.warning("RProgramPass: %s keeps its own kernels: %s", program.name, err)
            for index in sorted(inside):
                self._emit(index)
            return
        for index in outside:
            self._emit(index)
        result = self.builder_.emit(call, program.name)
        for k, var in enumerate(outs):
            self.builder_.emit_normalized(relax.VarBinding(var, relax.TupleGetItem(result, k)))
        self.emitted |= inside
        self.built.append(program)

    def _reaches(self, index: int, inside: set) -> bool:
        """Whether binding ``index`` reads (transitively) a binding of ``inside``."""
        stack, seen = [index], set()
        while stack:
            i = stack.pop()
            for d in self.deps[i]:
                if d in inside:
                    return True
                if d not in seen and d not in self.emitted:
                    seen.add(d)
                    stack.append(d)
        return False

    def _build(self, ops, program):
        steps_of, outs = {}, []
        for op in ops:
            unit = [self.bindings[i] for i in self.members[op]]
            steps_of[op] = lower_bindings(unit, unit[-1].var)
            outs.append(unit[-1].var)
        tensors, inputs = {}, []
        made = [s.output for op in ops for s in steps_of[op]]
        for op in ops:
            for step in steps_of[op]:
                for expr in list(step.inputs) + [step.output]:
                    if any(expr.same_as(k) for k in tensors):
                        continue
                    name = _tvm.var_name(expr) if isinstance(expr, relax.Var) else "w"
                    tensors[expr] = (f"{name}_{len(tensors)}", _tvm.shape_of(expr),
                                     _tvm.dtype_of(expr))
                    if not any(expr.same_as(m) for m in made):
                        inputs.append(expr)
        func = build_cpu_primfunc(program, steps_of, tensors, inputs, outs)
        gvar = self.builder_.add_func(func, program.name)
        out_ty = [relax.TensorType(_tvm.shape_of(v), _tvm.dtype_of(v)) for v in outs]
        return relax.call_tir(gvar, inputs, out_ty=out_ty), outs
