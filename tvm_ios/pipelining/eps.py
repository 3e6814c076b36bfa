"""Execution places (EPs): the units a CNN pipeline's stages run on.

An EP is a cluster of cores (or a GPU's SMs) with its own memory bandwidth and a speed
class: FEP (fast execution place) or SEP (slow). Specs come from a preset, a JSON file or an
inline string:

* presets ``c1`` .. ``c5``: the Shisha paper's Table 3 mixes over its Table 1 gem5
  configurations (FEP: ARM big cores at 40 GB/s, SEP: ARM little cores at 20 GB/s);
  ``cpu2``: this machine's two cores as two one-thread CPU EPs (cores 0 and 1).
* a JSON file: a list of objects with the fields of :class:`EPSpec` (or ``{"eps": [...]}``).
* inline: ``kind:units:class:bandwidth[:gflops_per_unit]`` items joined by commas, for
  example ``cpu:8:FEP:40:8,cpu:8:SEP:20:3``.

The per-core peaks of the gem5 cores are modelling assumptions (big 8, little 3 GFLOP/s per
core, ratio of an out-of-order A15-class core to an in-order A7-class core on GEMM).
"""
from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass

from ..hardware import DeviceSpec

__all__ = ["EPSpec", "PRESETS", "parse_eps", "ranked", "eps_to_json"]

logger = logging.getLogger(__name__)

BIG_GFLOPS, LITTLE_GFLOPS = 8.0, 3.0
FEP_BW, SEP_BW = 40.0, 20.0
CLASSES = ("FEP", "SEP")


@dataclass(frozen=True)
class EPSpec:
    """One execution place.

    Parameters
    ----------
    name : str
        Unique name (``fep0``, ``sep1``, ``cpu0`` ...).
    kind : str
        ``cpu`` or ``gpu``.
    units : int
        Cores (CPU) or SMs (GPU); a CPU EP built here runs with this many threads.
    speed_class : str
        ``FEP`` or ``SEP``.
    bandwidth_gbs : float
        Memory bandwidth of the place.
    gflops_per_unit : float
        Peak FP32 GFLOP/s of one unit (used by modelled layer times only).
    target : str
        TVM target a stage on this EP is compiled for.
    cores : tuple of int
        CPU cores of the thread group (CPU EPs run here); empty: any core of the process.
    """

    name: str
    kind: str
    units: int
    speed_class: str
    bandwidth_gbs: float
    gflops_per_unit: float = BIG_GFLOPS
    target: str = "llvm"
    cores: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "cores", tuple(int(c) for c in self.cores))
        if self.kind not in ("cpu", "gpu"):
            raise ValueError(f"EP {self.name!r}: kind must be 'cpu' or 'gpu', got {self.kind!r}")
        if self.speed_class not in CLASSES:
            raise ValueError(f"EP {self.name!r}: class must be FEP or SEP, got "
                             f"{self.speed_class!r}")
        if self.units < 1 or self.bandwidth_gbs <= 0 or self.gflops_per_unit <= 0:
            raise ValueError(f"EP {self.name!r}: units, bandwidth and gflops must be positive")

    @property
    def is_fast(self) -> bool:
        """True for an FEP."""
        return self.speed_class == "FEP"

    @property
    def peak_gflops(self) -> float:
        """Peak of the whole place."""
        return self.units * self.gflops_per_unit

    def device_spec(self) -> DeviceSpec:
        """The :class:`DeviceSpec` the analytical cost model prices this EP with."""
        return DeviceSpec(self.name, self.units, self.peak_gflops, self.bandwidth_gbs,
                          launch_us=5.0, sync_us=5.0, outputs_per_unit_task=4096,
                          shared_kb=32, l2_kb=2048)


def _gem5(prefix: str, count: int, cores: int, fast: bool) -> list[EPSpec]:
    gflops, bw = (BIG_GFLOPS, FEP_BW) if fast else (LITTLE_GFLOPS, SEP_BW)
    cls = "FEP" if fast else "SEP"
    return [EPSpec(f"{prefix}{i}", "cpu", cores, cls, bw, gflops) for i in range(count)]


