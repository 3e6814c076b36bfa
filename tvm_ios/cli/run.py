"""``tvm-ios run``: run a model through the tvm-ios pipeline and TVM's default build, compare.

    tvm-ios run --model inception_v3 --image-size 75 --engine rprogram --json r.json
    tvm-ios run --lib out.so --model inception_v3 --image-size 75 --json r.json

Without ``--lib`` the model is rewritten by the pipeline's steps (``tvm_ios.pipeline``):
the kernel database of ``--kernels`` (default ``auto``: the committed one for this model,
size and CPU) goes into the build and the rPrograms, and its stage log (if any) prices the
stages; both builds are made here. With ``--lib`` an exported library (``tvm-ios
compile``) is checked (target, TVM version, inputs, weights, thread pool) and run. The
original is always TVM's default ``llvm`` build (untuned); PyTorch eager on the same weights
is timed too when PyTorch is installed.
"""
from __future__ import annotations

import numpy as np

from .common import add_model_options, load_model, write_json
from .compile import add_pipeline_options, build_threads, make_pipeline, size_thread_pool
from .errors import (BadInput, add_tolerance_option, check_outputs, fallbacks_of,
                     note_schedule_fallback)
from .kernels_option import kernels_of

__all__ = ["add_parser"]


def add_parser(subparsers) -> None:
    """Register ``run``."""
    parser = subparsers.add_parser(
        "run", help="run the scheduled model (or a compiled --lib) against TVM's default build")
    add_model_options(parser)
    add_pipeline_options(parser, engine="rprogram")  # tvm_ios.pipeline()'s default
    add_tolerance_option(parser)
    parser.add_argument("--target", default="llvm", help="build target (default llvm)")
    parser.add_argument("--schedule", metavar="FILE",
                        help="apply this schedule JSON instead of searching one")
    parser.add_argument("--lib", metavar="LIB",
                        help="run this library from `tvm-ios compile` instead of compiling")
    parser.add_argument("--repeat", type=int, default=3, help="timing repeats (median)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random input")
    parser.add_argument("--tune", type=float, metavar="SECONDS", default=None,
                        help="first tune the model's kernels into the cache for about this "
                             "long (resumable: a rerun goes on from there), then run with them")
    parser.set_defaults(handler=run)


def missing_device(target: str) -> str | None:
    """Why ``target`` cannot run here (its GPU is absent), or None when it can."""
    from .. import _tvm

    tgt = _tvm.make_target(target)  # ValueError (bad input) for an impossible target
    if _tvm.device_exists(tgt):
        return None
    return (f"no {tgt.kind.name.upper()} GPU is present on this machine, and `run` needs one "
            f"to run target {target!r}. Without a GPU, `tvm-ios compile --target {target}` or "
            f"`tvm-ios build --target {target}` cross-compile it, and `tvm-ios codegen` writes "
            "the rProgram kernels' CUDA source.")


def run(args) -> int:
    """Print the schedule, the max abs difference and both latencies; ``--json`` them.
    Exit 1 (:class:`~tvm_ios.cli.errors.OutputsDiffer`) when the outputs differ beyond
    ``--tolerance``, after all is printed and written."""
    missing = missing_device(args.target)
    if missing and not args.lib:
        raise BadInput(missing)
    mod, params, name = load_model(args)
    # sized before tuning: a pool first sized after meta_schedule ran keeps one worker (TVM
    # 0.27), and the rProgram engine then had 1 vEU and the sequential schedule
    size_thread_pool(args.target)
    if getattr(args, "tune", None) and not args.lib:
        from .run_tune import tune_first

        code = tune_first(args, name, mod)
        if code:
            return code
    if args.lib:
        result, doc, label = _run_library(args, mod, params)
    else:
        result, doc, label = _run_pipeline(args, mod, params, name)
    speedup = result.latency_ms_original / max(result.latency_ms_rewritten, 1e-9)
    print(f"{name} on {doc['target_kind']}: max |diff| = {result.max_abs_diff:.3g} "
          f"(max |output| {result.max_abs_value:.3g})")
    print(f"latency: TVM default build {result.latency_ms_original:.3f} ms, {label} "
          f"{result.latency_ms_rewritten:.3f} ms ({speedup:.2f}x)")
    torch_ms = _pytorch_ms(args, name, params)
    if torch_ms is not None:
        print(f"latency: PyTorch eager {torch_ms:.3f} ms on the same weights "
              f"({torch_ms / max(result.latency_ms_rewritten, 1e-9):.2f}x of scheduled)")
    write_json(args.json, {"model": name, "target": args.target if not args.lib else
                           doc["target"], **result.to_dict(), "pytorch_eager_ms": torch_ms,
                           **doc, "fallbacks": fallbacks_of(args)}, provenance=True)
    check_outputs(result, args.tolerance, f"{name} ({label})")
    return 0


