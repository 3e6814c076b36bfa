"""``tvm-ios tune``: measure a model's stages on a target, keep them in a log, schedule.

    tvm-ios tune --model inception_v3 --target llvm --log stages.jsonl --cost hybrid
    tvm-ios tune --model randwire --rpc-tracker 127.0.0.1:9190 --rpc-key k --log stages.jsonl
    tvm-ios schedule --model inception_v3 --log stages.jsonl      # reuse, measure nothing

``--cost``: ``measured`` (every candidate stage missing from the log), ``hybrid`` (predict,
measure only what can win), ``xgb`` or ``roofline`` (predict only). A stage in the log is
never measured again for the same target and device key. ``--train-xgb FILE`` fits the
XGBoost model on the log afterwards, prints its held-out MAPE and Spearman, and saves it.
"""
from __future__ import annotations

import sys
import time

from .common import add_ios_options, add_model_options, load_ios_graph, write_json
from .tune_kernels import add_kernels_option, kernels_of

__all__ = ["add_parser", "add_log_options", "tune_module", "log_cost_model", "StageProgress"]

COSTS = ("measured", "hybrid", "xgb", "roofline")


def add_log_options(parser) -> None:
    """``--log``, ``--target``, ``--device-key``, ``--xgb-model``: what a log is read with."""
    parser.add_argument("--log", metavar="FILE", help="JSON-lines measurement log to reuse")
    parser.add_argument("--target", default="llvm", help="target the log figures are for")
    parser.add_argument("--device-key", default=None,
                        help="device key in the log (default rpc:<key> or local:<host>:<cpu>)")
    parser.add_argument("--xgb-model", metavar="FILE", help="a saved XGBoost cost model")
    parser.add_argument("--engine", choices=("rprogram", "balanced", "sequential"),
                        default="rprogram",
                        help="how a concurrent stage of several groups runs, and so is measured:"
                             " as one rProgram (default), as one rProgram whose ops may be cut"
                             " into slices over the vEUs (balanced), or its groups back to back")
    add_kernels_option(parser)


def add_parser(subparsers) -> None:
    """Register ``tune``."""
    parser = subparsers.add_parser("tune", help="measure stages into a log and schedule")
    add_model_options(parser)
    add_ios_options(parser)
    add_log_options(parser)
    parser.add_argument("--cost", choices=COSTS, default="measured")
    parser.add_argument("--rpc-tracker", metavar="HOST:PORT", help="RPC tracker to run on")
    parser.add_argument("--rpc-key", help="device key of the RPC servers")
    parser.add_argument("--number", type=int, default=None, help="calls per timing (default 3)")
    parser.add_argument("--repeat", type=int, default=None, help="timings kept (default 3)")
    parser.add_argument("--min-repeat-ms", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=None, help="untimed calls first (1)")
    parser.add_argument("--cold", action="store_true",
                        help="time each call after flushing the caches, as the judges of the "
                             "CPU builds do (logged under <device key>:cold, where the judges "
                             "read); --number/--repeat/--warmup default to their 5/5/2")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per build/run")
    parser.add_argument("--batch-size", type=int, default=64, help="stages per build batch")
    parser.add_argument("--predictor", choices=("roofline", "xgb"), default="roofline",
                        help="hybrid: what predicts unmeasured stages (xgb: retrained on the "
                             "log as it grows, the roofline until it holds 8 records)")
    parser.add_argument("--margin", type=float, default=0.0,
                        help="hybrid: how much faster than predicted an unmeasured stage may "
                             "be and still get measured (default 0: measure what the DP "
                             "picks until it picks only measured stages)")
    parser.add_argument("--train-xgb", metavar="FILE", help="fit XGBoost on the log, save it")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the schedule JSON here")
    parser.set_defaults(handler=run)


class StageProgress:
    """One line on stderr: stages measured, cached (log) and predicted so far."""

    def __init__(self, label: str, stream=None):
        self.label, self.stream = label, stream or sys.stderr
        self.start, self.last = time.perf_counter(), 0.0
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()

    def __call__(self, counts: dict, final: bool = False) -> None:
        now = time.perf_counter()
        if not final and now - self.last < (0.2 if self.tty else 10.0):
            return
        self.last = now
        line = (f"{self.label}: {counts['measured']} measured, {counts.get('reused', 0)} "
                f"copied, {counts['cached']} cached, {counts['predicted']} predicted, "
                f"{now - self.start:.1f}s")
        self.stream.write(("\r" if self.tty else "") + line + ("\n" if final or not self.tty
                                                                else ""))
        self.stream.flush()


def _target(args, kernels):
    """The measured target: the kernel database's (its CPU's llvm) when one is applied."""
    return kernels.target if kernels is not None and "llvm" in str(args.target) \
        else args.target


def _measurer(args, kernels=None):
    from ..cost.stage_timing import MeasureSettings, Measurer  # noqa: PLC0415

    given = {name: getattr(args, name, None) for name in ("number", "repeat", "warmup")}
    given = {name: value for name, value in given.items() if value is not None}
    common = dict(min_repeat_ms=args.min_repeat_ms, timeout_s=args.timeout,
                  batch_size=args.batch_size)
    from ..cost.stage_judges import cold_settings  # noqa: PLC0415

    # what is not given: the judges' cold settings, or MeasureSettings' defaults (3/3/1)
    settings = (cold_settings if getattr(args, "cold", False) else MeasureSettings)(
        **common, **given)
    return Measurer(_target(args, kernels), getattr(args, "rpc_tracker", None),
                    getattr(args, "rpc_key", None), settings, args.device_key)


