"""``tvm-ios compile``: build a model through the tvm-ios pipeline into a library (as tvmc compile).

    tvm-ios compile --model inception_v3 --image-size 75 --target llvm -o out.so --json c.json
    tvm-ios compile --model net.onnx --target nvidia/nvidia-h100 --engine stages -o net.so
    tvm-ios run --lib out.so --model inception_v3 --image-size 75      # check it here

On ``llvm`` the kernel database of ``--kernels`` (default ``auto``: the committed one for
this model, size and CPU, if any) goes into the build, which then targets the database's
CPU, and TVM's thread pool gets every usable core (``TVM_NUM_THREADS`` to choose). The
library has the weights bound in and carries its schedule: the passes applied, the
stages, the rPrograms, the inputs it takes, the thread-pool workers it needs, the target
and the versions (``tvm_ios.runtime.library``); ``--json`` writes the same record.
"""
from __future__ import annotations

from pathlib import Path

import os

from .common import add_ios_options, add_model_options, load_model, write_json
from .errors import add_strict_option, fallbacks_of, note_schedule_fallback
from .kernels_option import add_kernels_option, kernels_of

__all__ = ["add_parser", "add_pipeline_options", "make_pipeline", "compile_model",
           "size_thread_pool", "build_threads"]


def add_parser(subparsers) -> None:
    """Register ``compile``."""
    parser = subparsers.add_parser(
        "compile", help="compile a model through the tvm-ios pipeline into a library")
    add_model_options(parser)
    parser.add_argument("--target", default="llvm",
                        help="build target: llvm (default), nvidia/nvidia-h100, a dict...")
    add_pipeline_options(parser, engine="rprogram")
    parser.add_argument("-o", "--output", required=True, metavar="LIB",
                        help="library to write (.so)")
    parser.set_defaults(handler=run)


def add_pipeline_options(parser, engine: str) -> None:
    """The options of :func:`tvm_ios.pipeline`: engine, policy, GraphTurbo, log, kernels,
    and IOS's r, s, strategy and cost preset (default: the target's)."""
    add_ios_options(parser)
    parser.set_defaults(strategy=None, device=None)
    parser.add_argument("--engine", choices=("rprogram", "stages"), default=engine,
                        help="rprogram: each concurrent stage one rProgram kernel (CPU vDevice "
                             "on llvm, persistent kernel on CUDA); stages: IOS stages run one "
                             f"kernel at a time (default {engine})")
    parser.add_argument("--policy", choices=("ios", "wavefront"), default="ios",
                        help="rProgram policy with --engine rprogram (default ios)")
    parser.add_argument("--graphturbo", metavar="HW", default=None,
                        help="group, split and order GraphTurbo instances first, for HW (dsa, "
                             "h100, a100, or auto: the target's)")
    parser.add_argument("--log", metavar="FILE", default=None,
                        help="price stages with this measured stage-cost log (tvm-ios tune)")
    parser.add_argument("--measure-stages", action="store_true",
                        help="llvm, rprogram engine: measure both sides of each concurrent "
                             "stage here (one rProgram, its groups in turn) into the stage log "
                             "and keep the faster, then time the whole model with the best of "
                             "them and keep the fastest; without it logged figures decide")
    add_kernels_option(parser, default="auto")
    parser.add_argument("--cover", type=int, metavar="N", default=0,
                        help="with a kernel database: tune each convolution or matmul kernel "
                             "of the build it has no record of with N trials, into it, before "
                             "building (default 0: build those untuned, with a warning)")
    add_strict_option(parser)


def make_pipeline(args, metadata: dict | None = None, kernels=None):
    """The :func:`tvm_ios.pipeline` the options ask for (``kernels``: the KernelDB of
    ``--kernels``, from :func:`~tvm_ios.cli.tune_kernels.kernels_of`)."""
    from ..relax_pipeline import pipeline

    options = dict(engine=args.engine, graphturbo=args.graphturbo, log=args.log,
                   kernels=kernels, r=args.max_group_size, s=args.max_num_groups,
                   strategy=args.strategy, policy=args.policy, device=args.device,
                   max_block_bound=getattr(args, "max_block_bound", None),
                   schedule=getattr(args, "schedule", None), metadata=metadata,
                   measure=getattr(args, "measure_stages", False),
                   cover=getattr(args, "cover", 0))
    return pipeline(**options)


def compile_model(mod, params: dict, target, pipe, output: str | Path):
    """Bind ``params``, compile ``mod`` for ``target`` through ``pipe``, export the library
    to ``output``; returns the pipeline's report."""
    from .. import _tvm

    executable = _tvm.compile_module(_tvm.bind_params(mod, params), target, pipe)
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    executable.export_library(str(output))
    return dict(pipe.report)


def build_threads() -> int:
    """The thread count builds run at: ``TVM_NUM_THREADS``, else every usable core."""
    from .. import _tvm

    return int(os.environ.get("TVM_NUM_THREADS") or len(_tvm.usable_cores()))


def size_thread_pool(target) -> None:
    """On ``llvm``, TVM's thread pool gets :func:`build_threads` workers (TVM's default on
    x86 is half the cores, counting hyper-threads): the CPU rPrograms get one vEU each."""
    from .. import _tvm

    if _tvm.make_target(target).kind.name == "llvm":
        _tvm.config_threads(build_threads())


def run(args) -> int:
    """Compile ``--model``; print the passes, stages and rPrograms; ``--json`` the record."""
    from .. import _tvm
    from ..runtime.library import weights_digest

    target = _tvm.make_target(args.target)  # ValueError (exit 2) for an impossible target
    mod, params, name = load_model(args)
    size_thread_pool(target)
    kernels = kernels_of(args, name, mod) if target.kind.name == "llvm" else None
    target = kernels.target if kernels is not None else target
    metadata = {"model": name, "batch": args.batch, "image_size": args.image_size,
                "weights": weights_digest(params)}
    pipe = make_pipeline(args, metadata, kernels)
    report = compile_model(mod, params, target, pipe, args.output)
    note_schedule_fallback(args, report)
    print(f"{name} for {target.kind.name}: {' -> '.join(report['passes'])}")
    print(f"  {report['stages']} stages, {report['rprograms']} rPrograms"
          + (f" on {report['num_veus']} vEUs (TVM_NUM_THREADS >= {report['num_veus']} to run)"
             if report["num_veus"] else "") + f"; cost model {report.get('cost_model')}")
    if report.get("tuned_kernels"):
        tuned = report["tuned_kernels"]
        print(f"  {tuned['tuned']} of {tuned['total']} kernels tuned, from {report['kernels']}")
    print(f"  library: {args.output}")
    write_json(args.json, {**report, "library": str(args.output),
                           "fallbacks": fallbacks_of(args)}, provenance=True)
    return 0
