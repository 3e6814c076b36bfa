"""Plan and generate the persistent rProgram kernels of a Relax model for a GPU target.

Every op (and glue op) is lowered by TVM and scheduled for the GPU by dlight
(:func:`~tvm_ios.kernels.gpu.roperator.gpu_roperator`); its grid, block and shared memory
make its rKernel. An op TVM cannot schedule for the GPU, or whose kernel cannot become an
rTask, keeps its own kernel with a warning. A policy plans rPrograms on the target's
vDevice; each becomes one persistent kernel (:mod:`tvm_ios.kernels.gpu.persistent`) rendered
for the target (CUDA or OpenCL; the same TIR, :mod:`tvm_ios.kernels.gpu.sync`). No GPU is
needed; rTask times are analytical estimates: nothing here is measured on a GPU.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

from tvm import relax

from ... import _tvm
from ...hardware import get_device
from ...graph.extract import extract
from .build import build_kernels
from .roperator import gpu_roperator
from ..bounded_wait import DEFAULT_WAIT_BOUND
from .persistent import Workspace, build_persistent_primfunc
from ..program_regions import RegionItem, augment, plan_regions
from ..roperator import RKernel, ROperator
from ..veu_memory import STATIC_SHARED_BYTES, pack, program_events
from .sync import sync_for
from ..tvm_kernels import UnsupportedKernel, lower_bindings
from ..vdevice import register_budget, target_vdevice

__all__ = ["GPUProgram", "PersistentKernel", "gpu_rprograms", "cuda_rprograms",
           "plan_gpu_ops", "plan_programs", "build_program"]

logger = logging.getLogger(__name__)


@dataclass
class GPUProgram:
    """One generated rProgram kernel: the plan, its device source, a summary, the kernel."""

    program: object
    source: str
    summary: dict = field(default_factory=dict)
    kernel: object = None


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
        The graph with glue nodes (:func:`~tvm_ios.kernels.program_regions.augment`); a node TVM
        cannot schedule for the GPU is marked ``schedulable = False`` (with a warning).
    members : dict
        Node name -> indices of its bindings in ``bindings``.
    target : Target
        A GPU target (CUDA or OpenCL).

    Returns
    -------
    (dict, dict)
        Node name -> ``(GPUROperator, KernelStep)`` for the nodes that can be rTasks, and an
        rOperator for every node (a placeholder for the others).
    """
    device = get_device(target_vdevice(target).cost_device)
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


def plan_programs(mod, target, policy: str = "ios", schedule=None, func_name: str = "main"):
    """Plan the rPrograms of ``mod[func_name]`` for a GPU target.

    Returns
    -------
    (list, dict, VDevice)
        ``(ops, program)`` per planned region, the GPU rOperators of the ops
        (:func:`plan_gpu_ops`) and the target's vDevice.
    """
    target = _tvm.make_target(target)
    vdevice = target_vdevice(target)
    ext = extract(mod[func_name], name=func_name)
    graph, members = augment(ext)
    bindings = list(ext.func.body.blocks[ext.block_index].bindings)
    gpu, rops = plan_gpu_ops(graph, members, bindings, target)
    _, items = plan_regions(ext.graph, graph, rops, vdevice, policy, schedule, func_name)
    return ([(item.ops, item.program) for item in items if isinstance(item, RegionItem)], gpu,
            vdevice)


def gpu_rprograms(mod, target, policy: str = "ios", schedule=None, func_name: str = "main",
                  wait_bound: int = DEFAULT_WAIT_BOUND) -> list[GPUProgram]:
    """The persistent kernels of the rPrograms of ``mod[func_name]`` for ``target``.

    Parameters
    ----------
    mod : IRModule
        The model (weights bound as constants or not).
    target : str, dict or Target
        A CUDA target, e.g. ``"nvidia/nvidia-h100"`` (sm_90a) or ``{"kind": "cuda",
        "arch": "sm_80"}``, or an OpenCL target.
    policy : {"ios", "wavefront"}
        rProgram policy; ``schedule`` (of the extracted graph) is required for ``"ios"``.
    """
    target = _tvm.make_target(target)
    regions, gpu, vdevice = plan_programs(mod, target, policy, schedule, func_name)
    out = []
    for ops, program in regions:
        kernel = build_program(program, ops, gpu, vdevice, target, wait_bound)
        built = build_kernels(kernel, target)
        out.append(GPUProgram(program, built.source, kernel.summary(target), kernel))
    return out


cuda_rprograms = gpu_rprograms  # the name before OpenCL


