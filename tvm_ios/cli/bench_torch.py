"""Command line of the PyTorch baselines: ``python -m tvm_ios.cli.bench_torch DIR...``.

Runs on the GPU host from the pack (no TVM compiler, no other CLI module needed).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..bench.manifest import Manifest
from ..bench.torch_baselines import MODES, bench_torch

__all__ = ["main"]


def main(argv=None) -> int:
    """Command line (prints one line per artifact and mode); exit 2 on any mismatch."""
    parser = argparse.ArgumentParser(prog="python -m tvm_ios.cli.bench_torch",
                                     description="PyTorch baselines of benchmark artifacts")
    parser.add_argument("artifact", nargs="+")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES[:3]))
    parser.add_argument("--device", default=None, help="cuda or cpu (default: cuda if any)")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--number", type=int, default=1)
    parser.add_argument("--rotate", type=int, default=4)
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    rows, status, seen = [], 0, set()
    for directory in args.artifact:
        manifest = Manifest.load(directory)
        if (manifest.model, manifest.batch) in seen:  # one run per model and batch
            continue
        seen.add((manifest.model, manifest.batch))
        for result in bench_torch(directory, args.modes, args.device, args.warmup,
                                  args.repeat, args.number, args.rotate):
            print(result if result.status in ("ok", "mismatch")
                  else f"{result.model} batch {result.batch} {result.variant}: {result.status}")
            rows.append(dict(result.to_dict(), artifact=str(directory)))
            status = max(status, 2 if result.status == "mismatch" else 0)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return status


if __name__ == "__main__":
    sys.exit(main())
