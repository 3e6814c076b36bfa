"""Where the time goes: per-kernel times of a TVM build, per-op times of PyTorch eager.

TVM 0.27's Relax VM has no profiler, so :func:`kernel_profile` times every PrimFunc of the
compiled library on its own (``time_evaluator`` on random arguments of its buffer shapes)
and multiplies by the number of calls ``main`` makes: rProgram kernels (a whole concurrent
stage) and single-op kernels, largest total first. Each call is timed cold, every argument
but the first flushed from the caches, as in the model, whose weights do not stay cached
(Inception V3 at 75 px, tuned: 4.68 ms summed cold, 3.34 ms warm, 4.77 ms the model).
:func:`torch_profile` reads ``torch.profiler``'s per-op averages, :func:`onnx_profile`
ONNX Runtime's own per-node profile (``SessionOptions.enable_profiling``), in the same
session setup as the timed column.
"""
from __future__ import annotations

import logging

import numpy as np
from tvm import relax

from .. import _tvm
from ..kernels.prepack import is_rprogram

__all__ = ["kernel_profile", "torch_profile", "onnx_profile"]

logger = logging.getLogger(__name__)


def call_counts(mod) -> dict:
    counts: dict = {}

    def visit(expr):
        if isinstance(expr, relax.Call) and getattr(expr.op, "name", "") == "relax.call_tir":
            name = expr.args[0].name_hint
            counts[name] = counts.get(name, 0) + 1
    relax.analysis.post_order_visit(mod["main"], visit)
    return counts


def _libraries(module) -> list:
    out, queue = [], [module]
    while queue:
        m = queue.pop(0)
        out.append(m)
        queue.extend(m.imports)
    return out


def _has(module, name: str) -> bool:
    try:
        return module.get_function(name, query_imports=False) is not None
    except Exception:  # noqa: BLE001  (tvm raises when absent)
        return False


def kernel_profile(mod, executable, threads: int, top: int = 15, number: int = 15,
                   cold: bool = True) -> list:
    """``[{"kernel", "calls", "us", "total_us", "rprogram"}]`` of the build of ``mod``: the
    median of ``number`` calls, each cold (or, ``cold=False``, of ``number`` warm calls)."""
    _tvm.config_threads(threads)
    device = _tvm.cpu()
    libs = _libraries(executable.mod)
    rng = np.random.default_rng(0)
    rows = []
    for name, count in call_counts(mod).items():
        func = mod[name]
        args = [_tvm.tensor(rng.standard_normal([int(d) for d in p.shape]).astype(str(p.dtype)),
                            device) for p in func.params]  # (0.27: params are buffers)
        lib = next((m for m in libs if _has(m, name)), None)
        if lib is None:
            logger.info("kernel %s is not in the library", name)
            continue
        try:
            timer = lib.time_evaluator(name, device, number=1, repeat=number,
                                       f_preproc="cache_flush_cpu_non_first_arg") if cold \
                else lib.time_evaluator(name, device, number=number, repeat=3)
            us = float(np.median(timer(*args).results)) * 1e6
        except Exception as err:  # noqa: BLE001  (a kernel the library does not export)
            logger.info("kernel %s not timed: %s", name, err)
            continue
        rows.append({"kernel": name, "calls": count, "us": round(us, 1),
                     "total_us": round(us * count, 1),
                     "rprogram": is_rprogram(func),
                     "cold": cold})
    rows.sort(key=lambda r: -r["total_us"])
    return rows[:top] + ([{"kernel": f"({len(rows) - top} more)", "total_us": round(
        sum(r["total_us"] for r in rows[top:]), 1)}] if len(rows) > top else [])


def torch_profile(run, x, top: int = 15) -> list:
    """``[{"op", "calls", "total_us"}]`` of PyTorch eager's ops (self CPU time)."""
    import torch

    run(x)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(5):
            run(x)
    rows = [{"op": e.key, "calls": e.count // 5, "total_us": round(e.self_cpu_time_total / 5, 1)}
            for e in prof.key_averages()]
    rows.sort(key=lambda r: -r["total_us"])
    return rows[:top]


def onnx_profile(model: bytes, threads: int, x, top: int = 15, runs: int = 5) -> list:
    """``[{"op", "calls", "total_us", "runs"}]`` of ONNX Runtime's nodes, sequential mode,
    per run: the kernel time its profiler records for each node in ``runs`` runs after a
    warm-up run (whose one-time costs, weight packing among them, are left out)."""
    import json
    import os
    import tempfile

    from .cpu_baselines import onnx_session

    session = onnx_session(model, threads, profile_prefix=os.path.join(
        tempfile.mkdtemp(prefix="tvm_ios_ort_"), "ort"))
    feed = {session.get_inputs()[0].name: x}
    for _ in range(runs + 1):
        session.run(None, feed)
    with open(session.end_profiling()) as handle:
        events = json.load(handle)
    return node_rows(events, runs, top)


def node_rows(events: list, runs: int, top: int) -> list:
    """Per-node kernel times of the last ``runs`` ``model_run`` spans of a profile."""
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                   if e.get("cat") == "Session" and e.get("name") == "model_run")[-runs:]
    totals: dict = {}
    for e in events:
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time"):
            continue
        if not any(a <= e["ts"] <= b for a, b in spans):
            continue
        key = f"{e['name'][:-len('_kernel_time')]} ({e.get('args', {}).get('op_name', '')})"
        calls, us = totals.get(key, (0, 0.0))
        totals[key] = (calls + 1, us + float(e.get("dur", 0)))
    n = max(1, len(spans))
    rows = [{"op": k, "calls": round(c / n), "total_us": round(us / n, 1), "runs": n}
            for k, (c, us) in totals.items()]
    rows.sort(key=lambda r: -r["total_us"])
    return rows[:top] + ([{"op": f"({len(rows) - top} more)", "total_us": round(
        sum(r["total_us"] for r in rows[top:]), 1)}] if len(rows) > top else [])
