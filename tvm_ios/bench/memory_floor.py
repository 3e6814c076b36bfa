"""The memory floor of a model on this machine: reading its weights, once per inference.

At batch 1 every weight of a convolutional network is read at least once per inference:
a model whose weights the caches do not keep between inferences cannot run faster than
``weight bytes / bandwidth``, whatever its kernels and whatever their schedule.
The bandwidth is measured here, in the benchmark's run, with a TVM kernel
(:func:`read_kernel`: a parallel, vectorised sum over TVM's thread pool) reading a buffer
of the weights' size again and again, as a model re-reads its weights: if the caches keep
that much, the figure says so (a small model's floor is then low), and if they do not, it
is the rate of memory. Activations and arithmetic only add to the floor, so no build, ours
or a baseline, can beat it; a goal past it is out of reach on this machine.

Inception V3 at 75 px reads 95 MB of weights per inference; this 2-core VM read 95 MB at
20-30 GB/s with two threads and 13 GB/s with one (this kernel and a C probe with four
AVX-512 accumulators agree; scratch), so its floor is 3.2-4.8 ms where ONNX Runtime ran it
in 6.0.
"""
from __future__ import annotations

import logging

import numpy as np
import tvm
from tvm import relax

from .. import _tvm
from ..tuning.kernel_db import host_target

__all__ = ["weight_bytes", "read_kernel", "read_bandwidth", "memory_floor"]

logger = logging.getLogger(__name__)

#: Lanes of a vector the read kernel sums (64 bytes: one cache line, one AVX-512 register).
LANES = 16
#: Rows the buffer is cut into, each summed by one task of the pool (more than the threads,
#: so a slow core does not hold the rest).
CHUNKS = 64


def weight_bytes(mod) -> int:
    """Bytes of the constants (the bound weights) of ``mod``'s Relax functions, each
    counted once."""
    seen: dict = {}

    def visit(expr):
        if _tvm.is_tensor_constant(expr):
            seen.setdefault(_tvm.node_address(expr), _tvm.constant_nbytes(expr))
    for _, func in _tvm.relax_functions(mod):
        relax.analysis.post_order_visit(func, visit)
    return sum(seen.values())


def read_kernel(length: int, chunks: int = CHUNKS):
    """A PrimFunc ``read(a, b)``: ``b[c, v] = sum_i a[c, i, v]`` over ``a`` of shape
    ``(chunks, length, LANES)`` float32, the chunks in parallel, the lanes vectorised: it
    reads every element of ``a`` once, in order."""
    T = _tvm.T  # noqa: N806  (TVMScript reads its namespace by this name)
    lanes = LANES

    @T.prim_func
    def read(a: T.Buffer((chunks, length, lanes), "float32"),
             b: T.Buffer((chunks, lanes), "float32")):
        for c in T.parallel(chunks):
            for v in T.vectorized(lanes):
                b[c, v] = T.float32(0)
            for i in range(length):
                for v in T.vectorized(lanes):
                    b[c, v] = b[c, v] + a[c, i, v]
    return read


def read_bandwidth(nbytes: int, threads: int, repeat: int = 21, target=None) -> dict:
    """Read ``nbytes`` (rounded up to whole vectors per chunk) ``repeat`` times with
    ``threads`` workers of TVM's pool: ``{"bytes", "threads", "best_gbs", "median_gbs"}``
    (1e9 bytes a second, of the fastest read and of the median one)."""
    length = max(1, -(-int(nbytes) // (CHUNKS * LANES * 4)))
    target = _tvm.make_target(target) if target else host_target()  # this CPU
    lib = _tvm.tirx.build(tvm.IRModule({"read": read_kernel(length)}), target=target)
    host = np.random.default_rng(0).random((CHUNKS, length, LANES), dtype=np.float32)
    device = _tvm.cpu()
    a = _tvm.tensor(host, device)
    b = _tvm.tensor(np.zeros((CHUNKS, LANES), "float32"), device)
    _tvm.config_threads(threads)
    lib["read"](a, b)
    if not np.allclose(b.numpy(), host.sum(axis=1, dtype=np.float64), rtol=1e-3):
        raise RuntimeError("the read kernel's sums differ from numpy's: it did not read "
                           "the whole buffer")
    best, median = timed_rates(lib, "read", (a, b), host.nbytes / 1e9, repeat)
    return {"bytes": host.nbytes, "threads": int(threads), "best_gbs": best,
            "median_gbs": median}


def timed_rates(lib, name: str, args, amount: float, repeat: int) -> tuple[float, float]:
    """``(best, median)`` rate of ``amount`` a second over ``repeat`` timed calls of
    ``lib[name](*args)`` on the CPU (the floors' kernels share it)."""
    seconds = lib.time_evaluator(name, _tvm.cpu(), number=1, repeat=repeat)(*args).results
    return amount / min(seconds), amount / float(np.median(seconds))


def memory_floor(mod, threads: int, repeat: int = 21) -> dict:
    """``mod``'s weights and the least time reading them takes here with ``threads``:
    ``{"weight_mb", "bandwidth_gbs", "median_gbs", "floor_ms", "threads"}`` (MB of 1e6
    bytes). The floor is taken at the fastest read seen (``bandwidth_gbs``): a lower bound
    that noise can only make lower."""
    nbytes = weight_bytes(mod)
    if nbytes == 0:
        raise ValueError("the module has no bound weights (bind its parameters first)")
    read = read_bandwidth(nbytes, threads, repeat)
    floor_ms = nbytes / (read["best_gbs"] * 1e9) * 1e3
    logger.info("weights %.1f MB, read at %.1f GB/s (median %.1f) with %d threads: floor "
                "%.2f ms", nbytes / 1e6, read["best_gbs"], read["median_gbs"], threads,
                floor_ms)
    return {"weight_mb": significant(nbytes / 1e6),
            "bandwidth_gbs": significant(read["best_gbs"]),
            "median_gbs": significant(read["median_gbs"]), "floor_ms": significant(floor_ms),
            "threads": int(threads)}


def significant(value: float, digits: int = 4) -> float:
    """``value`` rounded to ``digits`` significant digits (the floors' JSON figures)."""
    return float(f"{value:.{digits}g}")
