"""The most an inter-operator schedule can gain with a kernel database: a bound from its records.

On the CPU each op of a scheduled model runs either inside an rProgram, as a vEU kernel on one
core (the database's ``serial`` or ``serial-packed`` record, whichever is faster), or in a
stage left sequential, as a kernel parallel over every core (``parallel`` or ``packed``).
TVM tuned sequential runs every op the second way. Whatever the schedule, on ``cores`` cores
the model takes at least

- the *work bound*: every op spends at least ``min(cores x parallel, serial)`` core-time,
  so the sum of those over ``cores``;
- the *critical path*: the longest chain of dependent ops, each at ``min(parallel, serial)``.

The larger of the two, against the sum of the parallel times, is the *ceiling*: no schedule
of these kernels is faster by more (contention for caches and memory, launches and barriers
only lower it). A ceiling near 1 says where the time must come from first: serial kernels
that are slower than ``cores`` times the parallel ones leave concurrency nothing to win.

Ops without a record in either variant (pools, concatenations when only the convolutions
were tuned) count as free on both sides and are reported (``untimed``); an op with a
parallel record but no serial one is priced as gaining nothing from running alone.
"""
from __future__ import annotations

import logging
from dataclasses import asdict, dataclass

from tvm import relax

from .. import _tvm
from ..kernels import prepack

__all__ = ["Ceiling", "concurrency_ceiling", "kernel_calls", "record_times"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Ceiling:
    """What :func:`concurrency_ceiling` found (times in us, summed over the model's calls)."""

    cores: int
    sequential_us: float  #: every op's parallel kernel, one after another
    work_us: float  #: the work bound
    critical_path_us: float  #: the longest dependency chain
    calls: int  #: kernel calls in the model
    untimed: int  #: calls with no record in either variant (free on both sides)
    no_serial: int  #: calls with a parallel record only (priced as gaining nothing)

    @property
    def bound_us(self) -> float:
        """The least time any schedule of these kernels can take."""
        return max(self.work_us, self.critical_path_us)

    @property
    def ratio(self) -> float:
        """TVM tuned sequential over the bound: the most a schedule can gain."""
        return self.sequential_us / self.bound_us if self.bound_us > 0 else float("nan")

    def as_dict(self) -> dict:
        """Plain data (JSON), the bound and the ratio included."""
        return {**asdict(self), "bound_us": self.bound_us, "ratio": self.ratio}

    def __str__(self) -> str:
        return (f"sequential kernels {self.sequential_us / 1e3:.2f} ms; on {self.cores} cores "
                f"no schedule of them under {self.bound_us / 1e3:.2f} ms (work "
                f"{self.work_us / 1e3:.2f}, critical path {self.critical_path_us / 1e3:.2f}): "
                f"ceiling {self.ratio:.2f}x ({self.untimed} of {self.calls} calls untimed, "
                f"{self.no_serial} without a serial record)")


def _best(kernels, variants, plain, packed, name: str) -> float | None:
    """The best record of a kernel over a plain and a packed variant (``packed``: the
    kernel with its weights marked, None where it has none), us."""
    plain_variant, packed_variant = variants
    times = [kernels.best_us(plain_variant, plain, name)]
    if packed is not None:
        times.append(kernels.best_us(packed_variant, packed, name))
    times = [t for t in times if t is not None]
    return min(times) if times else None


def record_times(marked, kernels) -> dict:
    """``{kernel name: (parallel us, serial us)}`` of a fused module's kernels (weights
    marked layout-free), from the database's records (None where the variants have none)."""
    out = {}
    for gv, func in prepack.kernels_of(marked):
        packed = func if prepack.is_marked(func) else None
        plain = func.without_attr(prepack.LAYOUT_FREE) if packed is not None else func
        out[gv.name_hint] = (_best(kernels, ("parallel", "packed"), plain, packed, gv.name_hint),
                             _best(kernels, ("serial", "serial-packed"), plain, packed,
                                   gv.name_hint))
    return out


def kernel_calls(func):
    """``(bound var, kernel name or None, value)`` of each binding of ``func``, in order (the
    name of the PrimFunc a ``call_tir`` calls, None for other bindings)."""
    for block in func.body.blocks:
        for binding in block.bindings:
            value = binding.value
            name = None
            if isinstance(value, relax.Call) and _tvm.op_name(value) == "relax.call_tir":
                name = value.args[0].name_hint
            yield binding.var, name, value


def concurrency_ceiling(mod, kernels, cores: int | None = None,
                        func_name: str = "main") -> Ceiling:
    """The bound of the module docstring for ``mod`` (fused as
    :func:`~.tuned_build.fuse_for_tuning` leaves it, weights bound) and ``kernels`` (a
    :class:`~.kernel_db.KernelDB`), on ``cores`` cores (default the database target's)."""
    cores = cores or int(kernels.target.attrs.get("num-cores", 1))
    marked = prepack.mark_layout_free(mod)
    times = record_times(marked, kernels)
    finish: dict = {}
    seq = work = 0.0
    calls = untimed = no_serial = 0
    for var, name, value in kernel_calls(marked[func_name]):
        start = max((finish.get(v, 0.0) for v in relax.analysis.free_vars(value)), default=0.0)
        par, ser = times.get(name, (None, None)) if name else (None, None)
        calls += name is not None
        if par is None and ser is None:
            untimed += name is not None
            finish[var] = start
            continue
        par = ser if par is None else par
        no_serial += ser is None
        ser = cores * par if ser is None else ser
        seq += par
        work += min(cores * par, ser) / cores
        finish[var] = start + min(par, ser)
    ceiling = Ceiling(cores, seq, work, max(finish.values(), default=0.0), calls, untimed,
                      no_serial)
    logger.info("concurrency ceiling: %s", ceiling)
    return ceiling
