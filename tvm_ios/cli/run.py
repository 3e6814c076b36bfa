"""``tvm-ios run``: run a model through the tvm-ios pipeline and TVM's default build, compare.

    tvm-ios run --model inception_v3 --image-size 75 --engine rprogram --json r.json
    tvm-ios run --lib out.so --model inception_v3 --image-size 75 --json r.json

Without ``--lib`` the model is rewritten by the pipeline's steps (``tvm_ios.pipeline``)
and both builds are made here; with ``--lib`` an exported library (``tvm-ios compile``) is
checked (target, TVM version, inputs, weights, thread pool) and run against TVM's default
build of the same model. Both print and ``--json`` the max abs difference and latencies.
"""
from __future__ import annotations

import sys

from .common import add_model_options, load_model, write_json
from .compile import add_pipeline_options, make_pipeline

__all__ = ["add_parser"]


def add_parser(subparsers) -> None:
    """Register ``run``."""
    parser = subparsers.add_parser(
        "run", help="run the scheduled model (or a compiled --lib) against TVM's default build")
    add_model_options(parser)
    add_pipeline_options(parser, engine="stages")
    parser.add_argument("--target", default="llvm", help="build target (default llvm)")
    parser.add_argument("--schedule", metavar="FILE",
                        help="apply this schedule JSON instead of searching one")
    parser.add_argument("--lib", metavar="LIB",
                        help="run this library from `tvm-ios compile` instead of compiling")
    parser.add_argument("--repeat", type=int, default=3, help="timing repeats (median)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random input")
    parser.set_defaults(handler=run)


def missing_device(target: str) -> str | None:
    """Why ``target`` cannot run here (its GPU is absent), or None when it can."""
    from .. import _tvm  # noqa: PLC0415

    tgt = _tvm.make_target(target)  # ValueError (bad input) for an impossible target
    if _tvm.device_exists(tgt):
        return None
    return (f"no {tgt.kind.name.upper()} GPU is present on this machine, and `run` needs one "
            f"to run target {target!r}. Without a GPU, `tvm-ios compile --target {target}` or "
            f"`tvm-ios build --target {target}` cross-compile it, and `tvm-ios codegen` writes "
            "the rProgram kernels' CUDA source.")


def run(args) -> int:
    """Print the schedule, the max abs difference and both latencies; ``--json`` them."""
    missing = missing_device(args.target)
    if missing and not args.lib:
        print(f"tvm-ios run: error: {missing}", file=sys.stderr)
        return 1
    mod, params, name = load_model(args)
    if args.lib:
        result, doc = _run_library(args, mod, params)
    else:
        result, doc = _run_pipeline(args, mod, params)
    speedup = result.latency_ms_original / max(result.latency_ms_rewritten, 1e-9)
    print(f"{name} on {doc['target_kind']}: max |diff| = {result.max_abs_diff:.3g} "
          f"(max |output| {result.max_abs_value:.3g})")
    print(f"latency: TVM default {result.latency_ms_original:.3f} ms, "
          f"{'library' if args.lib else 'scheduled'} {result.latency_ms_rewritten:.3f} ms "
          f"({speedup:.2f}x)")
    write_json(args.json, {"model": name, "target": args.target if not args.lib else
                           doc["target"], **result.to_dict(), **doc})
    return 0


def _run_pipeline(args, mod, params):
    """Rewrite with the pipeline's steps, build both here, compare."""
    from .. import _tvm  # noqa: PLC0415
    from ..runtime.compare import compare_modules  # noqa: PLC0415
    from ..schedule.schedule import Schedule  # noqa: PLC0415

    target = _tvm.make_target(args.target)
    rewritten, report = make_pipeline(args).rewrite(mod, target)
    if report["schedule"]:
        print(Schedule.from_json(report["schedule"]))
    for program in report["rprogram_list"]:
        print(f"rProgram {program['name']}: {program['num_veus']} vEUs, "
              f"{program['tasks']} rTasks")
    result = compare_modules(mod, rewritten, params, target=target, seed=args.seed,
                             timing=True, repeat=args.repeat)
    return result, report


def _run_library(args, mod, params):
    """Check ``--lib`` against the model and this machine, run it against the default build."""
    from .. import _tvm  # noqa: PLC0415
    from ..kernels.vdevice import pool_threads  # noqa: PLC0415
    from ..runtime import library  # noqa: PLC0415
    from ..runtime.compare import build, compare_executables, random_inputs  # noqa: PLC0415

    lib = library.load_library(args.lib)
    meta = library.read_metadata(lib, where=args.lib)
    bound = _tvm.bind_params(mod, params)
    library.check_library(meta, library.function_inputs(bound),
                          library.weights_digest(params), pool_threads(), where=args.lib)
    target = _tvm.make_target(meta["target"])
    reference = build(mod, target, params)
    inputs = random_inputs(bound, seed=args.seed)
    print(f"{args.lib}: {' -> '.join(meta.get('passes', []))}; {meta.get('stages')} stages, "
          f"{meta.get('rprograms')} rPrograms")
    result = compare_executables(reference, lib, inputs, _tvm.device_for(target), timing=True,
                                 repeat=args.repeat)
    return result, {"library": args.lib, **meta}
