"""The backends of ``RProgramPass``: the CPU vDevice (``llvm``) and persistent GPU kernels.

One region rewriter (:mod:`tvm_ios.passes.rprogram_pass`) asks its backend, for each module:
the rOperators the policy plans with (``rops``), the Relax call that runs one rProgram and
the variables it defines (``build``), the checks to run after the function's dataflow
(``checks``) and the module's last touch (``finish``).

* :class:`CPUBackend`: TVM's llvm kernels of each op inlined into one PrimFunc (one vEU
  per thread-pool worker), called with ``call_tir``; the default TIR pipeline lowers it.
  Its steps live in the PrimFunc's own workspace; it raises a failed bounded wait itself.
* :class:`GPUBackend` (CUDA, OpenCL): TVM's dlight-scheduled GPU kernel of each op (the
  per-op lowering of :func:`~tvm_ios.kernels.gpu.programs.plan_gpu_ops`) merged into one
  persistent kernel, already lowered, so it does not go through the default TIR pipeline
  again: all programs of a module are built by the pipeline's tail into one runtime module
  (:func:`~tvm_ios.kernels.gpu.build.build_kernels`), attached to the IRModule as
  ``external_mods`` (which ``tvm.compile`` imports into the library, as for BYOC) and
  called with ``call_dps_packed``. Its int32 tables are constants; its step array is an
  *output* of the call, so the VM gives each call its own, which the kernel function
  zeroes before the persistent kernel runs (no mutated constant, nothing shared between
  programs). The step array's error record is checked after the function's dataflow
  block: a failed bounded wait raises an ``AssertionError`` naming the program, the vEU
  and the step it waited for. Where the pass runs on a host with the CUDA device, each
  program is first checked against the device and its compiled kernel's occupancy
  (:mod:`~tvm_ios.kernels.gpu.residency`); one that cannot be resident keeps its stage's
  kernels, with a warning naming the numbers.
"""
from __future__ import annotations

import dataclasses
import logging

import numpy as np
from tvm import relax

from .. import _tvm
from ..cost.analytical import AnalyticalCostModel
from ..kernels.bounded_wait import DEFAULT_WAIT_BOUND, wait_us
from ..kernels.cpu.codegen import CPUBackendError, build_cpu_primfunc, sliced_ops
from ..kernels.roperator import SLICES, cut_into_slices, estimate_roperators
from ..kernels.cpu.slicing import sliceable
from ..kernels.tuned_build import kernel_times, parallel_kernels, serial_kernels
from ..kernels.tvm_kernels import UnsupportedKernel, lower_bindings
from ..kernels.vdevice import ResidencyError, cpu_vdevice, target_vdevice

__all__ = ["CPUBackend", "GPUBackend", "make_backend"]

logger = logging.getLogger(__name__)


def make_backend(target, num_veus: int | None, wait_bound: int = DEFAULT_WAIT_BOUND,
                 kernels=None, balance: bool = False, check_args: bool = True):
    """The backend of ``target`` (``llvm``, a CUDA or an OpenCL target); ``kernels``: a kernel
    database whose tuned kernels the CPU vDevice inlines (:mod:`tvm_ios.kernels.tuned_build`);
    ``check_args``: whether the GPU kernels' host stubs check their arguments."""
    target = _tvm.make_target(target)
    kind = target.kind.name
    if kind == "llvm":
        return CPUBackend(num_veus, wait_bound, kernels, balance)
    if kind in ("cuda", "opencl"):
        return GPUBackend(target, num_veus, wait_bound, check_args)
    raise ValueError(f"RProgramPass: no rProgram backend for target kind {kind!r} "
                     "(llvm, cuda and opencl are supported)")


def _out_types(outs) -> list:
    return [relax.TensorType(_tvm.shape_of(v), _tvm.dtype_of(v)) for v in outs]


