"""How far the tuned kernels are from their own rooflines, from a kernel database's records.

Each kernel call of a model reads its bound weights (the constants among its arguments) at
least once and does its arithmetic (``tvm.s_tir.analysis.estimate_tir_flops`` of its
PrimFunc); on a machine that reads memory at ``gbps`` and computes at ``gflops``, no kernel
does that in less than the larger of the two times, its *roofline*. The call's record (the
database's ``parallel`` or ``packed`` one, whichever is faster: what a sequential build runs)
against its roofline says how much better kernels could win, whatever the schedule; the
concurrency ceiling (:mod:`.ceiling`) says what the schedule can win with these kernels.

Calls are grouped by the spatial size of their output (``H x W`` of an ``NCHW`` or ``NCHWc``
result; ``other`` for other ranks, ``no weights`` for calls without constant arguments, whose
roofline here is their arithmetic alone: pools, concatenations, standalone activations), since a model's kernels
on one map size share their shapes and their trouble: on a 2-core Zen 4, Inception V3's
convolutions on 3x3 maps took 1.38 ms of records against a 0.58 ms roofline.
"""
from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import asdict, dataclass

from .. import _tvm
from ..kernels import prepack
from .schedule_ceiling import kernel_calls, record_times

__all__ = ["RooflineGroup", "kernel_roofline", "NO_WEIGHTS", "OTHER"]

logger = logging.getLogger(__name__)

#: Group of the calls without constant arguments.
NO_WEIGHTS = "no weights"
#: Group of the calls whose output is not 4-D (NCHW) or 5-D (NCHWc).
OTHER = "other"


@dataclass(frozen=True)
class RooflineGroup:
    """The calls of one output map size: their records against their rooflines.

    Attributes
    ----------
    output : str
        ``"HxW"``, :data:`OTHER` or :data:`NO_WEIGHTS`.
    calls : int
        Kernel calls in the group (``untimed`` of them without a record, counted as 0 us).
    record_us, roofline_us : float
        Sums over the calls of their records and of their rooflines.
    weight_bytes, flops : int
        Sums over the calls of the bytes of their constant arguments and of their FLOPs.
    untimed : int
        Calls without a record.
    """

    output: str
    calls: int
    record_us: float
    roofline_us: float
    weight_bytes: int
    flops: int
    untimed: int

    @property
    def gap_us(self) -> float:
        """What the group's records take beyond its rooflines."""
        return self.record_us - self.roofline_us

    def as_dict(self) -> dict:
        """The fields and ``gap_us``, rounded for a results file."""
        out = asdict(self)
        for key in ("record_us", "roofline_us"):
            out[key] = round(out[key], 1)
        return {**out, "gap_us": round(self.gap_us, 1)}

    def __str__(self) -> str:
        return (f"{self.output}: {self.calls} calls, records {self.record_us:.0f} us, "
                f"roofline {self.roofline_us:.0f} us, {self.weight_bytes / 1e6:.1f} MB")


def _output(value, weights: int) -> str:
    """The group of a call from its result's shape."""
    if not weights:
        return NO_WEIGHTS
    shape = _tvm.shape_of(value)
    if shape is None or len(shape) not in (4, 5):
        return OTHER
    return f"{shape[2]}x{shape[3]}"


def kernel_roofline(mod, kernels, gbps: float, gflops: float,
                    func_name: str = "main") -> list[RooflineGroup]:
    """The groups of the module docstring, largest gap first.

    Parameters
    ----------
    mod : IRModule
        Fused as :func:`~.tuned_build.fuse_for_tuning` leaves it, weights bound.
    kernels : KernelDB
        The records (anything with :meth:`~.kernel_db.KernelDB.best_us`).
    gbps, gflops : float
        The machine's read rate (1e9 bytes a second) and arithmetic rate (1e9 FLOPs a
        second), e.g. the CPU table's memory and compute floors' rates.
    func_name : str
        The Relax function whose calls are counted.
    """
    if gbps <= 0 or gflops <= 0:
        raise ValueError(f"rates must be positive: {gbps} GB/s, {gflops} GFLOPS")
    marked = prepack.mark_layout_free(mod)
    times = record_times(marked, kernels)
    flops: dict = {}
    calls: dict = defaultdict(list)  # group -> (record or None, roofline, weights, flops)
    for _, name, call in kernel_calls(marked[func_name]):
        if name is None:
            continue
        if name not in flops:
            flops[name] = int(_tvm.estimate_flops(marked[name]))
        weights = sum(_tvm.constant_nbytes(a) for a in call.args[1].fields
                      if _tvm.is_tensor_constant(a))
        roofline = max(weights / (gbps * 1e3), flops[name] / (gflops * 1e3))  # us
        calls[_output(call, weights)].append((times.get(name, (None, None))[0], roofline,
                                              weights, flops[name]))
    groups = [RooflineGroup(key, len(rows), sum(r[0] or 0.0 for r in rows),
                            sum(r[1] for r in rows), sum(r[2] for r in rows),
                            sum(r[3] for r in rows), sum(r[0] is None for r in rows))
              for key, rows in calls.items()]
    groups.sort(key=lambda g: -g.gap_us)
    logger.info("kernel roofline: %s", "; ".join(map(str, groups)))
    return groups
