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
import glob
import logging
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tvm_ios.bench import pack

FFI_PIN = "apache-tvm-ffi==0.1.14.post1"


def download(requirement: str, python: str, dest: str) -> str:
    """Download one binary wheel of ``requirement`` for CPython ``python`` (manylinux x86-64)."""
    tag = python.replace(".", "")
    cmd = [sys.executable, "-m", "pip", "download", requirement, "--no-deps",
           "--only-binary=:all:", "--python-version", python, "--implementation", "cp",
           "--abi", f"cp{tag}", "--platform", "manylinux_2_28_x86_64",
           "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64",
           "-d", dest]
    subprocess.run(cmd, check=True)
    name = re.split(r"[<>=!~ ]", requirement)[0].replace("-", "_")
    (wheel,) = glob.glob(f"{dest}/{name}-*cp{tag}*.whl")
    return wheel


def find_cudart() -> str | None:
    """``libcudart.so.13`` of the local CUDA toolkit, if any."""
    nvcc = shutil.which("nvcc")
    roots = [Path(nvcc).resolve().parent.parent] if nvcc else []
    roots.append(Path("/usr/local/cuda"))
    for root in roots:
        for sub in ("lib64", "lib", "targets/x86_64-linux/lib"):
            found = sorted((root / sub).glob("libcudart.so.13*"))
            if found:
                return str(found[0])
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("artifacts", nargs="+")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--python", default="3.12", help="the GPU host's Python version")
    parser.add_argument("--ffi-wheel", help="an apache-tvm-ffi wheel for that Python")
    parser.add_argument("--download-ffi", action="store_true", help=f"pip download {FFI_PIN}")
    parser.add_argument("--with-numpy", action="store_true", help="pip download numpy too")
    parser.add_argument("--wheel", action="append", default=[], help="extra wheels to unpack")
    parser.add_argument("--no-cudart", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO)
    with tempfile.TemporaryDirectory() as tmp:
        ffi = args.ffi_wheel or (download(FFI_PIN, args.python, tmp) if args.download_ffi
                                 else None)
        if ffi is None:
            print(f"warning: packing this Python's tvm_ffi ({sys.version.split()[0]}); "
                  "use --download-ffi for another host Python", file=sys.stderr)
        wheels = list(args.wheel) + ([download("numpy<2.4", args.python, tmp)]
                                     if args.with_numpy else [])
        cudart = None if args.no_cudart else find_cudart()
        summary = pack.build_pack(args.output, args.artifacts, ffi_wheel=ffi,
                                  extra_wheels=wheels, cudart=cudart)
    print(f"{args.output}: {summary['archive_bytes'] / 2**20:.1f} MiB (runtime "
          f"{summary['site_bytes'] / 2**20:.1f} MiB, artifacts "
          f"{summary['artifact_bytes'] / 2**20:.1f} MiB unpacked); cudart: {cudart or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
