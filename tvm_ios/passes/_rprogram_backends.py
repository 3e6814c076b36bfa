"""The two backends of ``RProgramPass``: the CPU vDevice (``llvm``) and CUDA.

One region rewriter (:mod:`tvm_ios.passes.rprogram_pass`) asks its backend three things,
in this order for each module: the rOperators the policy plans with (``rops``), the Relax
call that runs one rProgram and the variables it defines (``build``), and the module's last
touch (``finish``).

* :class:`CPUBackend`: TVM's llvm kernels of each op inlined into one PrimFunc (one vEU
  per thread-pool worker), called with ``call_tir``; the default TIR pipeline lowers it.
* :class:`CUDABackend`: TVM's dlight-scheduled GPU kernel of each op (the same per-op
  lowering as :func:`~tvm_ios.kernels.cuda_programs.cuda_rprograms`) merged into one
  persistent kernel, already lowered, so it must not go through the default TIR pipeline
  again: it is built here by its own pipeline (:func:`~tvm_ios.kernels.codegen_cuda.
  cuda_source`; all programs of a module in one), the runtime module is attached to the IRModule as ``external_mods`` (which
  ``tvm.compile`` imports into the library, as for BYOC) and called with
  ``call_dps_packed``. Its int32 tables are constants; so is its step array, one zero
  array per rProgram: it is zero on the first launch and the kernel zeroes it again at its
  end, so no host reset is needed and programs never share steps.
"""
from __future__ import annotations

import logging

import numpy as np
from tvm import relax

from .. import _tvm
from ..cost.analytical import AnalyticalCostModel
from ..kernels.codegen_cpu import CPUBackendError, build_cpu_primfunc
from ..kernels.roperator import estimate_roperators
from ..kernels.tuned_build import serial_kernels
from ..kernels.tvm_kernels import UnsupportedKernel, lower_bindings
from ..kernels.vdevice import ResidencyError, cpu_vdevice, target_vdevice

__all__ = ["CPUBackend", "CUDABackend", "make_backend"]

logger = logging.getLogger(__name__)


def make_backend(target, num_veus: int | None, kernels=None):
    """The backend of ``target`` (``llvm`` or a CUDA target); ``kernels``: a kernel database
    whose tuned kernels the CPU vDevice inlines (:mod:`tvm_ios.kernels.tuned_build`)."""
    target = _tvm.make_target(target)
    kind = target.kind.name
    if kind == "llvm":
        return CPUBackend(num_veus, kernels)
    if kind == "cuda":
        return CUDABackend(target, num_veus)
    raise ValueError(f"RProgramPass: no rProgram backend for target kind {kind!r} "
                     "(llvm and cuda are supported)")


def _out_types(outs) -> list:
    return [relax.TensorType(_tvm.shape_of(v), _tvm.dtype_of(v)) for v in outs]


class CPUBackend:
    """rPrograms on the CPU vDevice: one ``call_tir`` to a PrimFunc per program."""

    errors = (UnsupportedKernel, CPUBackendError)

    def __init__(self, num_veus: int | None = None, kernels=None):
        if num_veus is not None:
            cpu_vdevice().check(num_veus, what="RProgramPass")  # one vEU per pool worker
        self.vdevice = cpu_vdevice(num_veus)
        self.device = "cpu"
        self.transform = serial_kernels(kernels) if kernels is not None else None

    def rops(self, graph, members, bindings) -> dict:
        """Analytical CPU rOperators of every node."""
        return estimate_roperators(graph, "cpu")

    def build(self, ops, program, units, builder):
        """``call_tir`` of the program's PrimFunc (added to ``builder``) and its outputs."""
        steps_of, outs = {}, []
        local = program.meta.get("local_ops", {})  # outputs kept on their vEU (instances)
        for op in ops:
            steps_of[op] = lower_bindings(units[op], units[op][-1].var, self.transform)
            if op not in local:
                outs.append(units[op][-1].var)
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
        func = build_cpu_primfunc(program, steps_of, tensors, inputs, outs,
                                  veu_scratch="local_ops" in program.meta)
        gvar = builder.add_func(func, program.name)
        return relax.call_tir(gvar, inputs, out_ty=_out_types(outs)), outs

    def finish(self, mod):
        """Nothing to add: the PrimFuncs are in the module."""
        return mod


class CUDABackend:
    """rPrograms as persistent CUDA kernels, prebuilt and called with ``call_dps_packed``."""

    errors = (UnsupportedKernel, ResidencyError)

    def __init__(self, target, num_veus: int | None = None):
        if num_veus is not None:
            raise ValueError("RProgramPass: num_veus sets the CPU vDevice; on CUDA the "
                             "policy sizes each program within the GPU's occupancy")
        self.target = target
        self.vdevice = target_vdevice(target)
        self.device = "a100" if self.vdevice.name == "a100" else "h100"
        self.gpu: dict = {}
        self.kernels: list = []
        self.source: str | None = None

    def rops(self, graph, members, bindings) -> dict:
        """GPU rOperators from TVM's dlight kernels; unschedulable ops are marked. Starts a
        run: kernels of an earlier module are forgotten."""
        from ..kernels.cuda_programs import plan_gpu_ops  # noqa: PLC0415  (dlight import)

        self.gpu, rops = plan_gpu_ops(graph, members, bindings, self.target)
        self.kernels, self.source = [], None
        return rops

    def build(self, ops, program, units, builder):
        """``call_dps_packed`` of the program's kernel (built in :meth:`finish`), and its
        outputs."""
        from ..kernels.cuda_programs import build_program  # noqa: PLC0415

        missing = [op for op in ops if op not in self.gpu]
        if missing:
            raise UnsupportedKernel(f"ops {missing[:3]} have no GPU rTasks")
        kernel = build_program(program, ops, self.gpu, self.vdevice)
        self.kernels.append(kernel)
        args = list(kernel.inputs)
        args += [relax.const(np.asarray(v, "int32")) for v in kernel.tables.values()]
        args.append(relax.const(np.zeros(kernel.steps_words, "int32")))
        call = relax.call_dps_packed(program.name, args, out_ty=_out_types(kernel.outputs))
        return call, list(kernel.outputs)

    def finish(self, mod):
        """``mod`` with the rProgram kernels, built into one runtime module (one CUDA module
        beside TVM's), added to its ``external_mods``."""
        from ..kernels.codegen_cuda import cuda_source  # noqa: PLC0415

        if not self.kernels:
            return mod
        self.source, lib = cuda_source([k.func for k in self.kernels], self.target)
        attrs = dict(mod.attrs) if mod.attrs else {}
        return mod.with_attr("external_mods", list(attrs.get("external_mods", [])) + [lib])


def default_cost_model(backend):
    """The analytical cost model of the backend's device (for the IOS schedule)."""
    return AnalyticalCostModel(backend.device)
