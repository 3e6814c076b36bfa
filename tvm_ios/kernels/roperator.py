"""rOperators: an op as rKernels, each a way to cut it into rTasks (Rammer section 3.1).

An :class:`RKernel` says how many rTasks an op is cut into, the threads, registers and
shared memory of one rTask, and the time of one rTask on one vEU. Of an op's rKernels the
*fastest* has the smallest runtime on a vDevice and the *most efficient* the smallest
product of rTask time and rTask count. Where TVM's GPU-scheduled kernel of the op is known
(:mod:`tvm_ios.kernels.tvm_kernels`), its grid, threads and shared memory give the
rKernel; the analytical estimates here rank tilings for the policies and are marked so.
No figure here is a GPU measurement.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..hardware import DeviceSpec, get_device
from ..graph.opgraph import OpGraph, OpNode

__all__ = ["RKernel", "ROperator", "estimate_roperators", "cut_into_slices", "TILES",
           "SLICES", "SLICE_EFFICIENCY"]

#: Output elements per rTask of the estimated tilings (small = fast, large = efficient).
TILES = (512, 2048, 8192)
TASK_OVERHEAD_US = 0.3
#: The rKernel of a CPU op cut into slices of its tuned parallel loop, one per vEU
#: (:mod:`~tvm_ios.kernels.cpu.slicing`), and the fraction of the op's serial speed a slice keeps.
SLICES = "slices"
SLICE_EFFICIENCY = 0.9


@dataclass(frozen=True)
class RKernel:
    """One implementation of an op as ``num_tasks`` rTasks.

    Parameters
    ----------
    name : str
        Implementation name (e.g. ``tile2048`` or the TVM kernel's name).
    num_tasks : int
        rTasks (the thread blocks of the original kernel).
    threads : int
        Threads of one rTask.
    task_us : float
        Time of one rTask on one vEU.
    shared_bytes : int
        Shared memory of one rTask.
    registers : int
        Registers per thread.
    source : str
        ``"estimate"`` (analytical), ``"tvm"`` (from TVM's scheduled kernel) or
        ``"record"`` (``task_us`` measured by TVM's runner, from a kernel database).
    """

    name: str
    num_tasks: int
    threads: int = 256
    task_us: float = 1.0
    shared_bytes: int = 0
    registers: int = 32
    source: str = "estimate"

    def runtime_us(self, num_veus: int) -> float:
        """Time of the op alone on ``num_veus`` vEUs (waves of rTasks)."""
        return math.ceil(self.num_tasks / max(num_veus, 1)) * self.task_us

    @property
    def work_us(self) -> float:
        """rTask time times rTask count: what the most efficient kernel minimises."""
        return self.num_tasks * self.task_us


@dataclass
class ROperator:
    """An op with its rKernels."""

    op: str
    kernels: list = field(default_factory=list)

    def fastest(self, num_veus: int) -> RKernel:
        """The rKernel with the smallest runtime on ``num_veus`` vEUs."""
        return min(self.kernels, key=lambda k: (k.runtime_us(num_veus), k.work_us))

    def most_efficient(self) -> RKernel:
        """The rKernel with the smallest product of rTask time and rTask count."""
        return min(self.kernels, key=lambda k: (k.work_us, k.num_tasks))


def _estimate(node: OpNode, dev: DeviceSpec, tile: int, threads: int) -> RKernel:
    outputs = math.prod(node.shape) if node.shape else 1
    tasks = max(1, math.ceil(outputs / tile))
    per_task_flops = node.flops / tasks
    per_task_bytes = node.bytes / tasks
    reuse = min(tile, outputs) / (min(tile, outputs) + 512.0)  # larger tiles reuse more
    compute = per_task_flops / (dev.peak_gflops * 1e3 / dev.units * max(reuse, 0.05))
    memory = per_task_bytes / (dev.bandwidth_gbs * 1e3 / dev.units)
    return RKernel(f"tile{tile}", tasks, threads, max(compute, memory) + TASK_OVERHEAD_US)


def cut_into_slices(whole: RKernel, slices: int) -> RKernel:
    """The :data:`SLICES` rKernel of an op whose whole (one-vEU) rKernel is ``whole``: one
    rTask per vEU, each a ``1 / slices`` share at :data:`SLICE_EFFICIENCY`."""
    return RKernel(SLICES, slices, whole.threads, whole.task_us / slices / SLICE_EFFICIENCY,
                   source=whole.source)


def estimate_roperators(graph: OpGraph, device: str | DeviceSpec = "h100",
                        tiles: tuple = TILES, slices: int = 1) -> dict[str, ROperator]:
    """Analytical rOperators of every op of ``graph`` (one rKernel per tiling).

    On the ``cpu`` device an op is one rTask (a vEU is a whole core), priced as a roofline
    on one core, and, with ``slices`` > 1, also ``slices`` rTasks (:data:`SLICES`: slices of
    its tuned parallel loop, each a ``1 / slices`` share at :data:`SLICE_EFFICIENCY`).
    """
    dev = get_device(device)
    ops = {}
    for node in graph.nodes:
        if dev.name == "cpu":
            per_core = dev.peak_gflops * 1e3 / dev.units
            task = max(node.flops / per_core, node.bytes / (dev.bandwidth_gbs * 1e3)) + 1.0
            kernels = [RKernel("whole", 1, 1, task)]
            if slices > 1:
                kernels.append(cut_into_slices(kernels[0], slices))
        else:
            kernels = [_estimate(node, dev, tile, min(256, max(32, tile // 8)))
                       for tile in tiles]
            unique = {(k.num_tasks, k.task_us): k for k in kernels}
            kernels = list(unique.values())
        ops[node.name] = ROperator(node.name, kernels)
    return ops
