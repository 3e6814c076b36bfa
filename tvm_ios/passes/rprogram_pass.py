"""``RProgramPass``: run each multi-group stage (or wavefront rProgram) as one kernel.

After :class:`~tvm_ios.passes.ios_pass.IOSPass` (or with the schedule it records), the pass
plans rPrograms with a policy (``"ios"``: one per concurrent stage of two or more groups;
``"wavefront"``: Rammer's Algorithm 1 over the whole graph), lowers every op of a program
with TVM's own kernels and combines them into one kernel per rProgram, through one of two
backends (:mod:`.rprogram_backends`): for ``llvm`` a PrimFunc of the CPU vDevice called
with ``call_tir``; for a CUDA or OpenCL target a persistent kernel built here by TVM's TIR
pipeline tail, attached as an external module and called with ``call_dps_packed``, so that
``tvm.compile(mod, target)`` links it beside TVM's own kernels of the other ops (the GPU
programs' bounded-wait records are checked after the dataflow block). Each op's output
variable is re-bound to its slot of the call's result, so every later use stays valid.
Sequential stages keep their own kernels. A program that cannot be built (an op TVM lowers
to something other than one kernel, a tensor flowing through a free op inside the program)
keeps its ops' own kernels with a warning.

What a run built is recorded on the module it returns (read it with :func:`rprograms_of`);
the pass's ``programs`` and ``planned`` also keep its last run's, for older callers.

The target is the one the module is compiled for: ``target=None`` takes
``tvm.target.Target.current()`` (``llvm`` when there is none) when the pass runs, and an
explicit target that differs from the current one in kind or architecture is an error.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from tvm import relax

from .. import _tvm
from ..graph.extract import extract
from ..kernels.rprogram import RProgram
from ..kernels.tvm_kernels import UnsupportedKernel
from ..schedule.ios import ios_schedule
from ..schedule.schedule import Schedule, ScheduleError
from ..schedule.validate import validate_schedule
from ..kernels.program_regions import MAX_PROGRAM_OPS, RegionItem, augment, binding_deps, plan_regions
from ..kernels.bounded_wait import DEFAULT_WAIT_BOUND
from .rprogram_backends import default_cost_model, make_backend
from .apply_schedule import record_schedule, schedule_of

__all__ = ["RProgramPass", "POLICIES", "RPROGRAMS_ATTR", "RProgramReport", "rprograms_of"]

logger = logging.getLogger(__name__)
POLICIES = ("ios", "wavefront", "instances")

#: Module attribute holding ``{function name: {"planned": n, "programs": [rProgram dict]}}``.
RPROGRAMS_ATTR = "tvm_ios.rprograms"


@dataclass
class RProgramReport:
    """What ``RProgramPass`` did to one function: the rPrograms it built (each one kernel)
    and how many its policy planned (the others kept their ops' own kernels)."""

    programs: list[RProgram]
    planned: int


def rprograms_of(mod, func_name: str = "main") -> RProgramReport | None:
    """The report ``RProgramPass`` recorded on ``mod`` for ``func_name``, or None."""
    if mod.attrs is None or RPROGRAMS_ATTR not in mod.attrs:
        return None
    stored = json.loads(str(mod.attrs[RPROGRAMS_ATTR])).get(func_name)
    if stored is None:
        return None
    return RProgramReport([RProgram.from_json(p) for p in stored["programs"]],
                          int(stored["planned"]))


def _record_programs(mod, func_name: str, programs: list, planned: int):
    """``mod`` with the run's report for ``func_name`` added to :data:`RPROGRAMS_ATTR`."""
    stored = {}
    if mod.attrs is not None and RPROGRAMS_ATTR in mod.attrs:
        stored = json.loads(str(mod.attrs[RPROGRAMS_ATTR]))
    stored[func_name] = {"planned": planned, "programs": [p.to_dict() for p in programs]}
    return mod.with_attr(RPROGRAMS_ATTR, json.dumps(stored, default=str))


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
    target : str, dict or Target, optional
        ``llvm`` (the CPU vDevice), a CUDA target such as ``"nvidia/nvidia-h100"`` or an
        OpenCL target; compile the result with ``tvm.compile`` for that target. Default: the
        current target (``with target:`` around the pass or ``tvm.compile``), else ``llvm``.
    max_ops : int, optional
        Most ops of one wavefront rProgram (default :data:`~tvm_ios.kernels.program_regions.
        MAX_PROGRAM_OPS`; None: unbounded).
    wait_bound : int
        Polls of one awaited step before a vEU gives up with a BoundedWaitError.
    check_waits : bool
        On GPU targets, check each program's bounded-wait record after the dataflow block
        (Relax ``assert_op``, whose runtime is TVM's Python ``relax.run.assert_op``); off, a
        failed wait leaves wrong outputs but no error.
    check_args : bool
        On GPU targets, keep TVM's checks of each argument (type, shape, dtype, device,
        offset) in the kernels' host stubs. Only the VM calls them, with the tensors the
        module's types fix, so the checks catch a bug of this pass, not of the caller;
        they are most of the host code (a program takes dozens of tensors) and of its
        compile time: off, Inception V3's GraphTurbo artifact builds in 367 s instead
        of 979 s (a timing build).
    kernels : KernelDB, optional
        Tuned kernels for the CPU vDevice's vEUs (serial variants; see
        :mod:`tvm_ios.kernels.tuned_build`).
    """

    def __init__(self, policy: str = "ios", num_veus: int | None = None, cost_model=None,
                 func_name: str = "main", target=None, max_ops: int | None = MAX_PROGRAM_OPS,
                 wait_bound: int = DEFAULT_WAIT_BOUND, check_waits: bool = True, kernels=None,
                 balance: bool = False, check_args: bool = True):
        if policy not in POLICIES:
            raise ValueError(f"RProgramPass: policy must be one of {POLICIES}, got {policy!r}")
        self.policy, self.func_name, self.max_ops = policy, func_name, max_ops
        self.num_veus, self.wait_bound, self.cost_model = num_veus, wait_bound, cost_model
        self.check_waits, self.kernels, self.balance = check_waits, kernels, balance
        self.check_args = check_args
        self.target = None if target is None else _tvm.make_target(target)
        self.backend = self.vdevice = None
        if self.target is not None:
            self._use(self.target)
        self.programs: list = []  # the rPrograms built by the last run
        self.planned = 0  # the rPrograms the policy planned (some may keep own kernels)

    def _use(self, target) -> None:
        """Make the backend of ``target`` (a new one for each module it rewrites)."""
        self.backend = make_backend(target, self.num_veus, self.wait_bound, self.kernels,
                                    self.balance, self.check_args)
        self.vdevice = self.backend.vdevice

    def _target(self):
        """The target of this run: the pass's own, checked against the current one."""
        current = _tvm.Target.current(allow_none=True)
        if self.target is None:
            return current if current is not None else _tvm.make_target("llvm")
        if current is not None and _key(current) != _key(self.target):
            raise ValueError(f"RProgramPass was made for target {self.target.kind.name} "
                             f"{_key(self.target)[1] or ''} but the module is compiled for "
                             f"{current.kind.name} {_key(current)[1] or ''} "
                             f"({current}); make the pass for that target or leave target "
                             "unset to take the current one")
        return self.target

    def transform_module(self, mod, ctx):
        if self.func_name not in [gv.name_hint for gv in mod.get_global_vars()]:
            raise ValueError(f"RProgramPass: module has no function {self.func_name!r}")
        self._use(self._target())
        original = mod
        ext = extract(mod[self.func_name], name=self.func_name)
        graph, members = augment(ext)
        schedule, items = self._plan(mod, ext, graph, members)
        rewriter = _RegionRewriter(ext, members, items, mod.clone(), self.backend,
                                   self.check_waits)
        new_func = rewriter.visit_expr(ext.func)  # (the builder adds functions to its module)
        mod = rewriter.builder_.get()
        mod[mod.get_global_var(self.func_name)] = rewriter.with_checks(new_func)
        mod = self.backend.finish(mod)
        self.programs = rewriter.built
        regions = self.planned = sum(isinstance(item, RegionItem) for item in items)
        logger.info("RProgramPass: %d rPrograms built, %d kept as own kernels",
                    len(rewriter.built), regions - len(rewriter.built))
        if not rewriter.built:  # nothing to run on vEUs: keep the bindings' order, which
            mod = original      # decides how the build fuses (and finds tuned kernels)
        mod = _record_programs(mod, self.func_name, rewriter.built, regions)
        return record_schedule(mod, self.func_name, schedule)

    def _schedule(self, mod, graph) -> Schedule:
        recorded = _recorded(mod, self.func_name, graph)
        if recorded is not None and all(s.strategy == "concurrent" for s in recorded.stages):
            return recorded
        cost_model = self.cost_model or default_cost_model(self.backend)
        return ios_schedule(graph, cost_model, strategy="parallel")

    def _plan(self, mod, ext, graph, members) -> tuple[Schedule, list]:
        """The schedule recorded on the module and the emission items."""
        bindings = list(ext.func.body.blocks[ext.block_index].bindings)
        rops = self.backend.rops(graph, members, bindings)
        if self.policy == "instances":  # GraphTurbo instances as rTasks
            from .instance_regions import plan_instance_items

            return plan_instance_items(mod, ext, graph, members, rops, self.backend,
                                       self.func_name, self.max_ops)
        schedule = self._schedule(mod, ext.graph) if self.policy == "ios" else None
        return plan_regions(ext.graph, graph, rops, self.vdevice, self.policy, schedule,
                            self.func_name, self.max_ops, self.balance)


