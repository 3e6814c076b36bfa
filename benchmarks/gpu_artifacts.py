#!/usr/bin/env python
"""Build every artifact of the GPU benchmark table and pack them, one pack per model.

    python benchmarks/gpu_artifacts.py -o gpu_bench [--models ...] [--batches 1 16]
        [--download-ffi --with-numpy]

For each model and batch: ``tvm-ios build`` of TVM's default build, of the IOS stage
schedule (stages one kernel at a time) and of the rProgram engine (each concurrent stage one
persistent kernel) for nvidia/nvidia-h100 (sm_90a), on this machine with no GPU (an
artifact with a valid manifest is kept, not rebuilt); then ``gpu_bench/packs/<model>.tar.gz`` (each under
64 MiB, with TVM's runtime, apache-tvm-ffi for the host's Python, and that model's
artifacts). On the GPU host: ``tar xzf <model>.tar.gz && sh pack/run.sh``; back here,
``python -m tvm_ios.cli.bench_table */results.json */torch_results.json -o docs/benchmarks.md``.
``gpu_bench/build.json`` records what was built or kept, with the provenance of this run.
"""
import argparse
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import pack_runtime

from tvm_ios.bench.manifest import Manifest, ManifestError
from tvm_ios.bench.provenance import provenance, write_results
from tvm_ios.bench.table import BATCHES, MODELS
from tvm_ios.cli.main import main as tvm_ios


#: Engine of ``tvm-ios build`` -> directory suffix (variants tvm-default, ios-sequential,
#: ios-rprogram of the benchmark table).
ENGINES = {"default": "default", "stages": "ios", "rprogram": "rprogram"}


def build(model: str, batch: int, engine: str, out: Path, target: str) -> Path:
    """Build one artifact unless a valid one is there; returns its directory."""
    directory = out / f"{model}-b{batch}-{ENGINES[engine]}"
    try:
        Manifest.load(directory).check_files(directory)
        print(f"{directory}: kept")
        return directory
    except ManifestError:
        pass
    start = time.perf_counter()
    argv = ["build", "--model", model, "--batch", str(batch), "--target", target,
            "-o", str(directory), "--engine", engine]
    if engine != "default":
        argv += ["--device", "h100"]
    if tvm_ios(argv) != 0:
        raise RuntimeError(f"tvm-ios {' '.join(argv)} failed")
    print(f"{directory}: built in {time.perf_counter() - start:.0f} s")
    return directory


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default="gpu_bench")
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--batches", nargs="+", type=int, default=list(BATCHES))
    parser.add_argument("--target", default="nvidia/nvidia-h100")
    parser.add_argument("--engines", nargs="+", choices=list(ENGINES), default=list(ENGINES),
                        help="engines to build (default: all three columns)")
    pack_runtime.add_arguments(parser)
    args = parser.parse_args()
    started = provenance()
    logging.basicConfig(level=logging.WARNING)
    out = Path(args.output)
    packs = {}
    for model in args.models:
        artifacts = [build(model, batch, engine, out / "artifacts", args.target)
                     for batch in args.batches for engine in args.engines]
        (out / "packs").mkdir(parents=True, exist_ok=True)
        pack = out / "packs" / f"{model}.tar.gz"
        pack_runtime.make_pack(args, str(pack), artifacts)
        packs[str(pack)] = [str(a) for a in artifacts]
    write_results(out / "build.json", {"target": args.target, "packs": packs}, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
