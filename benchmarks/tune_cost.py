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
import statistics
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from tvm_ios import models
from tvm_ios.cost.analytical import AnalyticalCostModel
from tvm_ios.cost.base import schedule_latency
from tvm_ios.cost.hybrid import hybrid_schedule, measured_schedule
from tvm_ios.cost.measure import MeasureSettings, Measurer
from tvm_ios.cost.measured import MeasuredCostModel
from tvm_ios.cost.xgb import train_and_evaluate
from tvm_ios.passes.apply_schedule import ApplySchedule
from tvm_ios import _tvm
from tvm_ios.runtime.compare import build, random_inputs, run, time_module


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


def _side_by_side(mod, params, schedules: dict, rounds: int) -> dict:
    """Whole-model latency of the sequential build and of each schedule, timed in turn
    round after round on the same input (medians), outputs checked against the original."""
    builds = {"sequential": build(mod, params=params)}
    for policy, schedule in schedules.items():
        builds[policy] = build(ApplySchedule(schedule)(mod), params=params)
    inputs = random_inputs(_tvm.bind_params(mod, params))
    reference = run(builds["sequential"], inputs)
    times = {name: [] for name in builds}
    for _ in range(rounds):
        for name, executable in builds.items():
            times[name].append(time_module(executable, inputs, number=1, repeat=1))
    out = {"sequential_real_ms": round(statistics.median(times["sequential"]), 3)}
    for policy in schedules:
        diff = max(float(np.abs(a - b).max()) for a, b in zip(
            _flat(run(builds[policy], inputs)), _flat(reference)))
        out[policy] = {"real_ms": round(statistics.median(times[policy]), 3),
                       "max_abs_diff": diff}
    return out


def _flat(value) -> list:
    return [value] if isinstance(value, np.ndarray) else [a for v in value for a in _flat(v)]


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
    row["hybrid"]["under_measured_figures_us"] = round(
        schedule_latency(full, graph, runs["hybrid"][2]), 1)
    timed = _side_by_side(mod, params, {p: runs[p][2] for p in runs}, args.repeat)
    row["sequential_real_ms"] = timed.pop("sequential_real_ms")
    for policy, figures in timed.items():
        row[policy].update(figures)
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
    parser.add_argument("--repeat", type=int, default=15,
                        help="rounds of whole-model timing (each times every build once)")
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
