"""The roofline cost model, so the scheduler runs with no device at all.

Each kernel is a roofline (``max(flops / peak, bytes / bandwidth)`` at full device) cut
into thread blocks (CPU: tasks) of ``outputs_per_unit_task`` outputs. A device holds
``units * blocks_per_unit`` blocks at once (one wave); a kernel with ``b`` blocks on ``s``
slots takes ``ceil(b / s)`` waves of one block's time, so small kernels leave the device
idle and large ones pay for their last, partial wave.

A concurrent stage shares the SMs between its groups: each group asks for as many slots
as its widest kernel has blocks; when the demands fit in one wave every group gets what it
asks for, otherwise the slots are split in proportion to the demands. The stage takes as
long as its slowest group, plus the launches and a synchronisation. Small ops therefore
gain from running together and large ones do not, which is the effect IOS exploits. On a
device that cannot run groups concurrently (``concurrent=False``: TVM's untuned llvm code)
the groups run back to back. Its job is ranking stages, not exact latencies.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..graph.opgraph import OpGraph, OpNode
from ..schedule.merge import MergePlan, merge_plan
from ..hardware import DeviceSpec, get_device

__all__ = ["AnalyticalCostModel", "Kernel", "kernel_of", "merged_kernel"]


@dataclass(frozen=True)
class Kernel:
    """The load of one kernel: floating-point operations, bytes moved, output elements."""

    flops: float
    bytes: float
    outputs: float


def kernel_of(node: OpNode) -> Kernel:
    """The kernel of one op of a graph."""
    return Kernel(node.flops, node.bytes, math.prod(node.shape) if node.shape else 1)


def merged_kernel(graph: OpGraph, plan: MergePlan) -> Kernel:
    """The kernel of merged convolutions: zero-padded kernels, all output channels."""
    first = graph.nodes[plan.ops[0]]
    batch, _, height, width = first.shape
    outputs = batch * plan.out_channels * height * width
    flops = 2.0 * outputs * plan.in_channels * plan.kernel[0] * plan.kernel[1]
    itemsize = 2 if "16" in first.dtype else 4
    in_bytes = math.prod(first.attrs.get("in_shape", [0])) * itemsize
    weight_bytes = plan.out_channels * plan.in_channels * plan.kernel[0] * plan.kernel[1]
    return Kernel(flops, in_bytes + (weight_bytes + outputs) * itemsize, outputs)


class AnalyticalCostModel:
    """Roofline latency estimates with thread blocks, waves and SM sharing (microseconds).

    Parameters
    ----------
    device : str or DeviceSpec
        A preset of :data:`tvm_ios.hardware.DEVICES` (default ``"v100"``, the IOS paper's).
    """

    def __init__(self, device: str | DeviceSpec = "v100"):
        self.device = get_device(device)

    def __repr__(self) -> str:
        return f"AnalyticalCostModel({self.device.name!r})"

    def blocks(self, kernel: Kernel) -> int:
        """Thread blocks (CPU tasks) of a kernel."""
        return max(1, math.ceil(kernel.outputs / self.device.outputs_per_unit_task))

    def block_time(self, kernel: Kernel, blocks: int | None = None) -> float:
        """Execution us of one of the kernel's (``blocks``) thread blocks on one slot."""
        dev = self.device
        ideal = max(kernel.flops / (dev.peak_gflops * 1e3),
                    kernel.bytes / (dev.bandwidth_gbs * 1e3))
        return ideal * dev.slots / (self.blocks(kernel) if blocks is None else blocks)

    def kernel_time(self, kernel: Kernel, slots: int | None = None) -> float:
        """Execution us of a kernel given ``slots`` resident blocks (default: all)."""
        dev = self.device
        slots = dev.slots if slots is None else max(1, min(slots, dev.slots))
        blocks = self.blocks(kernel)
        return math.ceil(blocks / slots) * self.block_time(kernel, blocks)

    def op_time(self, flops: float, nbytes: float, outputs: float) -> tuple[float, float]:
        """Return (execution us, fraction of the device's slots busy) of a kernel alone."""
        kernel = Kernel(flops, nbytes, outputs)
        return self.kernel_time(kernel), min(1.0, self.blocks(kernel) / self.device.slots)

    def shares(self, groups: Sequence[Sequence[Kernel]]) -> list[int]:
        """Slots each concurrent group gets (see the module docstring)."""
        total = self.device.slots
        demands = [min(total, max((self.blocks(k) for k in g), default=1)) for g in groups]
        if sum(demands) <= total:
            return demands
        return [max(1, total * d // sum(demands)) for d in demands]

    def groups_latency(self, groups: Sequence[Sequence[Kernel]]) -> float:
        """Latency of groups of kernels run as one stage (concurrently where possible)."""
        dev = self.device
        if not dev.concurrent or len(groups) == 1:
            kernels = [k for g in groups for k in g]
            return sum(self.kernel_time(k) for k in kernels) + len(kernels) * dev.launch_us
        times = [sum(self.kernel_time(k, s) for k in g)
                 for g, s in zip(groups, self.shares(groups))]
        launches = max(len(g) for g in groups)
        return max(times) + launches * dev.launch_us + dev.sync_us

    def stage_latency(self, graph: OpGraph, groups: Sequence[Sequence[int]]) -> float:
        """Latency of concurrent groups of ops; see the module docstring."""
        return self.groups_latency([[kernel_of(graph.nodes[i]) for i in g] for g in groups])

    def stage_latencies(self, graph: OpGraph, stages: np.ndarray) -> np.ndarray:
        """:meth:`stage_latency` of many stages at once, equal to it bit for bit.

        ``stages`` is ``(stages, groups, ops)`` node ids padded with -1 (the batch form of
        :mod:`tvm_ios.schedule.cost_protocol`). Sums run in the scalar method's order.
        """
        stages = np.asarray(stages, dtype=np.int64)
        dev = self.device
        kernels = [kernel_of(node) for node in graph.nodes]
        used = stages >= 0
        ids = np.maximum(stages, 0)
        blocks = np.where(used, np.array([self.blocks(k) for k in kernels])[ids], 0)
        block_time = np.where(used, np.array([self.block_time(k) for k in kernels])[ids], 0.0)
        full = np.where(used, np.array([self.kernel_time(k) for k in kernels])[ids], 0.0)
        n_stages, n_groups, n_ops = stages.shape
        alone = _ordered_sum(full.reshape(n_stages, n_groups * n_ops)) \
            + used.sum(axis=(1, 2)) * dev.launch_us
        group_used = used[:, :, 0]
        demand = np.where(group_used, np.minimum(dev.slots, blocks.max(axis=2)), 0)
        total = demand.sum(axis=1, keepdims=True)
        share = np.where(total <= dev.slots, demand,
                         np.maximum(1, dev.slots * demand // np.maximum(total, 1)))
        share = np.maximum(share, 1)[:, :, None]
        times = _ordered_sum(np.ceil(blocks / share) * block_time)
        launches = used.sum(axis=2).max(axis=1)
        together = times.max(axis=1) + launches * dev.launch_us + dev.sync_us
        if not dev.concurrent:
            return alone
        return np.where(group_used.sum(axis=1) == 1, alone, together)

    def merged_latency(self, graph: OpGraph, ops: Sequence[int]) -> float | None:
        """Latency of the merged convolution (None when the ops cannot merge)."""
        plan = merge_plan(graph, ops)
        if plan is None:
            return None
        return self.kernel_time(merged_kernel(graph, plan)) + self.device.launch_us


def _ordered_sum(values: np.ndarray) -> np.ndarray:
    """Sum over the last axis strictly left to right, as Python's ``sum`` does."""
    out = np.zeros(values.shape[:-1])
    for j in range(values.shape[-1]):
        out = out + values[..., j]
    return out
