"""``tvm-ios build``: cross-compile a model into a benchmark artifact (no GPU needed).

``tvm-ios build --model inception_v3 --batch 1 --target nvidia/nvidia-h100 [--ios |
--engine rprogram] -o DIR`` writes the library, the weight and input recipes, the CPU
reference output and a manifest; ``tvm-ios bench-run DIR`` (or ``python -m
tvm_ios.cli.bench_run DIR``) runs it on the GPU host.
"""
from __future__ import annotations

from .common import add_ios_options, add_model_options, load_model, write_json
from .kernels_option import add_kernels_option, kernels_of

__all__ = ["add_parser", "build"]


def add_parser(subparsers) -> None:
    """Register ``build``."""
    parser = subparsers.add_parser(
        "build", help="cross-compile a model into a benchmark artifact for `bench-run`")
    add_model_options(parser)
    add_ios_options(parser)
    parser.set_defaults(device=None)
    parser.add_argument("--target", default="nvidia/nvidia-h100",
                        help="build target (default nvidia/nvidia-h100, i.e. sm_90a)")
    parser.add_argument("--ios", action="store_true",
                        help="apply the IOS schedule (stages run one kernel at a time); "
                             "same as --engine stages")
    parser.add_argument("--engine", choices=("default", "stages", "rprogram"), default=None,
                        help="default: TVM's build (variant tvm-default); stages: IOS stages "
                             "one kernel at a time (ios-sequential); rprogram: each concurrent "
                             "stage one persistent kernel (ios-rprogram)")
    parser.add_argument("--policy", choices=("ios", "wavefront"), default="ios",
                        help="rProgram policy with --engine rprogram (default ios)")
    parser.add_argument("--seed", type=int, default=0, help="seed of input and weight recipes")
    add_kernels_option(parser)
    parser.add_argument("-o", "--output", required=True, help="artifact directory to write")
    parser.set_defaults(handler=build)


def _zoo_net(args, name):
    """The zoo's Net of ``name`` (for the PyTorch baselines), None for an ONNX model."""
    from .. import models

    if name not in models.names():
        return None
    return models.net(name, image_size=args.image_size, batch_size=args.batch)


def _variant(args) -> str:
    """The artifact variant of ``--ios`` / ``--engine``."""
    engine = args.engine or ("stages" if args.ios else "default")
    if args.ios and engine != "stages":
        raise SystemExit(f"--ios and --engine {engine} contradict each other")
    return {"default": "tvm-default", "stages": "ios-sequential",
            "rprogram": "ios-rprogram"}[engine]


def build(args) -> int:
    """Build the artifact; print its manifest summary; ``--json`` writes the manifest."""
    from ..bench.artifact import build_artifact

    variant = _variant(args)
    if args.kernels not in (None, "none") and "llvm" not in str(args.target):
        raise ValueError(f"--kernels {args.kernels}: kernel databases hold CPU (llvm) kernels, "
                         f"the target {args.target} is not llvm (leave --kernels out)")
    mod, params, name = load_model(args)
    net = _zoo_net(args, name)
    ios_options = None
    if variant == "ios-sequential":
        ios_options = {"max_group_size": args.max_group_size,
                       "max_num_groups": args.max_num_groups, "strategy": args.strategy}
    elif variant == "ios-rprogram":
        ios_options = {"policy": args.policy}
    if ios_options is not None and args.device:
        ios_options["device"] = args.device
    kernels = kernels_of(args, name, mod)  # (llvm only: checked above)
    target = args.target
    if kernels is not None and ios_options is not None:  # tuned: built for its CPU
        ios_options["kernels"], target = str(kernels.path), kernels.target
    manifest = build_artifact(mod, params, args.output, model=name, batch=args.batch,
                              target=target, seed=args.seed, ios_options=ios_options,
                              variant=variant, net=net)
    kernels = manifest.kernels["compiler"] if manifest.kernels else "none (CPU target)"
    print(f"{name} batch {manifest.batch} [{manifest.variant}] for {manifest.target_kind} "
          f"{manifest.arch or ''} -> {args.output}")
    print(f"  TVM {manifest.versions['tvm']}, kernels precompiled by {kernels}, "
          f"{len(manifest.params)} weight tensors as recipes, "
          f"{len(manifest.outputs)} reference output(s)")
    write_json(args.json, manifest.to_json())
    return 0