def _predictor(args, model):
    """The predictor of ``--cost``: a loaded XGBoost model; for ``xgb`` one fitted on the log
    when it holds enough records; for ``hybrid`` with ``--predictor xgb`` one the hybrid
    policy trains as the log grows; else the roofline."""
    from ..cost.analytical import AnalyticalCostModel  # noqa: PLC0415
    from ..cost.hybrid import MIN_RECORDS  # noqa: PLC0415
    from ..cost.xgb import XGBCostModel  # noqa: PLC0415

    from ..hardware import preset_for_target  # noqa: PLC0415

    device = preset_for_target(args.target)
    if args.xgb_model:
        loaded = XGBCostModel.load(args.xgb_model)
        if loaded.roofline.device.name != device:
            raise ValueError(f"{args.xgb_model} models {loaded.roofline.device.name}, but "
                             f"--target {args.target} is a {device} device; retrain it")
        return loaded
    if args.cost == "hybrid":
        return XGBCostModel(device) if args.predictor == "xgb" else AnalyticalCostModel(device)
    records = model.log.for_device(model.target, model.device_key)
    if args.cost != "roofline" and len(records) >= MIN_RECORDS:
        return XGBCostModel(device).fit(records)
    return AnalyticalCostModel(device)


def tune_module(mod, name: str, args, progress=None):
    """Tune one Relax module as ``args`` say; returns ``(schedule, counts)``."""
    from ..cost.hybrid import HybridCostModel, hybrid_schedule, measured_schedule  # noqa
    from ..cost.measured import MeasuredCostModel  # noqa: PLC0415
    from ..schedule.ios import ios_schedule  # noqa: PLC0415

    kernels = kernels_of(args, name) if "llvm" in str(args.target) else None
    measurer = _measurer(args, kernels) if args.cost in ("measured", "hybrid") else None
    model = MeasuredCostModel(mod, measurer, args.log, target=str(_target(args, kernels)),
                              device_key=args.device_key, progress=progress,
                              engine=args.engine, kernels=kernels)
    graph = next(iter(model.extractions.values())).graph
    graph.name = name
    options = dict(max_group_size=args.max_group_size, max_num_groups=args.max_num_groups,
                   strategy=args.strategy)
    try:
        if args.cost == "measured":
            schedule = measured_schedule(graph, model, **options)
        elif args.cost == "hybrid":
            schedule = hybrid_schedule(graph, model, _predictor(args, model),
                                       margin=args.margin, **options)
        else:
            hybrid = HybridCostModel(model, _predictor(args, model))
            ios_schedule(graph, hybrid, **options)
            hybrid.calibrate()
            schedule = ios_schedule(graph, hybrid, **options)
    finally:
        if measurer is not None:
            measurer.close()
    return schedule, dict(model.counts), model


def log_cost_model(args, mod):
    """For ``tvm-ios schedule --log``: logged figures, predictions for the rest, or None."""
    if not getattr(args, "log", None):
        return None
    from ..cost.hybrid import HybridCostModel  # noqa: PLC0415
    from ..cost.measured import MeasuredCostModel  # noqa: PLC0415

    kernels = kernels_of(args) if "llvm" in str(args.target) else None
    model = MeasuredCostModel(mod, None, args.log, target=str(_target(args, kernels)),
                              device_key=args.device_key, engine=args.engine,
                              kernels=kernels)
    args.cost = "xgb"
    return HybridCostModel(model, _predictor(args, model))


def _train_xgb(log, path: str) -> dict:
    from ..cost.xgb import train_and_evaluate  # noqa: PLC0415

    return {"log": str(log.path), **train_and_evaluate(log.records, path)}


def run(args) -> int:
    """Tune ``--model``; print the schedule and the measured/cached/predicted counts."""
    if args.cost in ("measured", "hybrid") and not args.log:
        raise ValueError("--log FILE is needed to keep measurements")
    if args.cold and "llvm" not in str(args.target):
        raise ValueError(f"--cold flushes this CPU's caches; --target {args.target} is not "
                         "a CPU target")
    from ..cost.stage_timing import MeasureError  # noqa: PLC0415

    mod, name = load_ios_graph(args)  # (stage modules lift its weights: timed on random ones)
    start = time.perf_counter()
    progress = StageProgress(f"tune {name} ({args.cost})")
    try:
        schedule, counts, model = tune_module(mod, name, args, progress)
    except MeasureError as err:
        print(f"tvm-ios tune: error: {err}", file=sys.stderr)
        return 2
    progress(counts, final=True)
    print(schedule)
    print(f"{counts['measured']} stages measured, {counts.get('reused', 0)} copied from "
          f"equal builds, {counts['cached']} from the log, "
          f"{counts['predicted']} predicted in {time.perf_counter() - start:.1f}s; "
          f"estimated latency {schedule.latency_us:.1f} us")
    result = {"schedule": schedule.to_dict(), "counts": counts}
    if args.train_xgb:
        result["xgb"] = _train_xgb(model.log, args.train_xgb)
        print("XGBoost on {log}: MAPE {mape:.3f}, Spearman {spearman:.3f} on a {split} "
              "({n} of {total}; stages of one model are alike, so this does not measure a "
              "new model: benchmarks/xgb_holdout.py holds out whole models)".format(
                  total=len(model.log), **result["xgb"]))
    write_json(args.json, result, provenance=True)
    write_json(args.output, schedule.to_dict())
    return 0
