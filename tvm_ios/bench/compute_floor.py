"""The compute floor of a model on this machine: its arithmetic at the rate the cores reach.

A convolution or matmul of ``F`` floating-point operations takes at least ``F`` over the
rate at which this machine's cores retire them, whatever the kernel and whatever the
schedule. The rate is measured here, in the benchmark's run, with a TVM kernel
(:func:`fma_kernel`: independent chains of vector multiply-adds on registers, one task per
chunk of TVM's pool), built for the same target as the tuned kernels: it is what code LLVM
emits for this CPU can reach, with no memory traffic at all. The model's anchor FLOPs
(:func:`model_flops`: its convolutions and matmuls, 2 per multiply-add, as the op graph
counts them, their fused epilogues' elementwise ops one each) over that rate is a floor no
build, ours or a baseline, can beat; each column's median over it says how much of the
machine's arithmetic the column used.

With the memory floor (:mod:`tvm_ios.bench.memory_floor`) it bounds what the goals ask:
a goal below the larger of the two floors is out of reach on this machine.
"""
from __future__ import annotations

import logging

import numpy as np
import tvm

from .. import _tvm
from ..graph.extract import extract
from ..tuning.kernel_db import host_target
from .memory_floor import significant, timed_rates

__all__ = ["model_flops", "fma_kernel", "peak_gflops", "compute_floor"]

logger = logging.getLogger(__name__)

#: Lanes of each vector (one AVX-512 register of float32).
LANES = 16
#: Independent accumulator chains per task: enough to hide the multiply-add's latency
#: behind its throughput (4 cycles x 2 pipes on current x86 cores).
CHAINS = 12
#: Tasks of the pool (more than the threads, so a slow core does not hold the rest).
CHUNKS = 64
#: The multiply-add ``acc = acc * SCALE + SHIFT`` keeps every value near 1.
SCALE, SHIFT = 0.999, 0.001
#: Op-graph kinds whose FLOPs count (with their fused epilogues' elementwise ops, one each).
ARITHMETIC = ("conv2d", "depthwise", "grouped_conv", "sepconv", "matmul", "conv1d")


def model_flops(mod) -> int:
    """FLOPs of ``mod``'s convolutions and matmuls (``2 x`` multiply-adds), from its op
    graph (:func:`tvm_ios.graph.extract.extract`, the ``main`` function)."""
    graph = extract(mod["main"]).graph
    return int(sum(node.flops for node in graph.nodes if node.kind in ARITHMETIC))


def fma_kernel(iters: int, chunks: int = CHUNKS):
    """A PrimFunc ``fma(seed, out)``: each chunk ``c`` runs ``CHAINS`` chains of ``iters``
    vector multiply-adds ``acc = acc * SCALE + SHIFT`` from ``seed[c]`` and writes the
    chains to ``out[c]``: ``2 x chunks x iters x CHAINS x LANES`` FLOPs."""
    T = _tvm.T  # noqa: N806  (TVMScript reads its namespace by this name)
    lanes, chains = LANES, CHAINS

    @T.prim_func
    def fma(seed: T.Buffer((chunks, chains, lanes), "float32"),
            out: T.Buffer((chunks, chains, lanes), "float32")):
        for c in T.parallel(chunks):
            acc = T.decl_buffer((chains, lanes), "float32", scope="local")
            for k in T.unroll(chains):
                for v in T.vectorized(lanes):
                    acc[k, v] = seed[c, k, v]
            for _ in range(iters):
                for k in T.unroll(chains):
                    for v in T.vectorized(lanes):
                        acc[k, v] = acc[k, v] * T.float32(SCALE) + T.float32(SHIFT)
            for k in T.unroll(chains):
                for v in T.vectorized(lanes):
                    out[c, k, v] = acc[k, v]
    return fma


def _expected(seed: np.ndarray, iters: int) -> np.ndarray:
    """``acc`` after ``iters`` steps, in closed form (a geometric series)."""
    power = SCALE ** iters
    return seed * power + SHIFT * (1 - power) / (1 - SCALE)


def peak_gflops(threads: int, iters: int = 20000, repeat: int = 11, target=None) -> dict:
    """Run :func:`fma_kernel` ``repeat`` times with ``threads`` workers of TVM's pool:
    ``{"flops", "threads", "best_gflops", "median_gflops"}`` (1e9 FLOPs a second)."""
    target = _tvm.make_target(target) if target else host_target()  # this CPU
    lib = _tvm.tirx.build(tvm.IRModule({"fma": fma_kernel(iters)}), target=target)
    host = np.random.default_rng(0).random((CHUNKS, CHAINS, LANES), dtype=np.float32)
    device = _tvm.cpu()
    seed, out = _tvm.tensor(host, device), _tvm.tensor(np.zeros_like(host), device)
    _tvm.config_threads(threads)
    lib["fma"](seed, out)
    if not np.allclose(out.numpy(), _expected(host.astype(np.float64), iters), rtol=1e-3):
        raise RuntimeError("the multiply-add kernel's results differ from the closed form: "
                           "it did not run every step")
    flops = 2 * CHUNKS * iters * CHAINS * LANES
    best, median = timed_rates(lib, "fma", (seed, out), flops / 1e9, repeat)
    return {"flops": flops, "threads": int(threads), "best_gflops": best,
            "median_gflops": median}


def compute_floor(mod, threads: int, repeat: int = 11) -> dict:
    """``mod``'s anchor FLOPs and the least time they take here with ``threads``:
    ``{"gflop", "peak_gflops", "median_gflops", "floor_ms", "threads"}``. The floor is
    taken at the fastest run seen: a lower bound noise can only make lower."""
    flops = model_flops(mod)
    if flops == 0:
        raise ValueError("the module has no convolution or matmul to count")
    peak = peak_gflops(threads, repeat=repeat)
    floor_ms = flops / (peak["best_gflops"] * 1e9) * 1e3
    logger.info("%.3f GFLOP at %.1f GFLOPS (median %.1f) with %d threads: floor %.2f ms",
                flops / 1e9, peak["best_gflops"], peak["median_gflops"], threads, floor_ms)
    return {"gflop": significant(flops / 1e9), "peak_gflops": significant(peak["best_gflops"]),
            "median_gflops": significant(peak["median_gflops"]),
            "floor_ms": significant(floor_ms),
            "threads": int(threads)}
