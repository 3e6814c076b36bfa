"""A first analytical cost model, so the scheduler runs with no device at all.

Each op is priced as a roofline (``max(flops / peak, bytes / bandwidth)``) slowed down by
the fraction of the device its thread blocks can occupy, plus a launch. Concurrent groups
share the device: a stage takes as long as its longest group or as its total occupied
device-time, whichever is larger, plus a synchronisation cost. Small ops therefore gain
from running together and large ones do not, which is the effect IOS exploits.
"""
from __future__ import annotations

import math
from typing import Sequence

from ..graph.opgraph import OpGraph, OpNode
from ..schedule.merge import merge_plan
from .devices import DeviceSpec, get_device

__all__ = ["AnalyticalCostModel"]


class AnalyticalCostModel:
    """Roofline-with-occupancy latency estimates (microseconds).

    Parameters
    ----------
    device : str or DeviceSpec
        A preset of :data:`tvm_ios.cost.devices.DEVICES` (default ``"v100"``, the IOS paper's).
    """

    def __init__(self, device: str | DeviceSpec = "v100"):
        self.device = get_device(device)

    def __repr__(self) -> str:
        return f"AnalyticalCostModel({self.device.name!r})"

    def op_time(self, flops: float, nbytes: float, outputs: float) -> tuple[float, float]:
        """Return (execution us, device fraction) of a kernel."""
        dev = self.device
        tasks = max(1.0, math.ceil(outputs / dev.outputs_per_unit_task))
        frac = min(1.0, tasks / dev.units)
        ideal = max(flops / (dev.peak_gflops * 1e3), nbytes / (dev.bandwidth_gbs * 1e3))
        return ideal / frac, frac

    def _node_time(self, node: OpNode) -> tuple[float, float]:
        return self.op_time(node.flops, node.bytes, math.prod(node.shape) if node.shape else 1)

    def stage_latency(self, graph: OpGraph, groups: Sequence[Sequence[int]]) -> float:
        """Latency of concurrent groups; see the module docstring."""
        dev = self.device
        longest, work, launches = 0.0, 0.0, 0
        for group in groups:
            total = 0.0
            for i in group:
                t, frac = self._node_time(graph.nodes[i])
                total += t
                work += t * frac
            longest = max(longest, total)
            launches = max(launches, len(group))
        sync = dev.sync_us if len(groups) > 1 else 0.0
        return max(longest, work) + launches * dev.launch_us + sync

    def merged_latency(self, graph: OpGraph, ops: Sequence[int]) -> float | None:
        """Latency of the merged convolution (None when the ops cannot merge)."""
        plan = merge_plan(graph, ops)
        if plan is None:
            return None
        first = graph.nodes[plan.ops[0]]
        batch, _, height, width = first.shape
        outputs = batch * plan.out_channels * height * width
        flops = 2.0 * outputs * plan.in_channels * plan.kernel[0] * plan.kernel[1]
        itemsize = 2 if "16" in first.dtype else 4
        in_bytes = math.prod(first.attrs.get("in_shape", [0])) * itemsize
        weight_bytes = plan.out_channels * plan.in_channels * plan.kernel[0] * plan.kernel[1]
        nbytes = in_bytes + (weight_bytes + outputs) * itemsize
        t, _ = self.op_time(flops, nbytes, outputs)
        return t + self.device.launch_us
