"""``tvm-ios run``: build the original and the scheduled model, run both, compare.

The original is TVM's default ``llvm`` build (untuned). The scheduled build applies the
kernel database of ``--kernels`` (default ``auto``: the committed one for this model, size
and CPU) and, with ``--engine rprogram``, runs each concurrent stage as one rProgram whose
vEUs run the database's serial kernels; with the database's stage log (``stages.jsonl``
beside it) the schedule comes from stage costs measured with those kernels. PyTorch eager
on the same weights is timed too when PyTorch is installed.
"""
from __future__ import annotations

import os
import sys

import numpy as np

from .common import (add_ios_options, add_model_options, block_options, load_model,
                     make_cost_model, write_json)
from .tune_kernels import add_kernels_option, kernels_of

__all__ = ["add_parser"]


def add_parser(subparsers) -> None:
    """Register ``run``."""
    parser = subparsers.add_parser(
        "run", help="build original and IOS-scheduled module, run both, compare outputs")
    add_model_options(parser)
    add_ios_options(parser)
    parser.add_argument("--target", default="llvm", help="build target (default llvm)")
    parser.add_argument("--schedule", metavar="FILE",
                        help="apply this schedule JSON instead of searching one")
    parser.add_argument("--repeat", type=int, default=3, help="timing repeats (median)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random input")
    parser.add_argument("--engine", choices=("stages", "rprogram"), default="stages",
                        help="stages: IOS stages run one kernel at a time; rprogram: each "
                             "multi-group stage (or wavefront rProgram) as one kernel")
    parser.add_argument("--policy", choices=("ios", "wavefront"), default="ios",
                        help="rProgram policy with --engine rprogram (default ios)")
    add_kernels_option(parser, default="auto")
    parser.set_defaults(handler=run)


def _cost_model(args, kernels, engine: str = "rprogram"):
    """Stage costs measured with the kernels (their log, predictions for the rest), else
    the analytical model (the cpu preset on llvm)."""
    if kernels is not None and (kernels.path / "stages.jsonl").is_file():
        from ..bench.cpu_builds import stage_cost_model  # noqa: PLC0415

        return lambda mod: stage_cost_model(mod, kernels, engine)
    return lambda mod: make_cost_model(args, args.target)


def scheduled_module(args, mod, kernels=None):
    """``mod`` rewritten by ``--schedule`` (with fallback) or by IOSPass."""
    from ..passes.apply_schedule import ApplySchedule  # noqa: PLC0415
    from ..passes.ios_pass import IOSPass  # noqa: PLC0415

    if getattr(args, "engine", "stages") == "rprogram":
        return rprogram_module(args, mod, kernels)
    if args.schedule:
        return ApplySchedule(args.schedule, fallback=True)(mod)
    return IOSPass(_cost_model(args, kernels, "sequential")(mod), max_group_size=args.max_group_size,
                   max_num_groups=args.max_num_groups, strategy=args.strategy,
                   **block_options(args))(mod)


def rprogram_module(args, mod, kernels=None):
    """``mod`` with rProgram kernels: the CPU vDevice on llvm, persistent kernels on CUDA."""
    from ..passes.rprogram_pass import RProgramPass  # noqa: PLC0415

    from ..cost.fallback import rprogram_schedule  # noqa: PLC0415

    cost = _cost_model(args, kernels)(mod)
    if args.policy == "ios":  # never slower than sequential, stage by stage
        mod = rprogram_schedule(mod, cost, max_group_size=args.max_group_size,
                                max_num_groups=args.max_num_groups, **block_options(args))
    rewrite = RProgramPass(args.policy, cost_model=cost, target=args.target, kernels=kernels)
    rewritten = rewrite(mod)
    for program in rewrite.programs:
        print(program)
    return rewritten


def missing_device(target: str) -> str | None:
    """Why ``target`` cannot run here (its GPU is absent), or None when it can."""
    from .. import _tvm  # noqa: PLC0415

    tgt = _tvm.make_target(target)  # ValueError (bad input) for an impossible target
    if _tvm.device_exists(tgt):
        return None
    return (f"no {tgt.kind.name.upper()} GPU is present on this machine, and `run` needs one "
            f"to run target {target!r}. Without a GPU, `tvm-ios build --target {target}` "
            "cross-compiles an artifact for `tvm-ios bench-run` on a GPU host, and `tvm-ios "
            "codegen` writes the rProgram kernels' CUDA source.")