def _mix(fep: tuple[int, int], sep: tuple[int, int]) -> tuple[EPSpec, ...]:
    return tuple(_gem5("fep", fep[0], fep[1], True) + _gem5("sep", sep[0], sep[1], False))


#: Table 3 of the Shisha paper: (number of FEPs, cores each), (number of SEPs, cores each).
PRESETS: dict[str, tuple[EPSpec, ...]] = {
    "c1": _mix((1, 8), (1, 8)),
    "c2": _mix((2, 8), (2, 8)),
    "c3": _mix((4, 4), (2, 8)),
    "c4": _mix((2, 8), (4, 4)),
    "c5": _mix((4, 4), (4, 4)),
    "cpu2": (EPSpec("cpu0", "cpu", 1, "FEP", 20.0, 50.0, cores=(0,)),
             EPSpec("cpu1", "cpu", 1, "FEP", 20.0, 50.0, cores=(1,))),
}


def _parse_item(item: str, index: int) -> EPSpec:
    fields = item.strip().split(":")
    if len(fields) not in (4, 5):
        raise ValueError(f"EP spec item {index} {item!r}: expected "
                         "kind:units:class:bandwidth[:gflops_per_unit]")
    kind, units, cls, bw = fields[:4]
    try:
        extra = {"gflops_per_unit": float(fields[4])} if len(fields) == 5 else {}
        return EPSpec(f"{kind}{index}", kind, int(units), cls.upper(), float(bw), **extra)
    except ValueError as err:
        raise ValueError(f"EP spec item {index} {item!r}: {err}") from None


def _from_file(path: str) -> tuple[EPSpec, ...]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except json.JSONDecodeError as err:
        raise ValueError(f"EP spec file {path!r} is not JSON: {err}") from None
    items = data.get("eps") if isinstance(data, dict) else data
    if not isinstance(items, list) or not items:
        raise ValueError(f"EP spec file {path!r}: expected a non-empty list of EPs")
    eps = []
    for i, item in enumerate(items):
        try:
            eps.append(EPSpec(**item))
        except TypeError as err:
            raise ValueError(f"EP spec file {path!r}, entry {i}: {err}") from None
    return tuple(eps)


def parse_eps(spec) -> tuple[EPSpec, ...]:
    """EPs from a preset name, a JSON file, an inline string or a list of :class:`EPSpec`.

    Raises
    ------
    ValueError
        Naming the part of ``spec`` that does not parse.
    """
    if isinstance(spec, (list, tuple)) and all(isinstance(e, EPSpec) for e in spec):
        eps = tuple(spec)
    elif not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"EP spec {spec!r}: give a preset ({', '.join(PRESETS)}), a JSON "
                         "file or kind:units:class:bandwidth items")
    elif spec.lower() in PRESETS:
        eps = PRESETS[spec.lower()]
    elif os.path.exists(spec):
        eps = _from_file(spec)
    elif ":" in spec:
        eps = tuple(_parse_item(item, i) for i, item in enumerate(spec.split(",")))
    else:
        raise ValueError(f"EP spec {spec!r} is neither a preset ({', '.join(PRESETS)}), "
                         "an existing file, nor kind:units:class:bandwidth items")
    names = [e.name for e in eps]
    if len(set(names)) != len(names):
        raise ValueError(f"EP spec {spec!r}: EP names are not unique: {names}")
    return eps


def ranked(eps) -> list[int]:
    """EP indices fastest first (H_e): FEPs before SEPs, then by peak and bandwidth."""
    return sorted(range(len(eps)), key=lambda i: (not eps[i].is_fast, -eps[i].peak_gflops,
                                                  -eps[i].bandwidth_gbs, i))


def eps_to_json(eps) -> list[dict]:
    """JSON-serialisable list of EP dicts."""
    return [asdict(e) for e in eps]
