"""Hardware descriptions GraphTurbo schedules for (the DSA abstraction of the paper's Fig. 1).

A cluster has ``cores`` cores, each with a local buffer (LB); the cores of a cluster share a
global buffer (GB); clusters talk to DRAM. An instance of a sub-graph is bound across the
cores of one cluster, each core holding its share in its own LB, so the local capacity an
instance may use is ``cores * lb_bytes`` (:attr:`HardwareSpec.local_capacity`).

GPU presets reuse :mod:`tvm_ios.hardware` (LB = shared memory per SM, GB = L2, cores =
SMs, one cluster). The rProgram presets bind each instance to one vEU, so a cluster is one
core: ``cpu`` (a thread-pool worker, LB = its L2, GB = L3) and ``h100-block`` /
``a100-block`` (a persistent thread block, LB = the shared memory of one block).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ..hardware import get_device

__all__ = ["HardwareSpec", "PRESETS", "get_hw"]


@dataclass(frozen=True)
class HardwareSpec:
    """One target of GraphTurbo.

    Parameters
    ----------
    name : str
        Preset name.
    clusters : int
        d, clusters (data parallelism across clusters is outside the scheduler).
    cores : int
        c, cores per cluster.
    lb_bytes : int
        Local buffer (L1 / shared memory) per core.
    gb_bytes : int
        Global buffer (LLB / L2) per cluster.
    dram_gbs : float
        DRAM bandwidth, GB/s (prices the recompute check).
    peak_gflops : float
        Peak throughput of one cluster, GFLOP/s (prices the recompute check).
    """

    name: str
    clusters: int
    cores: int
    lb_bytes: int
    gb_bytes: int
    dram_gbs: float
    peak_gflops: float

    @property
    def local_capacity(self) -> int:
        """Bytes of LB an instance bound across the whole cluster may use."""
        return self.cores * self.lb_bytes

    def to_dict(self) -> dict:
        """JSON-serialisable dict."""
        return asdict(self)

    def __str__(self) -> str:
        return (f"{self.name}: d={self.clusters} c={self.cores} LB={self.lb_bytes // 1024} KB "
                f"GB={self.gb_bytes // 1024} KB DRAM={self.dram_gbs:g} GB/s")


def _gpu(name: str) -> HardwareSpec:
    dev = get_device(name)
    return HardwareSpec(name, 1, dev.units, dev.shared_kb * 1024, dev.l2_kb * 1024,
                        dev.bandwidth_gbs, dev.peak_gflops)


def _cpu() -> HardwareSpec:
    """The CPU vDevice: a cluster is one worker (one vEU), its LB the core's L2."""
    dev = get_device("cpu")
    return HardwareSpec("cpu", dev.units, 1, CPU_L2_BYTES, dev.l2_kb * 1024,
                        dev.bandwidth_gbs, dev.peak_gflops / dev.units)


def _gpu_block(name: str) -> HardwareSpec:
    """A GPU as rProgram vEUs: a cluster is one persistent block, its LB the shared memory
    one block may use."""
    dev = get_device(name)
    return HardwareSpec(f"{name}-block", dev.units, 1, (dev.shared_kb - 1) * 1024,
                        dev.l2_kb * 1024, dev.bandwidth_gbs, dev.peak_gflops / dev.units)


#: L2 per core of the CI machine (AMD EPYC, 1 MiB per core; ``lscpu``).
CPU_L2_BYTES = 1024 * 1024

# The STCP920 figures are the paper's Eq. (2); its bandwidth and peak are not published:
# 100 GB/s and 8 TFLOP/s per cluster are assumptions used only by the recompute check.
PRESETS = {
    "dsa": HardwareSpec("dsa", 4, 8, 64 * 1024, 8 * 1024 * 1024, 100.0, 8000.0),
    "h100": _gpu("h100"),
    "a100": _gpu("a100"),
    "cpu": _cpu(),
    "h100-block": _gpu_block("h100"),
    "a100-block": _gpu_block("a100"),
}


def get_hw(name: str | HardwareSpec) -> HardwareSpec:
    """Return a preset by name (``dsa``, ``h100``, ``a100``, ``cpu``, ``h100-block``,
    ``a100-block``) or a spec unchanged."""
    if isinstance(name, HardwareSpec):
        return name
    try:
        return PRESETS[name.lower()]
    except KeyError:
        raise ValueError(f"unknown GraphTurbo hardware {name!r}; presets are "
                         f"{sorted(PRESETS)}") from None
