"""``tvm-ios gpu-pack -o DIR``: build the GPU day's pack here, on the CPU.

    tvm-ios gpu-pack -o gpu_day                      # quick: synthetic DAG, SqueezeNet 64 px
    tvm-ios gpu-pack -o gpu_day --models full        # the table: Inception V3 299, SqueezeNet,
                                                     # RandWire, NASNet-A (21 minutes; docs/gpu.md)
    tvm-ios gpu-pack -o rehearsal --target llvm      # the same pack of llvm artifacts

Writes ``DIR/artifacts/*`` (kept when valid, so a second call only packs), and
``DIR/pack.tar.xz`` with TVM's runtime, apache-tvm-ffi for ``--python`` (``--download-ffi``
fetches the wheel with pip here: the GPU host reaches no registry) and ``run.sh``; refused
above 40 MiB. On the GPU host: ``tar xJf DIR/pack.tar.xz && sh pack/run.sh``.
"""
from __future__ import annotations

import argparse
import sys
import tempfile

__all__ = ["add_parser", "handle", "load_model", "main"]

HELP = "build the GPU benchmark pack (artifacts, runtime, run.sh) on this CPU"


def _models(choice: list[str]) -> list[tuple[str, int | None]]:
    """(name, image size) pairs, in order, once each (``full quick`` has SqueezeNet at
    its full size and at 64 px)."""
    from ..bench.gpu_pack import FULL_MODELS, QUICK_MODELS

    models = []
    for item in choice:
        if item in ("quick", "full"):
            found = list((QUICK_MODELS if item == "quick" else FULL_MODELS).items())
        else:  # NAME or NAME@SIZE
            name, _, size = item.partition("@")
            found = [(name, int(size) if size else None)]
        models += [pair for pair in found if pair not in models]
    return models


def load_model(spec):
    """The quick set's synthetic DAG (12 conv units, 16 channels, 14 px), or a zoo model."""
    from ..bench.gpu_pack import zoo_model

    if spec.model != "dag":
        return zoo_model(spec)
    from ..testing import dag_model

    mod, params = dag_model(3, num_ops=12, channels=16, size=14, p=0.35)
    return mod, params, None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``gpu-pack``."""
    parser.add_argument("-o", "--output", required=True, help="directory to build into")
    parser.add_argument("--models", nargs="+", default=["quick"],
                        help="quick, full, or zoo names (NAME@SIZE for an input size)")
    parser.add_argument("--variants", nargs="+", default=None,
                        help="default: all (full size: not ios-graphturbo-checked, nor "
                             "ios-graphturbo on randwire and nasnet_a)")
    parser.add_argument("--target", default="nvidia/nvidia-h100")
    parser.add_argument("--budget-s", type=float, default=None,
                        help="stop building new artifacts after this many seconds")
    parser.add_argument("--python", default="3.12", help="the GPU host's Python")
    parser.add_argument("--ffi-wheel", help="an apache-tvm-ffi wheel for that Python")
    parser.add_argument("--download-ffi", action="store_true",
                        help="pip download the pinned apache-tvm-ffi wheel for --python")
    parser.add_argument("--no-cudart", action="store_true", help="do not ship libcudart")


def handle(args: argparse.Namespace) -> int:
    """Build and pack; print the summary; 0 when packed."""
    from ..bench import gpu_pack, pack

    specs = gpu_pack.plan(_models(args.models), args.variants)
    with tempfile.TemporaryDirectory() as tmp:
        ffi = args.ffi_wheel or (pack.download_wheel(pack.FFI_PIN, args.python, tmp)
                                 if args.download_ffi else None)
        cudart = None if args.no_cudart or "llvm" in args.target else pack.find_cudart()
        try:
            summary = gpu_pack.build_gpu_pack(args.output, specs, target=args.target,
                                              ffi_wheel=ffi, cudart=cudart,
                                              budget_s=args.budget_s, load=load_model)
        except pack.PackTooLarge as err:
            print(f"tvm-ios gpu-pack: refused: {err}", file=sys.stderr)
            return 1
    print(f"{args.output}/{gpu_pack.PACK_NAME}: {summary['archive_bytes'] / 2**20:.1f} MiB, "
          f"{len(summary['build_s'])} artifacts built in {sum(summary['build_s'].values()):.0f}"
          f" s, {len(summary['skipped'])} skipped (budget or target)")
    return 0


def add_parser(subparsers) -> None:
    """Register ``gpu-pack`` on the ``tvm-ios`` command line."""
    parser = subparsers.add_parser("gpu-pack", help=HELP, description=HELP)
    add_arguments(parser)
    parser.set_defaults(handler=handle)


def main(argv=None) -> int:
    """Stand-alone entry (``python -m tvm_ios.cli.gpu_pack``)."""
    parser = argparse.ArgumentParser(prog="python -m tvm_ios.cli.gpu_pack", description=HELP)
    add_arguments(parser)
    return handle(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
