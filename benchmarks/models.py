"""Benchmark (not a test): torchvision's architectures through ``tvm-ios run`` on this CPU,
every column timed side by side in one run; ``docs/models.md`` rendered from the results.

For each architecture of :data:`tvm_ios.models.torchvision_zoo.ARCHS` (random weights and
batch-norm statistics, no download) at its size there, batch 1, this follows the path of
``tvm-ios run --model torchvision:NAME --engine rprogram [--tune SECONDS]``: the same parser,
the same loader (torch.export, batch norms folded), the same tuning into the user's cache
(``--tune``), kernel lookup (``--kernels auto``) and pipeline. What the import gave (units,
batch norms left, names still ``lvNN``), what the schedule made of it (stages, concurrent
ones, rPrograms) and how many kernels were tuned are recorded; then TVM's default build, TVM
tuned sequential (with the same database, when there is one), the tvm-ios build, ONNX
Runtime (sequential; the same torch module exported with the TorchScript exporter) and
PyTorch eager are checked against TVM's default build and timed round-robin on ``--threads``
threads (``--rounds`` rounds of ``--repeat`` calls; each round's median kept so that ratios
pair round by round). The results file is written after each architecture::

    python benchmarks/models.py --threads 2 --json benchmarks/results/models.json
    python benchmarks/models.py --render benchmarks/results/models.json --doc docs/models.md
"""
from __future__ import annotations

import argparse
import io
import logging
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_latency import time_columns
from models_report import COLUMNS, render

from tvm_ios import _tvm, op_graph
from tvm_ios.bench import cpu_baselines as cb
from tvm_ios.bench import cpu_builds
from tvm_ios.bench.provenance import provenance, write_results
from tvm_ios.cli import common
from tvm_ios.cli.compile import make_pipeline
from tvm_ios.cli.kernels_option import kernels_of
from tvm_ios.cli.main import build_parser
from tvm_ios.models.torchvision_zoo import ARCHS, build
from tvm_ios.runtime.compare import build as build_module

ROOT = Path(__file__).resolve().parents[1]
_LV = re.compile(r"^lv\d+$")


def _graph_info(mod) -> dict:
    """Units of the imported module's op graph, batch norms left, names still ``lvNN``."""
    nodes = list(op_graph(mod).nodes)
    return {"units": len(nodes),
            "batch_norms": sum("batch_norm" in n.kind for n in nodes),
            "lv_names": sum(bool(_LV.match(n.name)) for n in nodes)}


def _schedule_info(report: dict) -> dict:
    """Stages, concurrent stages (and the units in them), rPrograms, kernels tuned."""
    stages = (report.get("schedule") or {}).get("stages", [])
    concurrent = [s for s in stages if s.get("strategy") == "concurrent"
                  and len(s.get("groups", [])) > 1]
    tuned = report.get("tuned_kernels") or {}
    return {"stages": len(stages), "concurrent": len(concurrent),
            "units_in_concurrent": sum(len(g) for s in concurrent for g in s["groups"]),
            "rprograms": len(report.get("rprogram_list", [])),
            "kernels_tuned": tuned.get("tuned", 0), "kernels_total": tuned.get("total"),
            "fallbacks": report.get("fallbacks")}


def _run_args(name: str, args):
    """The ``tvm-ios run`` options this architecture is built with."""
    argv = ["run", "--model", f"torchvision:{name}", "--engine", "rprogram",
            "--kernels", args.kernels]
    if args.tune:
        argv += ["--tune", str(args.tune)]
    return build_parser().parse_args(argv)


def _tune(run_args, label: str, mod, info: dict) -> None:
    """``--tune``'s step of ``tvm-ios run`` (timed), into the user's cache."""
    from tvm_ios.cli.run_tune import tune_first

    start = time.perf_counter()
    code = tune_first(run_args, label, mod)
    info["tuning"] = {"seconds_asked": run_args.tune, "exit": code,
                      "seconds": round(time.perf_counter() - start, 1)}


def _database_tuning(kernels) -> dict | None:
    """What the database's tuning runs took, in this run or before it (its ``target.json``):
    seconds and trials summed over runs and variants."""
    runs = kernels.meta.get("tuning", []) if kernels is not None else []
    return {"runs": len(runs), "seconds": round(sum(r.get("wall_s", 0) for r in runs), 1),
            "trials": sum(r.get("trials", 0) for r in runs)} if runs else None


