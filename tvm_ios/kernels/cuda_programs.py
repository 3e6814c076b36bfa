"""Plan and generate the CUDA rProgram kernels of a Relax model (no GPU needed).

Every op (and glue op) is lowered by TVM and scheduled for the GPU by dlight
(:func:`~tvm_ios.kernels.gpu_roperator.gpu_roperator`); its grid, block and shared memory
make its rKernel. An op TVM cannot schedule for the GPU, or whose kernel cannot become an
rTask, keeps its own kernel with a warning. A policy plans rPrograms on the target's
vDevice; each becomes one persistent kernel (:mod:`tvm_ios.kernels.codegen_cuda`) whose
CUDA source and summary are returned. rTask times are analytical estimates: nothing here is
measured on a GPU.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

from tvm import relax

from .. import _tvm
from ..cost.devices import get_device
from ..graph.extract import extract
from .codegen_cuda import build_cuda_primfunc, cuda_source, register_budget
from .gpu_roperator import gpu_roperator
from .regions import augment, plan_regions
from .roperator import RKernel, ROperator
from .tvm_kernels import UnsupportedKernel, lower_bindings
from .vdevice import target_vdevice

__all__ = ["CudaProgram", "CudaKernel", "cuda_rprograms", "plan_gpu_ops", "build_program"]

logger = logging.getLogger(__name__)


@dataclass
class CudaProgram:
    """One generated rProgram kernel: the plan, its CUDA source and a summary."""

    program: object
    source: str
    summary: dict = field(default_factory=dict)


def _task_us(node, num_tasks: int, device) -> float:
    per_sm = device.peak_gflops * 1e3 / device.units
    return max(node.flops / num_tasks / per_sm,
               node.bytes / num_tasks / (device.bandwidth_gbs * 1e3 / device.units)) + 0.3


def plan_gpu_ops(graph, members, bindings, target) -> tuple[dict, dict]:
    """GPU rOperators of every node of an augmented graph (the per-op lowering shared by
    :func:`cuda_rprograms` and the CUDA backend of ``RProgramPass``).

    Parameters
    ----------
    graph : OpGraph
        The graph with glue nodes (:func:`~tvm_ios.kernels.regions.augment`); a node TVM
        cannot schedule for the GPU is marked ``schedulable = False`` (with a warning).
    members : dict
        Node name -> indices of its bindings in ``bindings``.
    target : Target
        A CUDA target.

    Returns
    -------
    (dict, dict)
        Node name -> ``(GPUROperator, KernelStep)`` for the nodes that can be rTasks, and an
        rOperator for every node (a placeholder for the others).
    """
    device = get_device("a100" if target_vdevice(target).name == "a100" else "h100")
    gpu, rops = {}, {}
    for node in graph.nodes:
        unit = [bindings[i] for i in members[node.name]]
        try:
            steps = lower_bindings(unit, unit[-1].var)
            if len(steps) != 1:
                raise UnsupportedKernel(f"lowers to {len(steps)} kernels")
            gpu[node.name] = (gpu_roperator(node.name, steps[0], target), steps[0])
        except (UnsupportedKernel, ValueError, RuntimeError) as err:
            if node.schedulable:
                logger.warning("op %s keeps its own kernel: %s", node.name, err)
            node.schedulable = False
            continue
        rop = gpu[node.name][0]
        kernel = rop.rkernel(_task_us(node, rop.num_tasks, device))
        rops[node.name] = ROperator(node.name, [kernel])
    for node in graph.nodes:
        rops.setdefault(node.name, ROperator(node.name, [_placeholder(node)]))
    return gpu, rops


def _placeholder(node):
    """rKernel of an op that keeps its own kernel (never part of a generated program)."""
    return RKernel("own-kernel", 1, 32, 1.0)


def cuda_rprograms(mod, target, policy: str = "ios", schedule=None, func_name: str = "main",
                   num_veus: int | None = None) -> list[CudaProgram]:
    """CUDA kernels of the rPrograms of ``mod[func_name]`` for ``target``.

    Parameters
    ----------
    mod : IRModule
        The model (weights bound as constants or not).
    target : str, dict or Target
        A CUDA target, e.g. ``"nvidia/nvidia-h100"`` (sm_90a) or ``{"kind": "cuda",
        "arch": "sm_80"}``.
    policy : {"ios", "wavefront"}
        rProgram policy; ``schedule`` (of the extracted graph) is required for ``"ios"``.
    """
    target = _tvm.make_target(target)
    vdevice = target_vdevice(target)
    ext = extract(mod[func_name], name=func_name)
    graph, members = augment(ext)
    bindings = list(ext.func.body.blocks[ext.block_index].bindings)
    gpu, rops = plan_gpu_ops(graph, members, bindings, target)
    _, items = plan_regions(ext.graph, graph, rops, vdevice, policy, schedule, func_name)
    out = []
    for item in items:
        if item[0] != "region":
            continue
        kernel = build_program(item[2], item[1], gpu, vdevice)
        source, _ = cuda_source(kernel.func, target)
        out.append(CudaProgram(item[2], source, kernel.summary(target)))
    return out


@dataclass
class CudaKernel:
    """The persistent-kernel PrimFunc of one rProgram and what a caller passes to it.

    Its parameters are ``inputs``, then the int32 ``tables`` (in order), then the step
    array (``steps_words`` int32, zero on the first launch; the kernel resets it), then
    ``outputs``: destination-passing style, so it can be called with ``call_dps_packed``.
    """

    program: object
    func: object
    tables: dict
    inputs: list   # tensor keys (Relax Vars or Constants)
    outputs: list  # the Relax Vars the ops write, in the program's op order
    rops: dict
    vdevice: object

    @property
    def steps_words(self) -> int:
        """Length of the step array: one step per vEU and the done counter."""
        return self.program.num_veus + 1

    def summary(self, target) -> dict:
        """vEUs, threads, rTasks, barriers, shared memory and registers of the kernel."""
        program, rops, vdevice = self.program, self.rops, self.vdevice
        threads = max(r.threads for r in rops.values())
        smem = max(r.smem_bytes for r in rops.values())
        return {"name": program.name, "vdevice": vdevice.name,
                "arch": str(target.attrs.get("arch", "")), "veus": program.num_veus,
                "threads_per_veu": threads, "rtasks": program.num_tasks,
                "barriers": program.num_barriers, "dynamic_shared_bytes": smem,
                "ops": list(program.ops), "table_words": sum(len(v) for v in
                                                              self.tables.values()),
                "named_barrier_ops": sorted(op for op, r in rops.items() if r.threads < threads),
                "rtask_times": "analytical estimates (no GPU measurement)",
                "max_resident_veus": vdevice.max_veus(threads, 32, smem),
                "largest_grid": max(math.prod(r.grid) for r in rops.values()),
                "max_registers_per_thread": register_budget(vdevice, program.num_veus,
                                                            threads)}


def build_program(program, ops, gpu, vdevice) -> CudaKernel:
    """The :class:`CudaKernel` of ``program`` over the GPU rOperators ``gpu`` of its ops."""
    tensors, args_of, outs = {}, {}, []
    local = program.meta.get("local_ops", {})  # outputs kept on their vEU (instances)
    for op in ops:
        _, step = gpu[op]
        args_of[op] = list(step.inputs) + [step.output]
        if op not in local:
            outs.append(step.output)
        for key in args_of[op]:
            if not any(key.same_as(t) for t in tensors):
                name = _tvm.var_name(key) if isinstance(key, relax.Var) else "w"
                tensors[key] = (f"{name}_{len(tensors)}", _tvm.shape_of(key),
                                _tvm.dtype_of(key))
    made = [gpu[op][1].output for op in ops]
    inputs = [k for k in tensors if not any(k.same_as(o) for o in made)]
    rops = {op: gpu[op][0] for op in ops}
    kept = _kept(program, ops, gpu, tensors, local) if local else None
    func, tables = build_cuda_primfunc(program, rops, tensors, inputs, outs, vdevice, args_of,
                                       kept)
    return CudaKernel(program, func, tables, inputs, outs, rops, vdevice)


def _kept(program, ops, gpu, tensors, local):
    """Shared-memory offsets of the outputs of ``local`` ops (float32 only)."""
    from .scratch import STATIC_SHARED_BYTES, pack, program_events  # noqa: PLC0415

    keys = {op: gpu[op][1].output for op in ops}
    touches = {op: ([id(keys[op])], [id(a) for a in gpu[op][1].inputs]) for op in ops}
    elements = {}
    for op in local:
        _, shape, dtype = next(v for k, v in tensors.items() if k.same_as(keys[op]))
        if dtype != "float32":
            raise UnsupportedKernel(f"{op}: only float32 outputs are kept in shared memory")
        elements[id(keys[op])] = math.prod(shape)
    plan = pack(program_events(program, touches), elements)
    if 4 * max(plan.sizes) > STATIC_SHARED_BYTES:
        raise UnsupportedKernel(f"{program.name}: kept outputs need {4 * max(plan.sizes)} B "
                                f"of shared memory, more than {STATIC_SHARED_BYTES} B")
    plan.offsets = {keys[op]: plan.offsets[id(keys[op])] for op in local}
    return plan