def _key(target) -> tuple[str, str]:
    """What must agree between the pass's target and the compile target: kind and arch."""
    return target.kind.name, str(target.attrs.get("arch", ""))


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

    def __init__(self, ext, members, items, mod, backend, check_waits=True):
        super().__init__(mod)
        self.check_waits = check_waits
        self.ext, self.members, self.items, self.backend = ext, members, items, backend
        self.target = ext.func.body.blocks[ext.block_index]
        self.bindings = list(self.target.bindings)
        self.deps = binding_deps(self.bindings)
        self.emitted: set[int] = set()
        self.built: list = []
        self.checks: list = []  # backend checks to run after the dataflow block

    def visit_dataflow_block_(self, block):
        if not block.same_as(self.target):
            return super().visit_dataflow_block_(block)
        self.builder_._begin_dataflow_block()
        for item in self.items:
            if isinstance(item, RegionItem):
                self._emit_region(item.ops, item.program)
            else:
                for index in self.members[item.op]:
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
            call, outs, kernel = self.backend.build(ops, program, units, self.builder_)
        except self.backend.errors as err:
            logger.warning("RProgramPass: %s keeps its own kernels: %s", program.name, err)
            for index in sorted(inside):
                self._emit(index)
            return
        for index in outside:
            self._emit(index)
        result = self.builder_.emit(call, f"{program.name}_out")  # not the function's name
        tupled = kernel is not None or len(outs) > 1  # GPU calls also return their steps
        for k, var in enumerate(outs):  # one output is returned as a tensor, not a tuple
            value = relax.TupleGetItem(result, k) if tupled else result
            self.builder_.emit_normalized(relax.VarBinding(var, value))
        if kernel is not None and self.check_waits:
            steps = self.builder_.emit(relax.TupleGetItem(result, len(outs)))
            self.checks.append(self.backend.record(self.builder_, steps, kernel))
        self.emitted |= inside
        self.built.append(program)

    def with_checks(self, func):
        """``func`` with the backend's checks in a binding block after its blocks."""
        if not self.checks:
            return func
        bindings = [relax.VarBinding(relax.Var(f"rp_check{i}", relax.TupleType([])),
                                     self.builder_.normalize(check))
                    for i, check in enumerate(self.checks)]
        body = func.body
        body = relax.SeqExpr(list(body.blocks) + [relax.BindingBlock(bindings)], body.body)
        return relax.Function(func.params, body, func.ret_ty, func.is_pure, func.attrs)

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
