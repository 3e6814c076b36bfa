"""``tvm-ios build``: cross-compile a model into a benchmark artifact (no GPU needed).

``tvm-ios build --model inception_v3 --batch 1 --target nvidia/nvidia-h100 [--ios] -o DIR``
writes the library, the weight and input recipes, the CPU reference output and a manifest;
``tvm-ios bench-run DIR`` (or ``python -m tvm_ios.bench.run DIR``) runs it on the GPU host.
"""
from __future__ import annotations

from .common import add_ios_options, add_model_options, load_model, write_json

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
                        help="apply the IOS schedule (stages run one kernel at a time)")
    parser.add_argument("--seed", type=int, default=0, help="seed of input and weight recipes")
    parser.add_argument("-o", "--output", required=True, help="artifact directory to write")
    parser.set_defaults(handler=build)


def _zoo_net(args, name):
    """The zoo's Net of ``name`` (for the PyTorch baselines), None for an ONNX model."""
    from .. import models  # noqa: PLC0415

    if name not in models.names():
        return None
    return models.net(name, image_size=args.image_size, batch_size=args.batch)


def build(args) -> int:
    """Build the artifact; print its manifest summary; ``--json`` writes the manifest."""
    from ..bench.artifact import build_artifact  # noqa: PLC0415

    mod, params, name = load_model(args)
    net = _zoo_net(args, name)
    ios_options = None
    if args.ios:
        ios_options = {"max_group_size": args.max_group_size,
                       "max_num_groups": args.max_num_groups, "strategy": args.strategy}
        if args.device:
            ios_options["device"] = args.device
    manifest = build_artifact(mod, params, args.output, model=name, batch=args.batch,
                              target=args.target, seed=args.seed, ios_options=ios_options,
                              variant="ios-sequential" if args.ios else "tvm-default", net=net)
    kernels = manifest.kernels["compiler"] if manifest.kernels else "none (CPU target)"
    print(f"{name} batch {manifest.batch} [{manifest.variant}] for {manifest.target_kind} "
          f"{manifest.arch or ''} -> {args.output}")
    print(f"  TVM {manifest.versions['tvm']}, kernels precompiled by {kernels}, "
          f"{len(manifest.params)} weight tensors as recipes, "
          f"{len(manifest.outputs)} reference output(s)")
    write_json(args.json, manifest.to_json())
    return 0
