"""The vDevice: how many vEUs can be resident at once, from occupancy, and never more.

Every vEU of an rProgram must be resident for the whole kernel, otherwise a vEU spinning on
a barrier can keep the vEU it waits for from ever being scheduled (the open deadlock of
NNFusion). The count comes from the per-SM limits (threads, registers, shared memory with
the 1 KB the driver reserves per block, blocks) of the most demanding rTask, times the
number of SMs. Presets hold the published figures of one GPU per architecture (sm_80, 86,
89, 90); on a real device :mod:`tvm_ios.kernels.gpu.residency` reads the driver's own numbers.
On a CPU a vEU is a worker of TVM's thread pool, so the limit is the pool size.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

__all__ = ["VDevice", "ResidencyError", "VDEVICES", "ARCH_PRESETS", "get_vdevice",
           "cpu_vdevice", "target_vdevice", "pool_threads", "register_budget"]

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
        Streaming multiprocessors (GPU), compute units (OpenCL) or pool workers (CPU).
    max_threads_per_sm, max_blocks_per_sm, regs_per_sm : int
        Occupancy limits per SM.
    smem_per_sm, smem_per_block : int
        Shared memory per SM and the most one block may use with the dynamic opt-in (bytes).
    kind : {"gpu", "cpu"}
        What a vEU is.
    arch : str
        ``sm_90``, ``sm_80``, ..., ``opencl`` or ``cpu``.
    reserved_smem_per_block : int
        Shared memory the driver keeps for itself per resident block (1 KB since sm_80).
    cost_device : str
        The analytical device (:mod:`tvm_ios.hardware`) that estimates rTask times.
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
    reserved_smem_per_block: int = 1024
    cost_device: str = "h100"

    def blocks_per_sm(self, threads: int, regs_per_thread: int = 32,
                      smem_bytes: int = 0) -> tuple[int, str]:
        """Blocks of this shape one SM holds, and the limiting resource."""
        if self.kind == "cpu":
            return 1, "one vEU per worker"
        warps = -(-max(threads, 1) // 32)
        regs_per_warp = -(-regs_per_thread * 32 // 256) * 256  # allocated per warp, by 256
        smem = smem_bytes + self.reserved_smem_per_block
        limits = {"blocks": self.max_blocks_per_sm,
                  "threads": self.max_threads_per_sm // max(threads, 1),
                  "registers": self.regs_per_sm // regs_per_warp // warps,
                  "shared memory": (self.smem_per_sm // smem if smem_bytes <= self.smem_per_block
                                    else 0) if smem else self.max_blocks_per_sm}
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
                f"{regs_per_thread} registers/thread, {smem_bytes} B shared memory "
                f"(+{self.reserved_smem_per_block} B reserved), but {self.name} holds at most "
                f"{per_sm} per SM x {self.sms} SMs = {limit} (limited by {resource})")


KB = 1024
#: One GPU per architecture (CUDA C Programming Guide, compute capability tables; SM counts
#: of the named part). Another part of the same architecture may have fewer SMs: the
#: programs are sized for the preset, and checked against the real device where one is seen.
VDEVICES = {
    "a100": VDevice("a100", 108, 2048, 32, 65536, 164 * KB, 163 * KB, "gpu", "sm_80", KB,
                    "a100"),
    "a10": VDevice("a10", 72, 1536, 16, 65536, 100 * KB, 99 * KB, "gpu", "sm_86", KB, "a100"),
    "l4": VDevice("l4", 58, 1536, 24, 65536, 100 * KB, 99 * KB, "gpu", "sm_89", KB, "a100"),
    "h100": VDevice("h100", 132, 2048, 32, 65536, 228 * KB, 227 * KB, "gpu", "sm_90", KB,
                    "h100"),
}
#: CUDA architecture -> preset.
ARCH_PRESETS = {"sm_80": "a100", "sm_86": "a10", "sm_89": "l4", "sm_90": "h100",
                "sm_90a": "h100"}
#: Compute units an OpenCL program assumes resident, one work-group each (no OpenCL API
#: reports residency; a smaller device ends with the bounded-wait error, never a hang).
OPENCL_UNITS = 16


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
    """The vDevice for a TVM target: its arch's preset for CUDA (``sm_80``, ``sm_86``,
    ``sm_89``, ``sm_90``), the target's work-group limits for OpenCL, the pool for llvm."""
    kind = target.kind.name
    if kind == "llvm":
        return cpu_vdevice()
    if kind == "opencl":
        threads = int(target.attrs.get("max_num_threads", 256))
        local = int(target.attrs.get("max_shared_memory_per_block", 16 * KB))
        return VDevice("opencl", OPENCL_UNITS, threads, 1, 1 << 20, local, local, "gpu",
                       "opencl", 0, "a100")
    if kind != "cuda":
        raise ValueError(f"no vDevice for target kind {kind!r} (cuda, opencl and llvm are "
                         "supported)")
    arch = str(target.attrs.get("arch", ""))
    if arch not in ARCH_PRESETS:
        raise ValueError(f"no vDevice preset for CUDA arch {arch!r}: presets are "
                         f"{sorted(ARCH_PRESETS)} ({ARCH_PRESETS})")
    return VDEVICES[ARCH_PRESETS[arch]]


def register_budget(vdevice: VDevice, num_veus: int, threads: int) -> int:
    """Registers per thread that keep ``num_veus`` blocks of ``threads`` resident.

    What ptxas must fit the kernel in: the kernel carries ``__launch_bounds__(threads,
    ceil(num_veus / sms))``, which makes ptxas (and NVRTC) limit registers to this. Raises
    :class:`ResidencyError` below 24 registers.
    """
    per_sm = -(-num_veus // vdevice.sms)
    warps = -(-threads // 32)
    per_warp = vdevice.regs_per_sm // max(per_sm * warps, 1) // 256 * 256
    budget = min(255, per_warp // 32) // 8 * 8
    if budget < 24:
        raise ResidencyError(f"{num_veus} vEUs of {threads} threads on {vdevice.name} leave "
                             f"{budget} registers per thread ({per_sm} blocks per SM of "
                             f"{vdevice.regs_per_sm} registers); fewer vEUs are needed")
    return budget