def run(args) -> int:
    """Print the schedule, the max abs difference and both latencies; ``--json`` them."""
    from .. import _tvm  # noqa: PLC0415
    from ..passes.apply_schedule import schedule_of  # noqa: PLC0415
    from ..runtime.compare import compare_modules  # noqa: PLC0415

    missing = missing_device(args.target)
    if missing:
        print(f"tvm-ios run: error: {missing}", file=sys.stderr)
        return 1
    mod, params, name = load_model(args)
    if "llvm" in str(args.target):  # TVM's default on x86 is half the cores (hyper-threads)
        _tvm.config_threads(_threads())
    kernels = kernels_of(args, name) if "llvm" in str(args.target) else None
    rewritten = scheduled_module(args, mod, kernels)
    schedule = schedule_of(rewritten)
    print(schedule)
    prepare, tuned = _tuned_build(kernels)
    result = compare_modules(mod, rewritten, params, target=args.target, seed=args.seed,
                             timing=True, repeat=args.repeat, prepare=prepare,
                             rewritten_target=kernels.target if kernels else None)
    speedup = result.latency_ms_original / max(result.latency_ms_rewritten, 1e-9)
    label = "scheduled" + (f" + tuned kernels ({tuned['tuned']} of {tuned['total']} from "
                           f"{kernels.path})" if kernels else " (untuned kernels)")
    print(f"{name} on {args.target}: max |diff| = {result.max_abs_diff:.3g} "
          f"(max |output| {result.max_abs_value:.3g})")
    print(f"latency: TVM default build {result.latency_ms_original:.3f} ms, {label} "
          f"{result.latency_ms_rewritten:.3f} ms ({speedup:.2f}x)")
    torch_ms = _pytorch_ms(args, name, params)
    if torch_ms is not None:
        print(f"latency: PyTorch eager {torch_ms:.3f} ms on the same weights "
              f"({torch_ms / max(result.latency_ms_rewritten, 1e-9):.2f}x of scheduled)")
    write_json(args.json, {"model": name, "target": args.target, **result.to_dict(),
                           "kernels": str(kernels.path) if kernels else None,
                           "tuned_kernels": tuned, "pytorch_eager_ms": torch_ms,
                           "schedule": schedule.to_dict() if schedule else None})
    return 0


def _threads() -> int:
    """The thread count every build runs at: ``TVM_NUM_THREADS``, else the usable cores."""
    from .. import _tvm  # noqa: PLC0415

    return int(os.environ.get("TVM_NUM_THREADS") or len(_tvm.usable_cores()))


def _tuned_build(kernels):
    """``(prepare, counts)``: what applies ``kernels`` to the bound rewritten module."""
    counts: dict = {}
    if kernels is None:
        return None, counts

    def prepare(mod):
        from ..kernels.tuned_build import apply_kernels, tuned_functions  # noqa: PLC0415

        mod = apply_kernels(mod, kernels)
        counts["tuned"], counts["total"] = tuned_functions(mod)
        return mod
    return prepare, counts


def _pytorch_ms(args, name: str, params) -> float | None:
    """PyTorch eager latency (ms) of a zoo model on its weights, at TVM's thread count;
    None without PyTorch or for an ONNX file."""
    import importlib.util  # noqa: PLC0415

    from .. import models  # noqa: PLC0415

    if importlib.util.find_spec("torch") is None or name not in models.names():
        return None
    from ..bench.cpu_baselines import time_runner, torch_runner  # noqa: PLC0415

    net = models.net(name, image_size=args.image_size, batch_size=args.batch)
    threads = _threads()
    x = np.random.default_rng(args.seed).standard_normal(net.input_node.shape).astype("float32")
    return time_runner(torch_runner(net, params, threads), x, repeat=max(3, args.repeat))[0]
