"""``tvm-ios run``: build the original and the scheduled model, run both, compare."""
from __future__ import annotations

import sys

from .common import (add_ios_options, add_model_options, block_options, load_model,
                     make_cost_model, write_json)

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
    parser.set_defaults(handler=run)


def scheduled_module(args, mod):
    """``mod`` rewritten by ``--schedule`` (with fallback) or by IOSPass."""
    from ..passes.apply_schedule import ApplySchedule  # noqa: PLC0415
    from ..passes.ios_pass import IOSPass  # noqa: PLC0415

    if getattr(args, "engine", "stages") == "rprogram":
        return rprogram_module(args, mod)
    if args.schedule:
        return ApplySchedule(args.schedule, fallback=True)(mod)
    return IOSPass(make_cost_model(args), max_group_size=args.max_group_size,
                   max_num_groups=args.max_num_groups, strategy=args.strategy,
                   **block_options(args))(mod)


def rprogram_module(args, mod):
    """``mod`` with rProgram kernels: the CPU vDevice on llvm, persistent kernels on CUDA."""
    from ..passes.rprogram_pass import RProgramPass  # noqa: PLC0415

    rewrite = RProgramPass(args.policy, cost_model=make_cost_model(args), target=args.target)
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
    from ..passes.apply_schedule import schedule_of  # noqa: PLC0415
    from ..runtime.compare import compare_modules  # noqa: PLC0415

    missing = missing_device(args.target)
    if missing:
        print(f"tvm-ios run: error: {missing}", file=sys.stderr)
        return 1
    mod, params, name = load_model(args)
    rewritten = scheduled_module(args, mod)
    schedule = schedule_of(rewritten)
    print(schedule)
    result = compare_modules(mod, rewritten, params, target=args.target, seed=args.seed,
                             timing=True, repeat=args.repeat)
    speedup = result.latency_ms_original / max(result.latency_ms_rewritten, 1e-9)
    print(f"{name} on {args.target}: max |diff| = {result.max_abs_diff:.3g} "
          f"(max |output| {result.max_abs_value:.3g})")
    print(f"latency: original {result.latency_ms_original:.3f} ms, scheduled "
          f"{result.latency_ms_rewritten:.3f} ms ({speedup:.2f}x)")
    write_json(args.json, {"model": name, "target": args.target, **result.to_dict(),
                           "schedule": schedule.to_dict() if schedule else None},
               provenance=True)
    return 0