def _ios_build(run_args, label: str, mod, params, info: dict):
    """What ``tvm-ios run`` builds: the pipeline's rewrite of the bound module, compiled."""
    kernels = kernels_of(run_args, label, mod)
    bound = _tvm.bind_params(mod, params)
    target = kernels.target if kernels is not None else _tvm.make_target("llvm")
    start = time.perf_counter()
    rewritten, report = make_pipeline(run_args, kernels=kernels).rewrite(bound, target)
    executable = build_module(rewritten, target)
    info["compile_seconds"] = round(time.perf_counter() - start, 1)
    info["kernels"] = str(kernels.path) if kernels is not None else None
    info["database_tuning"] = _database_tuning(kernels)
    info.update(_schedule_info(report))
    return bound, kernels, executable


def _onnx(module, x) -> bytes:
    import torch

    buf = io.BytesIO()
    torch.onnx.export(module, (torch.from_numpy(x),), buf, dynamo=False, opset_version=17,
                      input_names=["x"], output_names=["y"])
    return buf.getvalue()


def _eager(module, threads: int):
    import torch

    def make():
        torch.set_num_threads(int(threads))

        def run(x):
            with torch.inference_mode():
                return module(torch.from_numpy(x))
        return run
    return make


def _runners(name: str, bound, kernels, executable, x, threads: int, info: dict) -> dict:
    """``{column: {threads: make_runner}}`` of every column that could be built."""
    default = cpu_builds.build_default(bound)
    makers = {"TVM default": lambda: cb.tvm_runner(default, threads),
              "tvm-ios rProgram": lambda: cb.tvm_runner(executable, threads)}
    if kernels is not None:
        tuned_info: dict = {}
        tuned = cpu_builds.build_tuned(bound, kernels, tuned_info)
        info["tuned_sequential_kernels"] = tuned_info.get("tuned_kernels")
        makers["TVM tuned sequential"] = lambda: cb.tvm_runner(tuned, threads)
    module = build(name)
    try:
        onnx_model = _onnx(module, x)
        makers["ONNX Runtime"] = lambda: cb.onnx_runner(onnx_model, threads)
    except Exception as err:  # noqa: BLE001  (a column that cannot be built is reported)
        info["onnx_error"] = f"{type(err).__name__}: {str(err)[:200]}"
    makers["PyTorch eager"] = _eager(module, threads)
    return {col: {threads: make} for col, make in makers.items()}, default


def bench_arch(name: str, args) -> dict:
    """One architecture: import, (tune,) build, check and time every column."""
    run_args = _run_args(name, args)
    start = time.perf_counter()
    mod, params, label = common.load_model(run_args)
    info: dict = {"image_size": ARCHS[name][1], "import_seconds":
                  round(time.perf_counter() - start, 1), **_graph_info(mod)}
    if args.tune:
        _tune(run_args, label, mod, info)
    bound, kernels, executable = _ios_build(run_args, label, mod, params, info)
    shape = _tvm.shape_of(bound["main"].params[0])
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    runners, default = _runners(name, bound, kernels, executable, x, args.threads, info)
    reference = cb.to_numpy(cb.tvm_runner(default, args.threads)(x)).astype("float64")
    timed = time_columns(runners, args.threads, x, reference, args, columns=COLUMNS)
    return {"info": info, "columns": timed}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--archs", nargs="*", default=list(ARCHS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tune", type=float, default=0,
                        help="seconds of `run --tune` per architecture (0: none)")
    parser.add_argument("--kernels", default="auto", help="as `tvm-ios run --kernels`")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--tolerance", type=float, default=1e-3)
    parser.add_argument("--json", default=str(ROOT / "benchmarks/results/models.json"))
    parser.add_argument("--render", metavar="RESULTS", help="only render this results file")
    parser.add_argument("--doc", default=str(ROOT / "docs/models.md"))
    return parser


def main(argv=None) -> int:
    """Measure the architectures asked for (or only ``--render``) and write the page."""
    import json

    from tvm_ios.cli.compile import size_thread_pool

    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    os.environ["TVM_NUM_THREADS"] = str(args.threads)  # (the pipeline's vEUs and the pool)
    size_thread_pool("llvm")
    if not args.render:
        started = provenance(None if argv is None else ["benchmarks/models.py", *argv])
        results: dict = {"threads": args.threads, "tune_seconds": args.tune, "archs": {}}
        for name in args.archs:
            t0 = time.perf_counter()
            try:
                results["archs"][name] = bench_arch(name, args)
            except Exception as err:  # noqa: BLE001  (one architecture's failure is a row)
                results["archs"][name] = {"error": f"{type(err).__name__}: {str(err)[:300]}"}
            results["archs"][name]["seconds"] = round(time.perf_counter() - t0, 1)
            write_results(args.json, results, started)
            print(f"{name}: {time.perf_counter() - t0:.0f} s", flush=True)
    document = json.loads(Path(args.render or args.json).read_text())
    Path(args.doc).write_text(render(document, args.render or args.json))
    print(f"wrote {args.doc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
