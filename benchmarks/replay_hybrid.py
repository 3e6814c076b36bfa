"""Analysis (not a test): replay the hybrid policy against a complete measured log.

A log written by ``tune_cost.py --policy measured`` holds every candidate stage of a model.
Replaying answers each of the hybrid policy's measurements from that log instead of the
machine, so policies and margins are compared on the *same* figures, free of the noise of
two measuring runs: how many stages each measures, and its schedule's latency priced by the
log against the measured optimum. Writes ``benchmarks/results/replay_hybrid_llvm.json``
(``--results``) with its provenance and the replayed log's size and SHA-256.

    PYTHONPATH=. python benchmarks/replay_hybrid.py inception_v3 --image-size 75 -r 2 -s 3 \\
        --log /tmp/tc/inception_v3_75_measured.jsonl --margins 0 0.03 0.1 [--xgb]
"""
from __future__ import annotations

import argparse
import hashlib
import logging
import time
from pathlib import Path

from tvm_ios import models
from tvm_ios.bench.provenance import provenance, write_results
from tvm_ios.cost.analytical import AnalyticalCostModel
from tvm_ios.cost.pricing import schedule_latency
from tvm_ios.hardware import preset_for_target
from tvm_ios.cost.hybrid import hybrid_schedule
from tvm_ios.cost.log import MeasureLog
from tvm_ios.cost.stage_timing import MeasureResult, Measurer
from tvm_ios.cost.measured import MeasuredCostModel
from tvm_ios.cost.xgb import XGBCostModel
from tvm_ios.schedule.ios import ios_schedule


class LogReplay:
    """Answers ``measure`` from a complete log (same interface as :class:`Measurer`)."""

    def __init__(self, path: str):
        self.log = MeasureLog(path)
        probe = Measurer("llvm")
        self.target_str, self.device_key = probe.target_str, probe.device_key

    def measure(self, stages, on_result=None):
        out = []
        for stage in stages:
            record = self.log.lookup_signature(stage.signature, self.target_str,
                                               self.device_key)
            result = MeasureResult(stage.key, run_secs=record.run_secs) if record else \
                MeasureResult(stage.key, error="not in the replayed log")
            out.append(result)
            if on_result is not None:
                on_result(stage, result)
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--image-size", type=int, default=75)
    parser.add_argument("-r", type=int, default=2)
    parser.add_argument("-s", type=int, default=3)
    parser.add_argument("--log", required=True, help="complete measured log of the model")
    parser.add_argument("--margins", nargs="+", type=float, default=[0.0])
    parser.add_argument("--xgb", action="store_true", help="XGBoost predictor (retrained)")
    parser.add_argument("--results", default=str(Path(__file__).resolve().parent / "results"
                                                 / "replay_hybrid_llvm.json"))
    args = parser.parse_args()
    started = provenance()
    logging.basicConfig(level=logging.ERROR)
    mod, _ = models.get(args.model, image_size=args.image_size)
    options = {"max_group_size": args.r, "max_num_groups": args.s}
    full = MeasuredCostModel(mod, None, args.log)
    graph = next(iter(full.extractions.values())).graph
    best = ios_schedule(graph, full, **options)
    candidates = {full.signature(graph, g, m) for g, m in full.candidates(graph, **options)}
    print(f"{args.model} {args.image_size}px r={args.r} s={args.s}: {len(candidates)} "
          f"candidate stages; optimum by the log {best.latency_us:.0f} us")
    report = {"model": args.model, "image_size": args.image_size, "r": args.r, "s": args.s,
              "log": {"path": args.log, "records": len(full.log),
                      "sha256": hashlib.sha256(Path(args.log).read_bytes()).hexdigest()},
              "candidates": len(candidates), "optimum_us": best.latency_us, "runs": []}
    for margin in args.margins:
        model = MeasuredCostModel(mod, LogReplay(args.log), None)
        device = preset_for_target(full.target)
        predictor = XGBCostModel(device) if args.xgb else AnalyticalCostModel(device)
        start = time.perf_counter()
        schedule = hybrid_schedule(graph, model, predictor, margin=margin, **options)
        price, count = schedule_latency(full, graph, schedule), model.counts["measured"]
        seconds = time.perf_counter() - start
        print(f"  {type(predictor).__name__} margin {margin}: {count} measured "
              f"({count / len(candidates):.1%}) in {schedule.stats['hybrid_rounds']} rounds, "
              f"schedule {price:.0f} us by the log ({price / best.latency_us - 1:+.2%}), "
              f"{seconds:.1f} s")
        report["runs"].append({"predictor": type(predictor).__name__, "margin": margin,
                               "measured": count, "rounds": schedule.stats["hybrid_rounds"],
                               "schedule_us": price, "seconds": round(seconds, 1)})
    print(f"results: {write_results(args.results, report, started)}")


if __name__ == "__main__":
    main()
