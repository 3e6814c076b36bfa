"""Benchmark (not a test) of the pipeline schedulers and the real pipeline executor.

Part 1, modelled: ResNet-50, YOLOv3 (52 convs) and SynthNet on the four EPs of the Shisha
paper's configuration C2 (2 FEPs: 8 big cores at 40 GB/s; 2 SEPs: 8 little cores at 20 GB/s),
layer times from the roofline of each EP. For every algorithm: best throughput normalised to
exhaustive search, configurations evaluated, fraction of the space explored, tuning clock
(when it stopped, when it first held its best). SA, HC and RW are averaged over --seeds seeds.

Part 2, real: a zoo model cut into two stages over two CPU EPs (one thread each), the
configuration found by Shisha driving the real executor online; its outputs are checked
against the unpartitioned build and its throughput is measured in the same run as the
one-EP build (the whole model as one stage, with one and with two threads).

Writes ``benchmarks/results/pipelines.json`` (``--results``) with its provenance; the
convergence plots go to ``--out``.

    PYTHONPATH=. python benchmarks/pipelines.py [--out DIR] [--real-model resnet50]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from tvm_ios import _tvm, models
from tvm_ios.bench.provenance import provenance, write_results
from tvm_ios.graph.opgraph import OpGraph
from tvm_ios.pipelining.eps import EPSpec, parse_eps
from tvm_ios.pipelining.executor import PipelineExecutor
from tvm_ios.pipelining.layer_times import layer_weights, modelled_times
from tvm_ios.pipelining.plot import plot_convergence
from tvm_ios.pipelining.run import modelled_search, run_search
from tvm_ios.pipelining.space import Config, ConfigSpace
from tvm_ios.pipelining.stages import PipelineMeasure, StagePlan, compile_stages, pipeline_specs
from tvm_ios.runtime.compare import build, run

RUNS = [("shisha-H3", "shisha", {"heuristic": "H3"}), ("shisha-all", "shisha",
        {"heuristic": "all"}), ("pipesearch", "pipesearch", {}), ("sa", "sa", {}),
        ("hc", "hc", {}), ("rw", "rw", {}), ("es", "es", {})]
STOCHASTIC = ("sa", "hc", "rw")


def modelled(model: str, eps, seeds: int, out: Path) -> list[dict]:
    graph = OpGraph.from_relax(models.get(model)[0])
    times = modelled_times(graph, eps)
    es = modelled_search("es", times, eps)
    rows, best_runs = [], []
    for label, algo, options in RUNS:
        results = [es] if algo == "es" else [
            modelled_search(algo, times, eps, seed=s, **options)
            for s in (range(seeds) if algo in STOCHASTIC else [0])]
        best_runs.append(results[0])
        rows.append({"model": model, "layers": times.num_layers, "algorithm": label,
                     "normalised": statistics.mean(r.throughput for r in results) / es.throughput,
                     "evaluated": statistics.mean(r.evaluated for r in results),
                     "explored": statistics.mean(r.explored for r in results),
                     "stop_s": statistics.mean(r.seconds for r in results),
                     "converge_s": statistics.mean(r.converge_seconds for r in results),
                     "wall_s": statistics.mean(r.wall_seconds for r in results),
                     "space": es.space_size, "config": str(results[0].configuration)})
    plot_convergence(best_runs, str(out / f"convergence_{model}.png"),
                     f"{model}, {len(eps)} EPs (C2), modelled", reference=es.throughput)
    return rows


def figure4(out: Path) -> list[str]:
    """SynthNet on the eight EPs of C5 (the paper's Figure 4 setting); ES does not fit, so
    throughput is normalised to the best any algorithm found."""
    graph = OpGraph.from_relax(models.get("synthnet")[0])
    eps = parse_eps("c5")
    times = modelled_times(graph, eps)
    results = [modelled_search(algo, times, eps, **options)
               for label, algo, options in RUNS if algo != "es"]
    best = max(r.throughput for r in results)
    plot_convergence(results, str(out / "convergence_synthnet_8eps.png"),
                     "synthnet, 8 EPs (C5), modelled", reference=best)
    return [f"{r.algorithm}{'-' + r.extra['heuristic'] if 'heuristic' in r.extra else ''}: "
            f"{r.throughput / best:.3f} of best, {r.evaluated} configs "
            f"({r.explored:.5%} of {r.space_size}), stop {r.seconds:.1f} s" for r in results]


def print_table(rows: list[dict]) -> None:
    print(f"{'model':10} {'L':>3} {'algorithm':11} {'norm':>6} {'evaluated':>10} "
          f"{'explored':>9} {'stop s':>10} {'best at s':>10} {'wall s':>7}")
    for r in rows:
        print(f"{r['model']:10} {r['layers']:3d} {r['algorithm']:11} {r['normalised']:6.3f} "
              f"{r['evaluated']:10.0f} {r['explored']:9.4%} {r['stop_s']:10.1f} "
              f"{r['converge_s']:10.1f} {r['wall_s']:7.2f}")


def goals(rows: list[dict]) -> None:
    for model in sorted({r["model"] for r in rows}):
        by = {r["algorithm"]: r for r in rows if r["model"] == model}
        for label in ("shisha-H3", "shisha-all"):
            s, sa = by[label], by["sa"]
            print(f"goal {model:9} {label:10}: {s['normalised']:.3f} of ES "
                  f"({'ok' if s['normalised'] >= 0.99 else 'MISSED'}), explored "
                  f"{s['explored']:.4%} ({'ok' if s['explored'] < 0.005 else 'MISSED'}), "
                  f"SA/Shisha stop {sa['stop_s'] / s['stop_s']:.1f}x, best-at "
                  f"{sa['converge_s'] / max(s['converge_s'], 1e-9):.1f}x "
                  f"({'ok' if sa['stop_s'] / s['stop_s'] >= 10 else 'MISSED'})")


def real(model: str, size: int, frames: int, repeats: int = 3) -> dict:
    """Tune online on two CPU EPs, check outputs, time pipeline and one-EP builds (ABAB)."""
    mod, params = models.get(model, image_size=size)
    plan = StagePlan.from_model(mod, params)
    eps = parse_eps("cpu2")
    tuning = run_search("shisha", ConfigSpace(plan.num_layers, 2),
                        PipelineMeasure(plan, eps, frames=4), layer_weights(plan.graph), eps,
                        alpha=3)
    config = tuning.configuration
    if config.depth < 2:                       # still compare a two-stage pipeline
        config = Config((plan.num_layers // 2, plan.num_layers - plan.num_layers // 2), (0, 1))
    inputs = [[_tvm.tensor(a) for a in plan.inputs(seed)] for seed in range(frames)]
    whole = compile_stages(plan, [plan.num_layers])
    one = Config((plan.num_layers,), (0,))
    runs = {"pipeline_2eps": PipelineExecutor(
        pipeline_specs(compile_stages(plan, config.stages), eps, config))}
    for n in (2, 1):
        group = [EPSpec(f"threads{n}", "cpu", n, "FEP", 20.0)]
        runs[f"one_ep_{n}threads"] = PipelineExecutor(pipeline_specs(whole, group, one))
    fps = {name: [] for name in runs}
    outputs = None
    for _ in range(repeats):                   # interleaved, so load changes hit all alike
        for name, executor in runs.items():
            executor.run(inputs[:1])
            result = executor.run(inputs)
            fps[name].append(result.throughput)
            if name == "pipeline_2eps":
                outputs, stage_seconds = result.outputs, result.stage_seconds
    reference = build(plan.mod)
    diff = max(float(np.abs(out[0].numpy() - run(reference, plan.inputs(seed))).max())
               for seed, out in enumerate(outputs))
    return {"model": model, "image_size": size, "layers": plan.num_layers,
            "configuration": str(config), "tuning_evaluated": tuning.evaluated,
            "tuning_seconds": tuning.wall_seconds, "max_abs_diff": diff, "frames": frames,
            **{f"{k}_fps_median": statistics.median(v) for k, v in fps.items()},
            "fps_runs": fps, "stage_seconds": stage_seconds}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="bench_out/pipelines", help="where the plots go")
    parser.add_argument("--results", default=str(Path(__file__).resolve().parent / "results"
                                                 / "pipelines.json"))
    parser.add_argument("--models", default="resnet50,yolov3,synthnet")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--real-model", default="resnet50")
    parser.add_argument("--real-size", type=int, default=112)
    parser.add_argument("--frames", type=int, default=20)
    parser.add_argument("--skip-modelled", action="store_true")
    parser.add_argument("--skip-real", action="store_true")
    args = parser.parse_args(argv)
    started = provenance(None if argv is None else [__file__, *argv])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = {}
    if not args.skip_modelled:
        rows = []
        for model in args.models.split(","):
            rows += modelled(model, parse_eps("c2"), args.seeds, out)
        print_table(rows)
        goals(rows)
        report["modelled"] = rows
        report["figure4"] = figure4(out)
        print("\n".join(report["figure4"]))
    if not args.skip_real:
        start = time.perf_counter()
        report["real"] = real(args.real_model, args.real_size, args.frames)
        report["real"]["bench_seconds"] = time.perf_counter() - start
        print(json.dumps(report["real"], indent=1))
    print(f"results: {write_results(args.results, report, started)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