class CPUBackend:
    """rPrograms on the CPU vDevice: one ``call_tir`` to a PrimFunc per program."""

    errors = (UnsupportedKernel, CPUBackendError)

    def __init__(self, num_veus: int | None = None, wait_bound: int = DEFAULT_WAIT_BOUND,
                 kernels=None, balance: bool = False):
        if num_veus is not None:
            cpu_vdevice().check(num_veus, what="RProgramPass")  # one vEU per pool worker
        self.balance = balance
        self.vdevice = cpu_vdevice(num_veus)
        self.device, self.kind, self.wait_bound = "cpu", "llvm", wait_bound
        self.transform = serial_kernels(kernels) if kernels is not None else None
        self.kernels = kernels
        self.sliced = parallel_kernels(kernels) if kernels is not None else None
        self.parallel: dict = {}  # op -> its lowered parallel kernels (this module)

    def rops(self, graph, members, bindings) -> dict:
        """CPU rOperators of every node: analytical, one rTask per op. Balancing with a
        kernel database, priced by what TVM's runner measured for the op's serial tuned
        kernels (:func:`~tvm_ios.kernels.tuned_build.kernel_times`); where the op's
        parallel kernel is one parallel loop (:func:`~tvm_ios.kernels.cpu.slicing.sliceable`)
        it may also be cut into one slice per vEU, each priced as its share of the serial
        time at ``SLICE_EFFICIENCY`` (the committed databases' parallel records were timed
        on one thread). Starts a module: lowerings of an earlier one are forgotten."""
        self.parallel = {}
        if not self.balance or self.kernels is None:
            return estimate_roperators(graph, "cpu")
        slices = self.vdevice.sms if self.kernels.has("parallel") else 1
        rops = estimate_roperators(graph, "cpu", slices=slices)
        for op, rop in rops.items():
            rop.kernels = self._kernels(op, [bindings[i] for i in members[op]], rop.kernels)
        return rops

    def _kernels(self, op: str, units: list, estimated: list) -> list:
        """The op's rKernels priced by the database's records where it has them."""
        lowered: dict = {}

        def keep(mod):  # the untuned kernels, for their records; the parallel ones inlined
            lowered["untuned"] = mod
            return self.sliced(mod)
        try:
            steps = lower_bindings(units, units[-1].var, keep)
        except UnsupportedKernel:
            return estimated[:1]
        serial = kernel_times(lowered["untuned"], self.kernels, "serial") \
            if self.kernels.has("serial") else None
        whole = estimated[0] if serial is None else \
            dataclasses.replace(estimated[0], task_us=serial, source="record")
        cut = [k for k in estimated if k.name == SLICES]
        if not cut or len(steps) != 1 or not sliceable(steps[0].func, cut[0].num_tasks):
            return [whole]
        self.parallel[op] = steps
        return [whole, cut_into_slices(whole, cut[0].num_tasks)]

    def build(self, ops, program, units, builder):
        """``call_tir`` of the program's PrimFunc (added to ``builder``), its outputs, and
        no check (the PrimFunc raises a failed wait itself)."""
        steps_of, outs = {}, []
        local = program.meta.get("local_ops", {})  # outputs kept on their vEU (instances)
        sliced = sliced_ops(program)
        for op in ops:  # a sliced op inlines slices of its tuned parallel kernel
            if op in sliced and op in self.parallel:
                steps_of[op] = self.parallel[op]
            else:
                transform = self.sliced if op in sliced else self.transform
                steps_of[op] = lower_bindings(units[op], units[op][-1].var, transform)
            if op not in local:
                outs.append(units[op][-1].var)
        tensors, inputs = {}, []
        made = {s.output for op in ops for s in steps_of[op]}
        for op in ops:
            for step in steps_of[op]:
                for expr in list(step.inputs) + [step.output]:
                    if expr in tensors:
                        continue
                    name = _tvm.var_name(expr) if isinstance(expr, relax.Var) else "w"
                    tensors[expr] = (f"{name}_{len(tensors)}", _tvm.shape_of(expr),
                                     _tvm.dtype_of(expr))
                    if expr not in made:
                        inputs.append(expr)
        func = build_cpu_primfunc(program, steps_of, tensors, inputs, outs, self.wait_bound,
                                  veu_scratch="local_ops" in program.meta)
        gvar = builder.add_func(func, program.name)
        return relax.call_tir(gvar, inputs, out_ty=_out_types(outs)), outs, None

    def finish(self, mod):
        """Nothing to add: the PrimFuncs are in the module."""
        return mod


