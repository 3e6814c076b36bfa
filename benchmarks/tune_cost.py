"""Benchmark (not a test): tuning with measured vs hybrid stage costs on llvm, side by side.

For each model: tune with ``measured`` (every candidate stage measured, fresh log) and with
``hybrid`` (roofline predictions, measuring only what can win, another fresh log); report
the stage measurements and wall time of each, the estimated latency of each schedule, the
hybrid schedule priced with the measured figures, and the real latency of both schedules
(the rewritten model built and timed, outputs checked against the original). Then the
roofline's Spearman correlation with the measurements, and the XGBoost model's MAPE and
Spearman on each model's stages when fitted on the other models' measured logs (held out
by model), beside the optimistic random split of the model's own log.

Writes ``benchmarks/results/tune_cost_llvm.json`` (``--results``) with its provenance.
``--resume`` keeps the logs of an earlier run: the rows then record that they resumed and
from which log, and ``measurements``/``wall_s`` count only this run's work.

    PYTHONPATH=. python benchmarks/tune_cost.py --models inception_v3 randwire \\
        --image-size 75 64 -r 2 -s 3 --number 2 --stage-repeat 5 --repeat 15 --out /tmp/tc
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

from tvm_ios import _tvm, models
from tvm_ios.bench.provenance import provenance, write_results
from tvm_ios.cost.analytical import AnalyticalCostModel
from tvm_ios.cost.pricing import schedule_latency
from tvm_ios.hardware import preset_for_target
from tvm_ios.cost.hybrid import hybrid_schedule, measured_schedule
from tvm_ios.cost.log import MeasureLog
from tvm_ios.cost.stage_timing import MeasureSettings, Measurer
from tvm_ios.cost.measured import MeasuredCostModel
from tvm_ios.cost.xgb import evaluate_by_model, train_and_evaluate
from tvm_ios.passes.apply_schedule import ApplySchedule
from tvm_ios.runtime.compare import build, random_inputs, run, time_module
from tvm_ios.runtime.outputs import flatten_outputs

RESULTS = Path(__file__).resolve().parent / "results" / "tune_cost_llvm.json"


def _tune(mod, log, policy, measurer, options, margin):
    model = MeasuredCostModel(mod, measurer, log)
    graph = next(iter(model.extractions.values())).graph
    start = time.perf_counter()
    if policy == "measured":
        schedule = measured_schedule(graph, model, **options)
    else:
        roofline = AnalyticalCostModel(preset_for_target(measurer.target_str))
        schedule = hybrid_schedule(graph, model, roofline, margin=margin, **options)
    return model, graph, schedule, time.perf_counter() - start


def _roofline_spearman(model, graph, options) -> dict:
    roofline = AnalyticalCostModel(preset_for_target(model.target))
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
            flatten_outputs(run(builds[policy], inputs)), flatten_outputs(reference)))
        out[policy] = {"real_ms": round(statistics.median(times[policy]), 3),
                       "max_abs_diff": diff}
    return out


def bench(name, size, args, measurer, out: Path) -> tuple[dict, list]:
    """Both policies on one model; returns the figures and the measured log's records."""
    mod, params = models.get(name, image_size=size)
    options = {"max_group_size": args.r, "max_num_groups": args.s}
    row = {"model": name, "image_size": size, "r": args.r, "s": args.s}
    runs = {}
    for policy in ("measured", "hybrid"):
        log = out / f"{name}_{size}_{policy}.jsonl"
        if not args.resume:
            log.unlink(missing_ok=True)
        before = len(MeasureLog(log))
        model, graph, schedule, wall = _tune(mod, log, policy, measurer, options, args.margin)
        runs[policy] = (model, graph, schedule)
        row[policy] = {"log": str(log), "measurements": model.counts["measured"],
                       "wall_s": round(wall, 1), "estimated_us": round(schedule.latency_us, 1),
                       "stages": len(schedule.stages),
                       "rounds": schedule.stats.get("hybrid_rounds", 1)}
        if before:  # honest about a resumed run: its figures count only the new work
            row[policy]["resumed_from"] = {"log": str(log), "records_before": before}
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
    row["xgb_random_split"] = train_and_evaluate(full.log.records)
    print(json.dumps(row), flush=True)
    return row, full.log.records


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
    parser.add_argument("--out", default="/tmp/tune_cost", help="directory of the logs")
    parser.add_argument("--results", default=str(RESULTS), help="the results file")
    parser.add_argument("--resume", action="store_true",
                        help="keep existing logs (their stages count as cached, not measured; "
                             "the results record which log each row resumed from)")
    args = parser.parse_args()
    started = provenance()  # the code and command that run, before anything changes
    logging.basicConfig(level=logging.WARNING)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    measurer = Measurer("llvm", settings=MeasureSettings(
        number=args.number, repeat=args.stage_repeat, batch_size=args.batch_size))
    rows, logs = [], {}
    try:
        for name, size in zip(args.models, args.image_size):
            row, logs[name] = bench(name, size, args, measurer, out)
            rows.append(row)
    finally:
        measurer.close()
    if len(logs) > 1:  # held out by model: fitted on the other models' measured logs
        by_model = evaluate_by_model(logs)["models"]
        for row in rows:
            row["xgb_by_model"] = by_model[row["model"]]
    settings = {"r": args.r, "s": args.s, "margin": args.margin, "number": args.number,
                "stage_repeat": args.stage_repeat, "repeat": args.repeat,
                "batch_size": args.batch_size, "target": measurer.target_str,
                "resume": args.resume}
    print(f"results: {write_results(args.results, {'settings': settings, 'rows': rows}, started)}")
    for row in rows:
        m, h = row["measured"], row["hybrid"]
        print(f"{row['model']} {row['image_size']}px r={row['r']} s={row['s']}: "
              f"{row['candidates']} candidate stages | measured: {m['measurements']} "
              f"measurements, {m['wall_s']} s, est {m['estimated_us']} us, real {m['real_ms']} ms"
              f" | hybrid: {h['measurements']} measurements, {h['wall_s']} s, est "
              f"{h['estimated_us']} us ({h['under_measured_figures_us']} us by the measured "
              f"log), real {h['real_ms']} ms | sequential real {row['sequential_real_ms']} ms"
              f" | roofline Spearman {row['roofline_vs_measured']['spearman']:.3f}"
              + _xgb_line(row))


def _xgb_line(row: dict) -> str:
    split = row["xgb_random_split"]
    line = (f" | XGBoost, random split of its own log: MAPE {split['mape']:.3f}, Spearman "
            f"{split['spearman']:.3f}")
    held = row.get("xgb_by_model")
    if held:
        line += (f"; held out by model ({held['n']} unseen stages): MAPE {held['mape']:.3f}, "
                 f"Spearman {held['spearman']:.3f}")
    return line


if __name__ == "__main__":
    main()
