"""The vDevice: how many vEUs can be resident at once, from occupancy, and never more.

Every vEU of an rProgram must be resident for the whole kernel, otherwise a vEU spinning on
a barrier can keep the vEU it waits for from ever being scheduled (the open deadlock of
NNFusion). The count comes from the per-SM limits (threads, registers, shared memory,
blocks) of the most demanding rTask, times the number of SMs. On a CPU a vEU is a worker of
TVM's thread pool, so the limit is the pool size.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

__all__ = ["VDevice", "ResidencyError", "VDEVICES", "get_vdevice", "cpu_vdevice", "target_vdevice",
           "pool_threads"]

logger = logging.getLogger(__name__)


class ResidencyError(ValueError):
    """An rProgram asks for more vEUs than the device can keep resident at once."""


@dataclass(frozen=True)
class VDevice:
    """Per-SM limits of a device (published figures of the vendor for GPUs).

    Parameters
    ----------
    name : str
        Preset name.
    sms : int
        Streaming multiprocessors (GPU) or thread-pool workers (CPU).
    max_threads_per_sm, max_blocks_per_sm, regs_per_sm : int
        Occupancy limits per SM.
    smem_per_sm, smem_per_block : int
        Shared memory per SM and the most one block may use with the dynamic opt-in (bytes).
    kind : {"gpu", "cpu"}
        What a vEU is.
    arch : str
        ``sm_90``, ``sm_80`` or ``cpu``.
    """

    name: str
    sms: int
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    regs_per_sm: int = 65536
    smem_per_sm: int = 228 * 1024
    smem_per_block: int = 227 * 1024
    kind: str = "gpu"
    arch: str = "sm_90"

    def blocks_per_sm(self, threads: int, regs_per_thread: int = 32,
                      smem_bytes: int = 0) -> tuple[int, str]:
        """Blocks of this shape one SM holds, and the limiting resource."""
        if self.kind == "cpu":
            return 1, "one vEU per worker"
        limits = {"blocks": self.max_blocks_per_sm,
                  "threads": self.max_threads_per_sm // max(threads, 1),
                  "registers": self.regs_per_sm // max(regs_per_thread * threads, 1)}
        if smem_bytes:
            limits["shared memory"] = (self.smem_per_sm // smem_bytes
                                       if smem_bytes <= self.smem_per_block else 0)
        resource = min(limits, key=limits.get)
        return limits[resource], resource

    def max_veus(self, threads: int, regs_per_thread: int = 32, smem_bytes: int = 0) -> int:
        """vEUs that can all be resident at once for blocks of this shape."""
        return self.blocks_per_sm(threads, regs_per_thread, smem_bytes)[0] * self.sms

    def check(self, num_veus: int, threads: int = 1, regs_per_thread: int = 32,
              smem_bytes: int = 0, what: str = "rProgram") -> None:
        """Raise :class:`ResidencyError`, with the numbers, if ``num_veus`` cannot be resident."""
        per_sm, resource = self.blocks_per_sm(threads, regs_per_thread, smem_bytes)
        limit = per_sm * self.sms
        if num_veus > limit:
            raise ResidencyError(
                f"{what} needs {num_veus} resident vEUs of {threads} threads, "
                f"{regs_per_thread} registers/thread, {smem_bytes} B shared memory, but "
                f"{self.name} holds at most {per_sm} per SM x {self.sms} SMs = {limit} "
                f"(limited by {resource})")


VDEVICES = {
    "h100": VDevice("h100", 132, 2048, 32, 65536, 228 * 1024, 227 * 1024, "gpu", "sm_90"),
    "a100": VDevice("a100", 108, 2048, 32, 65536, 164 * 1024, 163 * 1024, "gpu", "sm_80"),
}


def get_vdevice(name: str) -> VDevice:
    """A preset by name (``h100``, ``a100``) or ``cpu`` (this process's thread pool)."""
    if name.lower() == "cpu":
        return cpu_vdevice()
    try:
        return VDEVICES[name.lower()]
    except KeyError:
        raise ValueError(f"unknown vDevice {name!r}; presets are {sorted(VDEVICES)} "
                         "and 'cpu'") from None


def pool_threads() -> int:
    """Workers of TVM's CPU thread pool in this process."""
    import tvm  # local: keep the pure scheduling modules importable without TVM

    return int(tvm.get_global_func("runtime.NumThreads")())


def cpu_vdevice(num_threads: int | None = None) -> VDevice:
    """The CPU vDevice: one vEU per worker of TVM's thread pool (``TVM_NUM_THREADS``)."""
    threads = pool_threads() if num_threads is None else int(num_threads)
    return VDevice(f"cpu{threads}", max(threads, 1), 1, 1, 1 << 30, 0, 0, "cpu", "cpu")


def target_vdevice(target) -> VDevice:
    """The vDevice for a TVM target: its arch for CUDA, the thread pool for llvm."""
    kind = target.kind.name
    if kind == "llvm":
        return cpu_vdevice()
    if kind != "cuda":
        raise ValueError(f"no vDevice for target kind {kind!r} (cuda and llvm are supported)")
    arch = str(target.attrs.get("arch", "sm_90"))
    return VDEVICES["a100"] if arch.startswith("sm_8") else VDEVICES["h100"]