class GPUBackend:
    """rPrograms as persistent CUDA or OpenCL kernels, prebuilt, called with
    ``call_dps_packed``."""

    errors = (UnsupportedKernel, ResidencyError)

    def __init__(self, target, num_veus: int | None = None,
                 wait_bound: int = DEFAULT_WAIT_BOUND, check_args: bool = True):
        if num_veus is not None:
            raise ValueError("RProgramPass: num_veus sets the CPU vDevice; on a GPU the "
                             "policy sizes each program within the device's occupancy")
        self.target, self.kind, self.wait_bound = target, target.kind.name, wait_bound
        self.check_args = check_args
        self.wait_unit = "polls"
        if self.kind == "cuda":  # a time: microseconds of %globaltimer ($TVM_IOS_WAIT_US)
            self.wait_unit = "us"
            self.wait_bound = wait_us() if wait_bound == DEFAULT_WAIT_BOUND else wait_bound
        self.vdevice = target_vdevice(target)
        self.device = self.vdevice.cost_device
        self.gpu: dict = {}
        self.kernels: list = []
        self.source: str | None = None

    def rops(self, graph, members, bindings) -> dict:
        """GPU rOperators from TVM's dlight kernels; unschedulable ops are marked. Starts a
        run: kernels of an earlier module are forgotten."""
        from ..kernels.gpu.programs import plan_gpu_ops

        self.gpu, rops = plan_gpu_ops(graph, members, bindings, self.target)
        self.kernels, self.source = [], None
        return rops

    def build(self, ops, program, units, builder):
        """``call_dps_packed`` of the program's kernel (built in :meth:`finish`), the
        outputs, and the kernel (whose step array :meth:`checks` reads)."""
        from ..kernels.gpu.programs import build_program

        missing = [op for op in ops if op not in self.gpu]
        if missing:
            raise UnsupportedKernel(f"ops {missing[:3]} have no GPU rTasks")
        kernel = build_program(program, ops, self.gpu, self.vdevice, self.target,
                               self.wait_bound)
        self._check_device(kernel)
        self.kernels.append(kernel)
        args = list(kernel.inputs)
        args += [relax.const(np.asarray(v, "int32")) for v in kernel.tables.values()]
        steps = relax.TensorType((kernel.workspace.words,), "int32")
        call = relax.call_dps_packed(program.name, args,
                                     out_ty=_out_types(kernel.outputs) + [steps])
        return call, list(kernel.outputs), kernel

    def _check_device(self, kernel) -> None:
        """On a host with the CUDA device: refuse (ResidencyError, with the driver's numbers)
        a program whose vEUs cannot all be resident there, so its stage keeps its kernels."""
        if self.kind != "cuda" or not _tvm.device_exists(self.target):
            return
        from ..kernels.gpu.build import build_kernels
        from ..kernels.gpu.residency import check_program

        try:
            source = build_kernels(kernel, self.target, arg_checks=False).source  # device code only
            check_program(kernel, source, self.target)
        except (RuntimeError, OSError) as err:  # no driver library, no nvcc: launch decides
            logger.warning("RProgramPass: could not check %s on this GPU (%s); its launch is "
                           "cooperative, so a grid that cannot be resident fails to launch",
                           kernel.program.name, err)

    def record(self, builder, steps, kernel):
        """Emit (as dataflow outputs) the failure flag and record of ``steps``; the
        ``assert_op`` call that checks them after the dataflow block."""
        ws = kernel.workspace

        def word(index):
            return builder.emit(relax.op.take(steps, relax.const(index, "int64"), axis=0,
                                                mode="clip"))
        ok = builder.emit_output(relax.op.equal(word(ws.error), relax.const(0, "int32")))
        record = [builder.emit_output(word(i)) for i in (ws.waiter, ws.awaited, ws.step)]
        text = (f"rProgram {kernel.program.name}: vEU {{}} waited past its bound "
                f"({self.wait_bound} {self.wait_unit}) for vEU {{}} to reach step {{}}; the "
                "program was "
                "abandoned (are all its vEUs resident on this GPU at once?)")
        return relax.op.assert_op(ok, record, text)

    def finish(self, mod):
        """``mod`` with the rProgram kernels, built into one runtime module (one CUDA or
        OpenCL module beside TVM's), added to its ``external_mods``; their host stubs check
        each argument unless the backend was made without ``check_args``."""
        from ..kernels.gpu.build import build_kernels

        if not self.kernels:
            return mod
        built = build_kernels(self.kernels, self.target, arg_checks=self.check_args)
        self.source = built.source
        attrs = dict(mod.attrs) if mod.attrs else {}
        return mod.with_attr("external_mods",
                             list(attrs.get("external_mods", [])) + [built.lib])


def default_cost_model(backend):
    """The analytical cost model of the backend's device (for the IOS schedule)."""
    return AnalyticalCostModel(backend.device)
