"""Benchmark (not a test): the XGBoost stage-latency model held out by model, on llvm.

For each model, every candidate stage of the IOS search (``-r``, ``-s``) is measured into
the model's own log (TVM's LocalRunner, as ``tvm-ios tune --cost measured`` does). Then one
model at a time is held out: XGBoost is fitted on the other models' logs and scored on the
held-out model's stages that those logs do not hold (MAPE, Spearman), beside the roofline
estimate on the same stages and the random 20% split within the model's own log (the
optimistic figure: a model's stages are near-duplicates of each other). Writes
``benchmarks/results/xgb_holdout_llvm.json``; ``--data FILE`` also writes the logs with
their provenance (what ``tests/cost/test_xgb.py`` reads).

    PYTHONPATH=. python benchmarks/xgb_holdout.py --models squeezenet:32 resnet50:32 \\
        mobilenet_v2:32 resnext29:32 randwire:32 -r 2 -s 2 --number 1 --repeat 3 \\
        --out /tmp/xgb_holdout --data tests/cost/data/stage_logs_llvm.json
"""
from __future__ import annotations

import argparse
import dataclasses
import logging
import time
from pathlib import Path

from tvm_ios import models
from tvm_ios.bench.provenance import provenance, write_results
from tvm_ios.cost.log import MeasureLog
from tvm_ios.cost.stage_timing import MeasureSettings, Measurer
from tvm_ios.cost.measured import MeasuredCostModel
from tvm_ios.cost.xgb import evaluate_by_model, train_and_evaluate

RESULTS = Path(__file__).resolve().parent / "results" / "xgb_holdout_llvm.json"


def measure_model(spec: str, args, measurer, out: Path) -> tuple[str, dict, list]:
    """Measure every candidate stage of ``name:size`` into its log; ``(name, row, records)``."""
    name, size = spec.split(":") if ":" in spec else (spec, "0")
    log = out / f"{name}_{size}.jsonl"
    if not args.reuse:
        log.unlink(missing_ok=True)
    before = len(MeasureLog(log))
    mod, _ = models.get(name, image_size=int(size) or None)
    model = MeasuredCostModel(mod, measurer, log)
    graph = next(iter(model.extractions.values())).graph
    start = time.perf_counter()
    candidates = model.candidates(graph, max_group_size=args.r, max_num_groups=args.s)
    model.prefetch(graph, candidates)
    row = {"model": name, "image_size": int(size) or None, "ops": len(graph),
           "candidates": len({model.signature(graph, g, m) for g, m in candidates}),
           "log": str(log), "records": len(model.log), "measured": model.counts["measured"],
           "failed": len(model.failed), "measure_s": round(time.perf_counter() - start, 1)}
    if before:
        row["resumed_from"] = {"log": str(log), "records_before": before}
    print(f"{name} {size}px: {row}", flush=True)
    return name, row, model.log.records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", metavar="NAME:SIZE",
                        default=["squeezenet:32", "resnet50:32", "mobilenet_v2:32",
                                 "resnext29:32", "randwire:32"])
    parser.add_argument("-r", type=int, default=2, help="IOS max group size")
    parser.add_argument("-s", type=int, default=2, help="IOS max groups per stage")
    parser.add_argument("--number", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default="/tmp/xgb_holdout", help="directory of the logs")
    parser.add_argument("--reuse", action="store_true",
                        help="keep existing logs (recorded as resumed, with their size)")
    parser.add_argument("--results", default=str(RESULTS))
    parser.add_argument("--data", metavar="FILE", help="also write the logs here")
    args = parser.parse_args()
    started = provenance()  # the code and command that run, before anything changes
    logging.basicConfig(level=logging.WARNING)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    measurer = Measurer("llvm", settings=MeasureSettings(number=args.number,
                                                         repeat=args.repeat))
    try:
        measured = [measure_model(spec, args, measurer, out) for spec in args.models]
    finally:
        measurer.close()
    logs = {name: records for name, _, records in measured}
    by_model = evaluate_by_model(logs)
    for name, row, records in measured:
        row["xgb_by_model"] = by_model["models"][name]
        row["xgb_random_split"] = train_and_evaluate(records)
        held, split = row["xgb_by_model"], row["xgb_random_split"]
        print(f"{name}: held out ({held['n']} unseen stages, {held['shared']} shared): XGBoost "
              f"MAPE {held['mape']:.3f} Spearman {held['spearman']:.3f} | roofline Spearman "
              f"{held['roofline']['spearman']:.3f} | random split of its own log: MAPE "
              f"{split['mape']:.3f} Spearman {split['spearman']:.3f}", flush=True)
    settings = {"r": args.r, "s": args.s, "number": args.number, "repeat": args.repeat,
                "target": measurer.target_str, "device": by_model["device"]}
    path = write_results(args.results, {"settings": settings,
                                        "models": [row for _, row, _ in measured]}, started)
    print(f"results: {path}")
    if args.data:
        data = {name: [dataclasses.asdict(r) for r in records] for name, records in logs.items()}
        written = write_results(args.data, {"settings": settings, "logs": data}, started,
                                indent=None)
        print(f"logs: {written}")


if __name__ == "__main__":
    main()
