"""Benchmark (not a test): one honest CPU table, every column timed side by side in one run.

For each model, at batch 1, on the same weights and input, at each thread count: PyTorch
eager, torch.compile (CPU inductor), ONNX Runtime sequential / parallel (the model exported
from its PyTorch form), TVM default, TVM tuned sequential, tvm-ios sequential (tuned) (the
graph as tvm-ios takes it, repeated calls computed once and dead convolution taps cut, ops
in model order), tvm-ios stages
(tuned) and tvm-ios rProgram (tuned). Every column's output is checked against TVM's default build
(``max_abs_diff``) before it is timed; a column that differs by more than ``--tolerance``
is reported, not timed. Columns are timed round-robin, ``--rounds`` rounds of ``--repeat``
calls each (the machine may be noisy), and each column's median over all calls is kept,
with each round's median (``round_ms``): the report pairs ratios round by round, so a
machine that slows down for a while (this VM: 14 to 18 ms for RandWire within a minute)
moves both sides of a ratio alike.
With ``--profile`` the tuned TVM builds' kernels (each timed cold, as in the model), PyTorch
eager's ops and ONNX Runtime's nodes are profiled (top entries) to explain where a column
loses. A convolution or matmul kernel a TVM build meets that the kernel database lacks is
tuned into it first (``--cover`` trials; :mod:`tvm_ios.tuning.coverage`); the JSON's tuning
entries say so. Each model's floors are measured in the same run: the least time reading its
weights takes here (``info.memory_floor``, :mod:`tvm_ios.bench.memory_floor`) and the least
its arithmetic takes at the rate the cores reach (``info.compute_floor``,
:mod:`tvm_ios.bench.compute_floor`); with a database, at those rates, how far its kernels'
records are from their own rooflines, by output map (``info.kernel_roofline``,
:mod:`tvm_ios.tuning.roofline`), and what any schedule of them can gain
(``info.ceiling``, :mod:`tvm_ios.tuning.schedule_ceiling`).

    PYTHONPATH=. python benchmarks/cpu_latency.py --models inception_v3 --image-size 75 \\
        --threads 2 --kernels benchmarks/kernels --json benchmarks/results/cpu_latency.json
    PYTHONPATH=. python benchmarks/cpu_latency.py --render benchmarks/results/cpu_latency.json \\
        --doc docs/benchmarks-cpu.md

``--kernels`` is a kernel database directory or a root holding
``<target name>/<model>-<size>/`` databases (``benchmarks/kernels``). Threads: see
:mod:`tvm_ios.bench.cpu_baselines`.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_latency_report import COLUMNS, provenance, render, write_results

from tvm_ios import _tvm, models
from tvm_ios.bench import cpu_baselines as cb
from tvm_ios.bench import cpu_builds
from tvm_ios.bench.compute_floor import compute_floor
from tvm_ios.bench.memory_floor import memory_floor
from tvm_ios.tuning.schedule_ceiling import concurrency_ceiling
from tvm_ios.tuning.kernel_db import default_kernels_dir, open_kernels
from tvm_ios.tuning.roofline import kernel_roofline
from tvm_ios.kernels.tuned_build import fuse_for_tuning



def _kernels(spec: str | None, model: str, size: int | None):
    if not spec:
        return None
    path = Path(spec)
    if not (path / "target.json").is_file():
        path = default_kernels_dir(model, size, root=path)
    return open_kernels(path, quiet_missing=True)


def _measurer(kernels, args):
    """The judge measurer (:func:`~tvm_ios.cost.stage_judges.judge_measurer`) timing the fallback
    decisions' stages, caches flushed, into the database's stage log (TVM's pool has
    ``max(threads)`` workers, the rPrograms' vEUs); None: decide from the stage log and the
    roofline, as ``--no-measure-fallback`` asks."""
    if args.no_measure_fallback or kernels is None:
        return None
    from tvm_ios.cost.stage_judges import judge_measurer

    return judge_measurer(kernels.target)


def _tvm_columns(mod, kernels, threads: list[int], info: dict, measurer=None,
                 cover: int = 0) -> dict:
    """``{column: {threads: executable}}`` of the TVM builds (rProgram vEUs = threads); the
    kernels a build meets that the database lacks are tuned first, ``cover`` trials each."""
    out = {"TVM default": cpu_builds.build_default(mod)}
    info["TVM tuned sequential"] = {}
    out["TVM tuned sequential"] = cpu_builds.build_tuned(mod, kernels,
                                                         info["TVM tuned sequential"], cover)
    info["tvm-ios sequential (tuned)"] = {}
    out["tvm-ios sequential (tuned)"] = cpu_builds.build_ios_sequential(
        mod, kernels, info["tvm-ios sequential (tuned)"], cover)
    info["tvm-ios stages (tuned)"] = {}
    out["tvm-ios stages (tuned)"] = cpu_builds.build_stages(mod, kernels, info=info[
        "tvm-ios stages (tuned)"], cover=cover)
    columns = {c: {t: exe for t in threads} for c, exe in out.items()}
    columns["tvm-ios rProgram (tuned)"] = {}
    for t in threads:
        info.setdefault("tvm-ios rProgram (tuned)", {})[t] = {}
        columns["tvm-ios rProgram (tuned)"][t] = cpu_builds.build_rprogram(
            mod, kernels, t, info=info["tvm-ios rProgram (tuned)"][t],
            measurer=measurer, cover=cover)
    return columns


def _runners(name, args, net, params, mod, kernels, x, info) -> dict:
    """``{column: {threads: (make_runner, error)}}``; a missing package is an error entry."""
    runners: dict = {}
    threads = args.threads
    try:
        onnx_model = cb.export_onnx(net, params, x)
    except Exception as err:  # noqa: BLE001  (torch missing or export failed: say which)
        onnx_model, info["onnx_error"] = None, f"{type(err).__name__}: {err}"
    info["_onnx_model"] = onnx_model  # for its profile; not plain data
    for t in threads:
        runners.setdefault("PyTorch eager", {})[t] = lambda t=t: cb.torch_runner(net, params, t)
        if not args.skip_compile:
            runners.setdefault("torch.compile", {})[t] = \
                lambda t=t: cb.torch_runner(net, params, t, compiled=True)
        for col, par in (("ONNX Runtime sequential", False), ("ONNX Runtime parallel", True)):
            if onnx_model is not None:
                runners.setdefault(col, {})[t] = lambda t=t, p=par: cb.onnx_runner(onnx_model,
                                                                                   t, p)
    start = time.perf_counter()
    _tvm.config_threads(max(threads))  # rPrograms are built for at most the pool's workers
    measurer = _measurer(kernels, args)
    try:
        columns = _tvm_columns(mod, kernels, threads, info, measurer, args.cover)
    finally:
        if measurer is not None:
            measurer.close()  # its runner's worker processes
    for col, by_threads in columns.items():
        for t, exe in by_threads.items():
            runners.setdefault(col, {})[t] = lambda t=t, e=exe: cb.tvm_runner(e, t)
    info["tvm_build_s"] = round(time.perf_counter() - start, 1)
    return runners


def _bench_model(name: str, size, args) -> dict:
    net = models.net(name, image_size=size)
    mod, params = models.get(name, image_size=size)
    mod = _tvm.bind_params(mod, params)
    x = np.random.default_rng(args.seed).standard_normal(net.input_node.shape).astype("float32")
    kernels = _kernels(args.kernels, name, size)
    info: dict = {"kernels": str(kernels.path) if kernels else None,
                  "tuning": kernels.meta.get("tuning", []) if kernels else []}
    runners = _runners(name, args, net, params, mod, kernels, x, info)
    graph = cpu_builds.ios_graph(mod, kernels, args.cover)  # what the tvm-ios columns run
    live = cpu_builds.ios_graph(mod)  # dead taps cut: only live weights and arithmetic
    info["memory_floor"] = _floors(live, args.threads, memory_floor)
    info["compute_floor"] = _floors(live, args.threads, compute_floor)
    if kernels is not None:
        fused = fuse_for_tuning(graph, kernels.target)
        info["ceiling"] = _ceilings(fused, kernels, args.threads)
        info["kernel_roofline"] = _roofline(fused, kernels, info)
    reference = cb.to_numpy(cb.tvm_runner(cpu_builds.build_default(mod), 1)(x))
    result = {"image_size": size, "info": info, "threads": {}}
    for t in args.threads:
        result["threads"][str(t)] = time_columns(runners, t, x, reference, args)
    if args.profile:
        result["profile"] = _profiles(runners, info, max(args.threads), x)
    _plain(info)
    return result


def _ceilings(fused, kernels, threads) -> dict:
    """``{threads: the concurrency ceiling's figures}`` of ``fused`` (the graph tvm-ios
    schedules, fused) with ``kernels``' records (:mod:`tvm_ios.tuning.schedule_ceiling`): the most
    any schedule of these kernels can gain."""
    return {str(t): {**concurrency_ceiling(fused, kernels, cores=t).as_dict(), "graph": "ios"}
            for t in threads}


def _roofline(fused, kernels, info: dict) -> dict:
    """The records of ``fused``'s kernels against their rooflines, by output map
    (:mod:`tvm_ios.tuning.roofline`), at the best rates this run's floors measured
    with as many threads as the records' kernels ran on; an error entry where those floors
    were not measured (a floor explains the table, it is not a column)."""
    cores = str(int(kernels.target.attrs.get("num-cores", 1)))
    read = info["memory_floor"].get(cores, {}).get("bandwidth_gbs")
    peak = info["compute_floor"].get(cores, {}).get("peak_gflops")
    if not read or not peak:
        return {"error": f"no floors measured at {cores} threads, the records' kernels'"}
    groups = kernel_roofline(fused, kernels, read, peak)
    return {"threads": int(cores), "gbps": read, "gflops": peak,
            "groups": [g.as_dict() for g in groups]}


def _floors(mod, threads, floor) -> dict:
    """``{threads: floor(mod, threads)}`` of ``mod`` (its dead taps cut, so only the live
    weights and arithmetic count): :func:`~tvm_ios.bench.memory_floor.memory_floor` (reading
    its weights) or :func:`~tvm_ios.bench.compute_floor.compute_floor` (its convolutions
    and matmuls at the cores' rate), measured now; an error is reported, not raised (a floor
    explains the table, it is not a column)."""
    out = {}
    for t in threads:
        try:
            out[str(t)] = {**floor(mod, t), "live_weights": True}
        except Exception as err:  # noqa: BLE001  (say why there is no floor)
            out[str(t)] = {"error": f"{type(err).__name__}: {err}"}
    return out


def _plain(info: dict) -> None:
    """Drop the modules and executables the builds left in ``info`` (not JSON)."""
    for key in [k for k in info if str(k).startswith("_")]:
        del info[key]
    for value in info.values():
        if isinstance(value, dict):
            _plain(value)


def time_columns(runners, t, x, reference, args, columns=COLUMNS) -> dict:
    """Check each column of ``runners`` (``{column: {threads: make_runner}}``) against
    ``reference`` and time the ones that agree, ``args.rounds`` rounds of ``args.repeat``
    calls each, the columns interleaved in every round (each round's median kept, for
    ratios paired by round)."""
    live, out = {}, {}
    for col in columns:
        if col not in runners or t not in runners[col]:
            out[col] = {"error": "not run (package missing or --skip-compile)"}
            continue
        try:
            run = runners[col][t]()
            diff = cb.max_abs_diff(run(x), reference)
        except Exception as err:  # noqa: BLE001  (a column that fails is reported)
            out[col] = {"error": f"{type(err).__name__}: {str(err)[:300]}"}
            continue
        scale = max(1.0, float(np.max(np.abs(reference))))
        out[col] = {"max_abs_diff": diff, "max_abs_reference": scale}
        if diff > args.tolerance * scale:
            out[col]["error"] = (f"output differs by {diff:.3g} > {args.tolerance} x "
                                 f"max(1, max |reference|) = {args.tolerance * scale:.3g}")
            continue
        live[col] = run
    samples: dict = {col: [] for col in live}
    rounds: dict = {col: [] for col in live}  # each round's median: ratios paired by round
    for _ in range(args.rounds):
        for col, run in live.items():
            _tvm.config_threads(t)  # each column sets its own threads; TVM's pool is reset
            got = cb.time_runner(run, x, repeat=args.repeat, warmup=2)[1]
            samples[col] += got
            rounds[col].append(float(np.median(got)))
    for col in live:
        out[col]["median_ms"] = float(np.median(samples[col]))
        out[col]["samples"] = len(samples[col])
        out[col]["round_ms"] = rounds[col]
    return out


def _profiles(runners, info, t, x) -> dict:
    """Top kernels of the tuned TVM builds, top ops of PyTorch eager and top nodes of ONNX
    Runtime (sequential), at ``t`` threads."""
    from tvm_ios.bench.cpu_profile import (
        kernel_profile, onnx_profile, torch_profile)

    builds = {"TVM tuned sequential": info["TVM tuned sequential"],
              "tvm-ios stages (tuned)": info["tvm-ios stages (tuned)"],
              "tvm-ios rProgram (tuned)": info["tvm-ios rProgram (tuned)"][t]}
    out = {}
    for col, built in builds.items():
        try:
            out[col] = kernel_profile(built["_module"], built["_executable"], t)
        except Exception as err:  # noqa: BLE001  (a profile is a help, not a result)
            out[col] = {"error": f"{type(err).__name__}: {str(err)[:300]}"}
    try:
        out["PyTorch eager"] = torch_profile(runners["PyTorch eager"][t](), x)
    except Exception as err:  # noqa: BLE001
        out["PyTorch eager"] = {"error": f"{type(err).__name__}: {str(err)[:300]}"}
    if info.get("_onnx_model") is not None:
        try:
            out["ONNX Runtime sequential"] = onnx_profile(info["_onnx_model"], t, x)
        except Exception as err:  # noqa: BLE001
            out["ONNX Runtime sequential"] = {"error": f"{type(err).__name__}: {str(err)[:300]}"}
    return out


def _sizes(args) -> list:
    out = []
    for k, name in enumerate(args.models):
        name, _, size = name.partition(":")
        size = int(size) if size else (args.image_size[min(k, len(args.image_size) - 1)]
                                       if args.image_size else None)
        out.append((name, size))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=["inception_v3"],
                        help="zoo models, optionally NAME:SIZE")
    parser.add_argument("--image-size", type=int, nargs="+", default=None)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--kernels", default="benchmarks/kernels",
                        help="kernel database (dir) or root of <target>/<model>-<size>/")
    parser.add_argument("--json", help="results file to write")
    parser.add_argument("--repeat", type=int, default=10, help="calls per column per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tolerance", type=float, default=1e-3,
                        help="largest |output - TVM default's| relative to max(1, max |ref|)")
    parser.add_argument("--skip-compile", action="store_true", help="no torch.compile column")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--no-measure-fallback", action="store_true",
                        help="decide rProgram or sequential per stage from the stage log and "
                             "the roofline instead of measuring both (into the stage log)")
    parser.add_argument("--cover", type=int, default=32, metavar="N",
                        help="tune each convolution/matmul kernel a TVM build meets that the "
                             "database lacks with N trials first, into the database (a "
                             "schedule can fuse ops otherwise than the one it was tuned for; "
                             "0: build them untuned, with a warning; default 32)")
    parser.add_argument("--render", metavar="JSON", help="only render a results file")
    parser.add_argument("--doc", metavar="MD", help="with --render: markdown (+ .png) to write")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.render:
        text = render(json.loads(Path(args.render).read_text()), args.doc, args.render)
        print(text)
        return 0
    started = provenance([sys.argv[0], *(argv if argv is not None else sys.argv[1:])])
    started["load_average_at_start"] = list(os.getloadavg())  # the machine may be shared
    results = {}
    for name, size in _sizes(args):
        start = time.perf_counter()
        results[name] = _bench_model(name, size, args)
        results[name]["wall_s"] = round(time.perf_counter() - start, 1)
        print(render({"results": {name: results[name]}}, None, None), flush=True)
        if args.json:  # after each model: a run cut short keeps what it measured
            write_results(args.json, results, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
