"""``RProgramPass``: run each multi-group stage (or wavefront rProgram) as one kernel.

After :class:`~tvm_ios.passes.ios_pass.IOSPass` (or with the schedule it records), the pass
plans rPrograms with a policy (``"ios"``: one per concurrent stage of two or more groups;
``"wavefront"``: Rammer's Algorithm 1 over the whole graph), lowers every op of a program
with TVM's own kernels and combines them into one kernel per rProgram, through one of two
backends (:mod:`._rprogram_backends`): for ``llvm`` a PrimFunc of the CPU vDevice called
with ``call_tir``; for a CUDA target a persistent kernel built here by its own TIR
pipeline, attached as an external module and called with ``call_dps_packed``, so that
``tvm.compile(mod, target)`` links it beside TVM's own kernels of the other ops. Each op's
output variable is re-bound to its slot of the call's result, so every later use stays
valid. Sequential stages keep their own kernels. A program that cannot be built (an op TVM
lowers to something other than one kernel, a tensor flowing through a free op inside the
program) keeps its ops' own kernels with a warning.
"""
from __future__ import annotations

import logging

from tvm import relax

from .. import _tvm
from ..graph.extract import extract
from ..kernels.tvm_kernels import UnsupportedKernel
from ..schedule.ios import ios_schedule
from ..schedule.schedule import Schedule, ScheduleError
from ..schedule.validate import validate_schedule
from ..kernels.regions import MAX_PROGRAM_OPS, augment, binding_deps, plan_regions
from ._rprogram_backends import default_cost_model, make_backend
from .apply_schedule import record_schedule, schedule_of

__all__ = ["RProgramPass", "POLICIES"]

logger = logging.getLogger(__name__)
POLICIES = ("ios", "wavefront", "instances")


@_tvm.module_pass(opt_level=0, name="tvm_ios.RProgramPass")
class RProgramPass:
    """Replace multi-group stages by rProgram kernels.

    Parameters
    ----------
    policy : {"ios", "wavefront", "instances"}
        How rPrograms are planned (``"instances"``: the GraphTurbo instances recorded by
        ``SplitInstances(outline=False)``/``OrderInstances`` as rTasks,
        :mod:`~tvm_ios.kernels.instance_policy`).
    num_veus : int, optional
        vEUs per rProgram on the CPU vDevice (default: the workers of TVM's thread pool);
        checked. Not for CUDA, where the policy sizes programs within the GPU's occupancy.
    cost_model : CostModel, optional
        For the IOS schedule when the module has none recorded (default: the analytical
        model of the target's device).
    func_name : str
        The function to rewrite.
    target : str, dict or Target
        ``llvm`` (the CPU vDevice, default) or a CUDA target such as
        ``"nvidia/nvidia-h100"``; compile the result with ``tvm.compile`` for that target.
    max_ops : int, optional
        Most ops of one wavefront rProgram (default :data:`~tvm_ios.kernels.regions.
        MAX_PROGRAM_OPS`; None: unbounded).
    kernels : KernelDB, optional
        Tuned kernels for the CPU vDevice's vEUs (serial variants; see
        :mod:`tvm_ios.kernels.tuned_build`).
    """

    def __init__(self, policy: str = "ios", num_veus: int | None = None, cost_model=None,
                 func_name: str = "main", target="llvm", max_ops: int | None = MAX_PROGRAM_OPS,
                 kernels=None):
        if policy not in POLICIES:
            raise ValueError(f"RProgramPass: policy must be one of {POLICIES}, got {policy!r}")
        self.policy, self.func_name, self.max_ops = policy, func_name, max_ops
        self.backend = make_backend(target, num_veus, kernels)
        self.vdevice = self.backend.vdevice
        self.cost_model = cost_model or default_cost_model(self.backend)
        self.programs: list = []  # the rPrograms built by the last run
        self.planned = 0  # the rPrograms the policy planned (some may keep own kernels)

    def transform_module(self, mod, ctx):  # noqa: D102  (tvm.transform protocol)
        if self.func_name not in [gv.name_hint for gv in mod.get_global_vars()]:
            raise ValueError(f"RProgramPass: module has no function {self.func_name!r}")
        ext = extract(mod[self.func_name], name=self.func_name)
        graph, members = augment(ext)
        schedule, items = self._plan(mod, ext, graph, members)
        rewriter = _RegionRewriter(ext, members, items, mod.clone(), self.backend)
        new_func = rewriter.visit_expr(ext.func)  # (the builder adds functions to its module)
        mod = rewriter.builder_.get()
        mod[mod.get_global_var(self.func_name)] = new_func
        mod = self.backend.finish(mod)
        self.programs = rewriter.built
        regions = self.planned = sum(kind == "region" for kind, *_ in items)
        logger.info("RProgramPass: %d rPrograms built, %d kept as own kernels",
                    len(rewriter.built), regions - len(rewriter.built))
        return record_schedule(mod, self.func_name, schedule)

    def _schedule(self, mod, graph) -> Schedule:
        recorded = _recorded(mod, self.func_name, graph)
        if recorded is not None and all(s.strategy == "concurrent" for s in recorded.stages):
            return recorded
        return ios_schedule(graph, self.cost_model, strategy="parallel")

    def _plan(self, mod, ext, graph, members) -> tuple[Schedule, list]:
        """The schedule recorded on the module and the emission items."""
        bindings = list(ext.func.body.blocks[ext.block_index].bindings)
        rops = self.backend.rops(graph, members, bindings)
        if self.policy == "instances":  # GraphTurbo instances as rTasks
            from ._instance_regions import plan_instance_items  # noqa: PLC0415

            return plan_instance_items(mod, ext, graph, members, rops, self.backend,
                                       self.func_name, self.max_ops)
        schedule = self._schedule(mod, ext.graph) if self.policy == "ios" else None
        return plan_regions(ext.graph, graph, rops, self.vdevice, self.policy, schedule,
                            self.func_name, self.max_ops)


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
    """Re-emits the model's block item by item, one backend call per rProgram region."""

    def __init__(self, ext, members, items, mod, backend):
        super().__init__(mod)
        self.ext, self.members, self.items, self.backend = ext, members, items, backend
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
            units = {op: [self.bindings[i] for i in self.members[op]] for op in ops}
            call, outs = self.backend.build(ops, program, units, self.builder_)
        except self.backend.errors as err:
            logger.warning("RProgramPass: %s keeps its own kernels: %s", program.name, err)
            for index in sorted(inside):
                self._emit(index)
            return
        for index in outside:
            self._emit(index)
        result = self.builder_.emit(call, f"{program.name}_out")  # not the function's name
        for k, var in enumerate(outs):  # one output is returned as a tensor, not a tuple
            value = relax.TupleGetItem(result, k) if len(outs) > 1 else result
            self.builder_.emit_normalized(relax.VarBinding(var, value))
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
