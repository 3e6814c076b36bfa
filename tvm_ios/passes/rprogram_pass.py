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
from ..kernels.policies import ios_policy, wavefront_policy
from ..kernels.roperator import estimate_roperators
from ..kernels.simulator import check_dependencies, simulate
from ..kernels.tvm_kernels import UnsupportedKernel, lower_bindings
from ..kernels.vdevice import cpu_vdevice
from ..schedule.ios import ios_schedule
from ..schedule.schedule import Schedule, ScheduleError, Stage
from ..schedule.validate import validate_schedule
from ._stage_rewriter import emission_plan
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
        self.vdevice = cpu_vdevice(num_veus)
        self.cost_model = cost_model or AnalyticalCostModel("cpu")
        self.programs: list = []

    def transform_module(self, mod, ctx):  # noqa: D102  (tvm.transform protocol)
        if self.func_name not in [gv.name_hint for gv in mod.get_global_vars()]:
            raise ValueError(f"RProgramPass: module has no function {self.func_name!r}")
        ext = extract(mod[self.func_name], name=self.func_name)
        schedule, regions = self._plan(mod, ext)
        plan = emission_plan(ext, schedule)
        rewriter = _RegionRewriter(ext, plan, regions, mod)
        new_func = rewriter.visit_expr(ext.func)
        mod = rewriter.builder_.get()
        mod[mod.get_global_var(self.func_name)] = new_func
        self.programs = [program for _, program in rewriter.built]
        logger.info("RProgramPass: %d rPrograms built, %d kept as own kernels",
                    len(rewriter.built), len(regions) - len(rewriter.built))
        return record_schedule(mod, self.func_name, schedule)

    def _schedule(self, mod, graph) -> Schedule:
        recorded = _recorded(mod, self.func_name, graph)
        if recorded is not None and all(s.strategy == "concurrent" for s in recorded.stages):
            return recorded
        return ios_schedule(graph, self.cost_model, strategy="parallel")

    def _plan(self, mod, ext) -> tuple[Schedule, list]:
        graph = ext.graph
        rops = estimate_roperators(graph, "cpu")
        edges = [(graph.nodes[u].name, graph.nodes[v].name) for u, v in graph.edges]
        if self.policy == "ios":
            schedule = self._schedule(mod, graph)
            pairs = ios_policy(graph, schedule, rops, self.vdevice,
                               num_veus=self.vdevice.sms, name=f"{self.func_name}_ios")
            regions = [(set(schedule.stages[si].ops), p) for si, p in pairs]
        else:
            programs = wavefront_policy(graph, rops, self.vdevice, num_veus=self.vdevice.sms,
                                        name=f"{self.func_name}_wave")
            schedule, regions = _wavefront_schedule(graph, programs)
        for _, program in regions:
            simulate(program)
            check_dependencies(program, edges)
        return schedule, regions


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


def _wavefront_schedule(graph, programs) -> tuple[Schedule, list]:
    """A schedule with one single-group stage per multi-op rProgram of schedulable ops."""
    stages, regions = [], []
    for program in programs:
        ops = sorted(program.ops, key=graph.index.get)
        fixed = any(not graph.nodes[graph.index[op]].schedulable for op in ops)
        if fixed or len(ops) < 2:
            stages.extend(Stage([[op]]) for op in ops)
            continue
        stages.append(Stage([ops]))
        regions.append((set(ops), program))
    schedule = Schedule(stages, graph={"name": graph.name, "num_ops": len(graph),
                                       "fingerprint": graph.fingerprint()},
                        params={"scheduler": "rammer-wavefront"})
    return schedule, regions


@_tvm.mutator
class _RegionRewriter(_tvm.PyExprMutator):
    """Re-emits the model's block in plan order, one call_tir per region."""

    def __init__(self, ext, plan, regions, mod):
        super().__init__(mod)
        self.ext, self.plan, self.regions = ext, plan, regions
        self.target = ext.func.body.blocks[ext.block_index]
        self.bindings = list(self.target.bindings)
        self.built: list = []
        names = [n.name for n in ext.graph.nodes]
        self.region_of = {}
        for r, (ops, _) in enumerate(regions):
            for op in ops:
                for index in ext.units[names.index(op)]:
                    self.region_of[index] = r

    def visit_dataflow_block_(self, block):
        if not block.same_as(self.target):
            return super().visit_dataflow_block_(block)
        self.builder_._begin_dataflow_block()
        items = [i for kind, i in self.plan if kind == "bind"]
        if len(items) != len(self.plan):
            raise ValueError("RProgramPass: merge stages must be applied before (IOSPass)")
        pos = 0
        while pos < len(items):
            region = self.region_of.get(items[pos])
            if region is None:
                self.builder_.emit_normalized(self.bindings[items[pos]])
                pos += 1
                continue
            end = max(i for i, b in enumerate(items) if self.region_of.get(b) == region)
            self._emit_region(region, items[pos:end + 1])
            pos = end + 1
        return self.builder_._end_block()

    def _emit_region(self, region: int, span: list[int]) -> None:
        ops, program = self.regions[region]
        inside = [b for b in span if self.region_of.get(b) == region]
        outside = [b for b in span if self.region_of.get(b) != region]
        made = {self.bindings[b].var for b in inside}
        glue = [b for b in outside
                if any(v in made for v in relax.analysis.free_vars(self.bindings[b].value))]
        try:
            if glue:
                raise UnsupportedKernel(f"free op {_tvm.var_name(self.bindings[glue[0]].var)} "
                                        "carries data between ops of the program")
            call, outs = self._build(ops, program)
        except (UnsupportedKernel, CPUBackendError) as err:
            logger.warning("RProgramPass: %s keeps its own kernels: %s", program.name, err)
            for b in span:
                self.builder_.emit_normalized(self.bindings[b])
            return
        for b in outside:
            self.builder_.emit_normalized(self.bindings[b])
        result = self.builder_.emit(call, program.name)
        for k, var in enumerate(outs):
            self.builder_.emit_normalized(relax.VarBinding(var, relax.TupleGetItem(result, k)))
        self.built.append((region, program))

    def _build(self, ops, program):
        names = [n.name for n in self.ext.graph.nodes]
        steps_of, outs = {}, []
        for op in ops:
            unit = [self.bindings[i] for i in self.ext.units[names.index(op)]]
            steps_of[op] = lower_bindings(unit, unit[-1].var)
            outs.append(unit[-1].var)
        tensors, inputs = {}, []
        for op in ops:
            for step in steps_of[op]:
                for expr in list(step.inputs) + [step.output]:
                    if not any(expr.same_as(k) for k in tensors):
                        name = _tvm.var_name(expr) if isinstance(expr, relax.Var) else "w"
                        tensors[expr] = (f"{name}_{len(tensors)}", _tvm.shape_of(expr),
                                         _tvm.dtype_of(expr))
                        made = any(expr.same_as(s.output) for o in ops for s in steps_of[o])
                        if not made:
                            inputs.append(expr)
        func = build_cpu_primfunc(program, steps_of, tensors, inputs, outs)
        gvar = self.builder_.add_func(func, program.name)
        out_ty = [relax.TensorType(_tvm.shape_of(v), _tvm.dtype_of(v)) for v in outs]
        return relax.call_tir(gvar, inputs, out_ty=out_ty), outs