def _run_pipeline(args, mod, params, name):
    """Rewrite with the pipeline's steps (weights bound), build both here, compare."""
    from .. import _tvm
    from ..runtime.compare import compare_modules
    from ..schedule.schedule import Schedule

    target = _tvm.make_target(args.target)
    kernels = kernels_of(args, name, mod) if target.kind.name == "llvm" else None
    bound = _tvm.bind_params(mod, params)
    build_target = kernels.target if kernels is not None else target
    rewritten, report = make_pipeline(args, kernels=kernels).rewrite(bound, build_target)
    note_schedule_fallback(args, report)
    if report["schedule"]:
        print(Schedule.from_json(report["schedule"]))
    for program in report["rprogram_list"]:
        print(f"rProgram {program['name']}: {program['num_veus']} vEUs, "
              f"{program['tasks']} rTasks")
    result = compare_modules(bound, rewritten, None, target=target, seed=args.seed,
                             timing=True, repeat=args.repeat, rewritten_target=build_target)
    tuned = report.get("tuned_kernels")
    label = "scheduled" + (f" + tuned kernels ({tuned['tuned']} of {tuned['total']} from "
                           f"{kernels.path})" if tuned else " (untuned kernels)")
    return result, report, label


def _run_library(args, mod, params):
    """Check ``--lib`` against the model and this machine, run it against the default build."""
    from .. import _tvm
    from ..kernels.vdevice import pool_threads
    from ..runtime import library
    from ..runtime.compare import build, compare_executables, random_inputs

    lib = library.load_library(args.lib)
    meta = library.read_metadata(lib, where=args.lib)
    bound = _tvm.bind_params(mod, params)
    library.check_library(meta, library.function_inputs(bound),
                          library.weights_digest(params), pool_threads(), where=args.lib)
    target = _tvm.make_target(meta["target"])
    reference = build(mod, "llvm" if target.kind.name == "llvm" else target, params)
    inputs = random_inputs(bound, seed=args.seed)
    print(f"{args.lib}: {' -> '.join(meta.get('passes', []))}; {meta.get('stages')} stages, "
          f"{meta.get('rprograms')} rPrograms")
    result = compare_executables(reference, lib, inputs, _tvm.device_for(target), timing=True,
                                 repeat=args.repeat)
    return result, {"library": args.lib, **meta}, "library"


def _pytorch_ms(args, name: str, params) -> float | None:
    """PyTorch eager latency (ms) of a zoo model on its weights, at TVM's thread count;
    None without PyTorch or for an ONNX file."""
    import importlib.util

    from .. import models

    if importlib.util.find_spec("torch") is None or name not in models.names():
        return None
    from ..bench.cpu_baselines import time_runner, torch_runner

    net = models.net(name, image_size=args.image_size, batch_size=args.batch)
    threads = build_threads()
    x = np.random.default_rng(args.seed).standard_normal(net.input_node.shape).astype("float32")
    return time_runner(torch_runner(net, params, threads), x, repeat=max(3, args.repeat))[0]
