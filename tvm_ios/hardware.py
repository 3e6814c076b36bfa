"""Device specifications used by the analytical cost models.

Figures are the vendors' published peaks (FP32, no tensor cores) and this CI machine's
rough ones; the models use them for ranking, not for exact latencies.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

__all__ = ["DeviceSpec", "DEVICES", "get_device", "preset_for_target"]


@dataclass(frozen=True)
class DeviceSpec:
    """A compute device for the analytical models.

    Parameters
    ----------
    name : str
        Preset name.
    units : int
        Streaming multiprocessors (GPU) or cores (CPU).
    peak_gflops : float
        Peak FP32 throughput of the whole device.
    bandwidth_gbs : float
        DRAM bandwidth.
    launch_us : float
        Cost of launching one kernel.
    sync_us : float
        Extra cost of a stage with concurrent groups (stream fork/join, barriers).
    outputs_per_unit_task : int
        Output elements one thread block (or one CPU task) computes in a typical schedule.
    shared_kb : int
        Shared memory per SM (local buffer), KB.
    l2_kb : int
        Last-level cache, KB.
    blocks_per_unit : int
        Thread blocks (CPU: tasks) one SM (core) holds at once; ``units * blocks_per_unit``
        blocks make one wave.
    concurrent : bool
        Whether groups of a stage can run at the same time (GPU streams, one rProgram).
        False for TVM's untuned llvm code, whose kernels run one after another on one core.
    """

    name: str
    units: int
    peak_gflops: float
    bandwidth_gbs: float
    launch_us: float = 4.0
    sync_us: float = 2.0
    outputs_per_unit_task: int = 2048
    shared_kb: int = 96
    l2_kb: int = 6144
    blocks_per_unit: int = 1
    concurrent: bool = True

    @property
    def slots(self) -> int:
        """Thread blocks resident on the whole device: one wave."""
        return self.units * self.blocks_per_unit


DEVICES = {
    "v100": DeviceSpec("v100", 80, 15700.0, 900.0, 4.0, 2.0, 2048, 96, 6144, 2),
    "a100": DeviceSpec("a100", 108, 19500.0, 1555.0, 4.0, 2.0, 2048, 164, 40960, 2),
    "h100": DeviceSpec("h100", 132, 66900.0, 3350.0, 3.0, 1.5, 2048, 228, 51200, 2),
    "cpu": DeviceSpec("cpu", 2, 100.0, 20.0, 1.0, 5.0, 4096, 32, 32768),
    # This CI CPU as TVM's default (untuned) llvm schedules use it: one core, kernels one
    # after another; peak and bandwidth are what such code reaches here, not the chip's.
    "llvm": DeviceSpec("llvm", 1, 8.0, 8.0, 1.0, 0.0, 4096, 32, 32768, 1, False),
}


def get_device(name: str | DeviceSpec) -> DeviceSpec:
    """Return a device preset by name (``v100``, ``a100``, ``h100``, ``cpu``, ``llvm``)."""
    if isinstance(name, DeviceSpec):
        return name
    try:
        return DEVICES[name.lower()]
    except KeyError:
        raise ValueError(f"unknown device {name!r}; presets are {sorted(DEVICES)}") from None


#: CUDA compute capability major version -> preset (``sm_90a`` is an H100, ``sm_80`` an A100).
_CUDA_PRESETS = {"9": "h100", "8": "a100", "7": "v100"}


def preset_for_target(target) -> str:
    """The preset that models the device a TVM target's code runs on.

    ``target`` is a Target, its dict, a kind or tag string, or the JSON string a measurement
    log records (``str(Target)``): ``llvm`` and ``c`` give ``llvm``, CUDA gives ``h100``,
    ``a100`` or ``v100`` by the arch's major version (``sm_90a``, ``sm_80``, ``sm_70``).
    Raises ``ValueError`` for another kind or arch.
    """
    kind, arch = _kind_and_arch(target)
    if kind in ("llvm", "c"):
        return "llvm"
    major = arch[3:4] if kind == "cuda" and arch.startswith("sm_") else ""
    if major in _CUDA_PRESETS:
        return _CUDA_PRESETS[major]
    raise ValueError(f"no cost-model preset for target {str(target)[:120]!r} (kind {kind!r}, "
                     f"arch {arch!r}); presets cover llvm and CUDA sm_7x/sm_8x/sm_9x")


def _kind_and_arch(target) -> tuple[str, str]:
    if isinstance(target, str) and target.lstrip().startswith("{"):
        target = json.loads(target)
    if isinstance(target, dict):
        return str(target.get("kind", "")), str(target.get("arch", ""))
    if isinstance(target, str) and target.split()[0] in ("llvm", "c"):
        return target.split()[0], ""
    from . import _tvm  # noqa: PLC0415  (a tag such as nvidia/nvidia-h100 needs TVM)

    target = _tvm.make_target(target)
    return str(target.kind.name), str(target.attrs.get("arch", ""))