@dataclass
class PersistentKernel:
    """The persistent-kernel PrimFunc of one rProgram and what a caller passes to it.

    Its parameters are ``inputs``, then the int32 ``tables`` (in order), then ``outputs``,
    then the step workspace (``workspace.words`` int32, any content: the function zeroes it
    before the kernel runs): destination-passing style, for ``call_dps_packed``. It calls
    the device ``functions`` (:mod:`~tvm_ios.kernels.gpu.device_functions`), which a build
    takes with it (:func:`~tvm_ios.kernels.gpu.build.build_kernels`).
    """

    program: object
    func: object
    tables: dict
    inputs: list   # tensor keys (Relax Vars or Constants)
    outputs: list  # the Relax Vars the ops write, in the program's op order
    rops: dict
    vdevice: object
    sync: object = None
    tensors: dict = field(default_factory=dict)  # tensor key -> (name, shape, dtype)
    steps: dict = field(default_factory=dict)    # op name -> its KernelStep
    op_bodies: int = 0  # device-function calls it holds (ops of one kernel share one)
    functions: dict = field(default_factory=dict)  # device functions it calls, by name

    @property
    def workspace(self) -> Workspace:
        """Word layout of the step workspace."""
        return Workspace(self.program.num_veus)

    @property
    def threads(self) -> int:
        """Threads of one vEU: those of the program's largest rTask."""
        return max(r.threads for r in self.rops.values())

    def summary(self, target) -> dict:
        """vEUs, threads, rTasks, barriers, shared memory and registers of the kernel."""
        program, rops, vdevice, threads = self.program, self.rops, self.vdevice, self.threads
        smem = max(r.smem_bytes for r in rops.values())
        return {"name": program.name, "vdevice": vdevice.name, "target": target.kind.name,
                "arch": str(target.attrs.get("arch", "")), "veus": program.num_veus,
                "threads_per_veu": threads, "rtasks": program.num_tasks,
                "barriers": program.num_barriers, "dynamic_shared_bytes": smem,
                "ops": list(program.ops), "op_bodies": self.op_bodies,
                "device_functions": len(self.functions),
                "table_words": sum(len(v) for v in self.tables.values()),
                "workspace_words": self.workspace.words,
                "wait_bound": self.tables["config"][0],
                "masked_ops": sorted(op for op, r in rops.items() if r.threads < threads),
                "rtask_times": "analytical estimates (no GPU measurement)",
                "max_resident_veus": vdevice.max_veus(threads, 32, smem),
                "launch_bounds_min_blocks": -(-program.num_veus // vdevice.sms),
                "largest_grid": max(math.prod(r.grid) for r in rops.values()),
                "max_registers_per_thread": register_budget(vdevice, program.num_veus,
                                                            threads)}


def build_program(program, ops, gpu, vdevice, target, wait_bound: int = DEFAULT_WAIT_BOUND
                  ) -> PersistentKernel:
    """The :class:`PersistentKernel` of ``program`` over the GPU rOperators ``gpu`` of its
    ops, with the synchronisation of ``target`` (CUDA or OpenCL)."""
    tensors, args_of, outs = {}, {}, []
    local = program.meta.get("local_ops", {})  # outputs kept on their vEU (instances)
    for op in ops:
        _, step = gpu[op]
        args_of[op] = list(step.inputs) + [step.output]
        if op not in local:
            outs.append(step.output)
        for key in args_of[op]:
            if key not in tensors:
                name = _tvm.var_name(key) if isinstance(key, relax.Var) else "w"
                tensors[key] = (f"{name}_{len(tensors)}", _tvm.shape_of(key),
                                _tvm.dtype_of(key))
    made = {gpu[op][1].output for op in ops}
    inputs = [k for k in tensors if k not in made]
    rops = {op: gpu[op][0] for op in ops}
    sync = sync_for(_tvm.make_target(target))
    kept = _kept(program, ops, gpu, tensors, local) if local else None
    func, tables, bodies, functions = build_persistent_primfunc(
        program, rops, tensors, inputs, outs, vdevice, args_of, sync, wait_bound, kept)
    return PersistentKernel(program, func, tables, inputs, outs, rops, vdevice, sync, tensors,
                            {op: gpu[op][1] for op in ops}, bodies, functions)


def _kept(program, ops, gpu, tensors, local):
    """Shared-memory offsets of the outputs of ``local`` ops (float32 only)."""
    touches = {op: ([gpu[op][1].output], list(gpu[op][1].inputs)) for op in ops}
    elements = {}
    for op in local:
        key = gpu[op][1].output
        _, shape, dtype = tensors[key]
        if dtype != "float32":
            raise UnsupportedKernel(f"{op}: only float32 outputs are kept in shared memory")
        elements[key] = math.prod(shape)
    plan = pack(program_events(program, touches), elements)
    if 4 * max(plan.sizes) > STATIC_SHARED_BYTES:
        raise UnsupportedKernel(f"{program.name}: kept outputs need {4 * max(plan.sizes)} B "
                                f"of shared memory, more than {STATIC_SHARED_BYTES} B")
    return plan
