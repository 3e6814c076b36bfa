#!/usr/bin/env python
"""Pack TVM's runtime, apache-tvm-ffi for the GPU host's Python and benchmark artifacts.

    python scripts/pack_runtime.py ART_DIR... -o pack.tar.gz [--download-ffi] [--python 3.12]
        [--ffi-wheel WHL] [--wheel WHL]... [--with-numpy] [--no-cudart]

``--download-ffi`` fetches the pinned apache-tvm-ffi wheel for ``--python`` with pip (the
host's Python differs from this one's: the wheel has a compiled extension); ``--with-numpy``
does the same for numpy, for hosts without it. ``libcudart.so.13`` is taken from this machine's
CUDA toolkit unless ``--no-cudart``. The pack is refused above 64 MiB.
"""
import argparse
import logging
import sys
import tempfile

from tvm_ios.bench import pack


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options shared with benchmarks/gpu_artifacts.py."""
    parser.add_argument("--python", default="3.12", help="the GPU host's Python version")
    parser.add_argument("--ffi-wheel", help="an apache-tvm-ffi wheel for that Python")
    parser.add_argument("--download-ffi", action="store_true",
                        help=f"pip download {pack.FFI_PIN}")
    parser.add_argument("--with-numpy", action="store_true", help="pip download numpy too")
    parser.add_argument("--wheel", action="append", default=[], help="extra wheels to unpack")
    parser.add_argument("--no-cudart", action="store_true")


def make_pack(args, output: str, artifacts: list) -> dict:
    """Build one pack as the options ask; returns the summary."""
    with tempfile.TemporaryDirectory() as tmp:
        ffi = args.ffi_wheel or (pack.download_wheel(pack.FFI_PIN, args.python, tmp)
                                 if args.download_ffi else None)
        if ffi is None:
            print(f"warning: packing this Python's tvm_ffi ({sys.version.split()[0]}); "
                  "use --download-ffi for another host Python", file=sys.stderr)
        wheels = list(args.wheel) + ([pack.download_wheel("numpy<2.4", args.python, tmp)]
                                     if args.with_numpy else [])
        cudart = None if args.no_cudart else pack.find_cudart()
        summary = pack.build_pack(output, artifacts, ffi_wheel=ffi, extra_wheels=wheels,
                                  cudart=cudart)
    print(f"{output}: {summary['archive_bytes'] / 2**20:.1f} MiB (runtime "
          f"{summary['site_bytes'] / 2**20:.1f} MiB, artifacts "
          f"{summary['artifact_bytes'] / 2**20:.1f} MiB unpacked); cudart: {cudart or 'none'}")
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("artifacts", nargs="+")
    parser.add_argument("-o", "--output", required=True)
    add_arguments(parser)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)
    make_pack(args, args.output, args.artifacts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
