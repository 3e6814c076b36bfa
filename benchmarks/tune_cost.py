"""Benchmark (not a test): tuning with measured vs hybrid stage costs on llvm, side by side.

For each model: tune with ``measured`` (every candidate stage measured, fresh log) and with
``hybrid`` (roofline predictions, measuring only what can win, another fresh log); report
the stage measurements and wall time of each, the estimated latency of each schedule, the
hybrid schedule priced with the measured figures, and the real latency of both schedules
(the rewritten model built and timed, outputs checked against the original). Then the
roofline's Spearman correlation with the measurements and the XGBoost model's held-out
MAPE and Spearman on the measured log.

    PYTHONPATH=. python benchmarks/tune_cost.py --models inception_v3 randwire \\
        --image-size 75 64 -r 2 -s 3 --out /tmp/tune_cost
"""
from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

from scipy.stats import spearmanr

from tvm_ios import models
from tvm_ios.cost.analytical import AnalyticalCostModel
from tvm_ios.cost.hybrid import hybrid_schedule, measured_schedule
from tvm_ios.cost.measure import MeasureSettings, Measurer
from tvm_ios.cost.measured import MeasuredCostModel
from tvm_ios.cost.xgb import train_and_evaluate
from tvm_ios.passes.apply_schedule import ApplySchedule
from tvm_ios.runtime.compare import compare_modules


def _tune(mod, log, policy, measurer, options, margin):
    model = MeasuredCostModel(mod, measurer, log)
    graph = next(iter(model.extractions.values())).graph
    start = time.perf_counter()
    if policy == "measured":
        schedule = measured_schedule(graph, model, **options)
    else:
        schedule = hybrid_schedule(graph, model, AnalyticalCostModel("llvm"), margin=margin,
                                   **options)
    return model, graph, schedule, time.perf_counter() - start


def _priced(model, graph, schedule) -> float:
    """A schedule's latency under ``model``'s (measured) figures."""
    total = 0.0
    for stage in schedule.stages:
        groups = [[graph.index[n] for n in g] for g in stage.groups]
        total += model.merged_latency(graph, [g[0] for g in groups]) \
            if stage.strategy == "merge" else model.stage_latency(graph, groups)
    return total


def _roofline_spearman(model, graph, options) -> dict:
    roofline = AnalyticalCostModel("llvm")
    pairs = {}
    for groups, merge in model.candidates(graph, **options):
        groups = [list(g) for g in groups]
        signature = model.signature(graph, groups, merge)
        measured = model.logged(graph, groups, merge)
        if measured is not None and signature not in pairs:
            est = roofline.merged_latency(graph, [g[0] for g in groups]) if merge \
                else roofline.stage_latency(graph, groups)
            pairs[signature] = (est, measured)
    est, real = zip(*pairs.values())
    return {"n": len(pairs), "spearman": float(spearmanr(est, real).statistic)}


def bench(name, size, args, measurer, out: Path) -> dict:
    """Both policies on one model; returns the figures."""
    mod, params = models.get(name, image_size=size)
    options = {"max_group_size": args.r, "max_num_groups": args.s}
    row = {"model": name, "image_size": size, "r": args.r, "s": args.s}
    runs = {}
    for policy in ("measured", "hybrid"):
        log = out / f"{name}_{size}_{policy}.jsonl"
        if not args.resume:
            log.unlink(missing_ok=True)
        model, graph, schedule, wall = _tune(mod, log, policy, measurer, options, args.margin)
        runs[policy] = (model, graph, schedule)
        row[policy] = {"log": str(log), "measurements": model.counts["measured"],
                       "wall_s": round(wall, 1), "estimated_us": round(schedule.latency_us, 1),
                       "stages": len(schedule.stages),
                       "rounds": schedule.stats.get("hybrid_rounds", 1)}
        print(f"{name}: {policy}: {row[policy]}", flush=True)
    full, graph, _ = runs["measured"]
    row["candidates"] = len({full.signature(graph, grp, m)
                             for grp, m in full.candidates(graph, **options)})
    row["hybrid"]["under_measured_figures_us"] = round(_priced(full, graph, runs["hybrid"][2]), 1)
    for policy in ("measured", "hybrid"):
        rewritten = ApplySchedule(runs[policy][2])(mod)
        cmp = compare_modules(mod, rewritten, params, timing=True, repeat=args.repeat)
        row[policy]["real_ms"] = round(cmp.latency_ms_rewritten, 3)
        row[policy]["max_abs_diff"] = cmp.max_abs_diff
        row["sequential_real_ms"] = round(cmp.latency_ms_original, 3)
    row["roofline_vs_measured"] = _roofline_spearman(full, graph, options)
    row["xgb"] = {"log": row["measured"]["log"],
                  **train_and_evaluate(full.log.records, out / f"{name}_{size}_xgb.json")}
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["inception_v3", "randwire"])
    parser.add_argument("--image-size", nargs="+", type=int, default=[75, 64])
    parser.add_argument("-r", type=int, default=2, help="IOS max group size")
    parser.add_argument("-s", type=int, default=3, help="IOS max groups per stage")
    parser.add_argument("--margin", type=float, default=0.0, help="hybrid optimism margin")
    parser.add_argument("--number", type=int, default=1)
    parser.add_argument("--stage-repeat", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5, help="repeats of whole-model timing")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--out", default="/tmp/tune_cost")
    parser.add_argument("--resume", action="store_true",
                        help="keep existing logs (their stages count as cached, not measured)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    measurer = Measurer("llvm", settings=MeasureSettings(
        number=args.number, repeat=args.stage_repeat, batch_size=args.batch_size))
    rows = []
    try:
        for name, size in zip(args.models, args.image_size):
            rows.append(bench(name, size, args, measurer, out))
    finally:
        measurer.close()
    (out / "results.json").write_text(json.dumps(rows, indent=1))
    for row in rows:
        m, h = row["measured"], row["hybrid"]
        print(f"{row['model']} {row['image_size']}px r={row['r']} s={row['s']}: "
              f"{row['candidates']} candidate stages | measured: {m['measurements']} "
              f"measurements, {m['wall_s']} s, est {m['estimated_us']} us, real {m['real_ms']} ms"
              f" | hybrid: {h['measurements']} measurements, {h['wall_s']} s, est "
              f"{h['estimated_us']} us ({h['under_measured_figures_us']} us by the measured "
              f"log), real {h['real_ms']} ms | sequential real {row['sequential_real_ms']} ms"
              f" | roofline Spearman {row['roofline_vs_measured']['spearman']:.3f} | XGBoost "
              f"held-out MAPE {row['xgb']['mape']:.3f}, Spearman {row['xgb']['spearman']:.3f}")


if __name__ == "__main__":
    main()
