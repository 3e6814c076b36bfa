"""Prune committed kernel databases to each workload's few best records, and check them.

    python scripts/prune_kernels.py --keep 3 --check            # every database under
    python scripts/prune_kernels.py --keep 3 benchmarks/kernels/llvm-znver3-2c/squeezenet-64

Each database keeps what its builds take (each workload's best record, unchanged: checked
before anything is written) plus ``keep - 1`` runners-up, its fingerprint (so the stages
logged with its kernels still count) and its stage log; it is re-packed as ``.xz``.
``--check`` then loads every variant as a build does (meta_schedule's ``JSONDatabase``
replays each record's trace on its workload) and exits 1 if one fails. Prints one JSON line a
database: records and workloads before and after, packed bytes.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from tvm_ios.tuning.prune import prune
from tvm_ios.tuning.kernel_db import VARIANTS, KernelDB

ROOT = Path(__file__).resolve().parents[1] / "benchmarks" / "kernels"


def _databases(paths: list[str]) -> list[Path]:
    if paths:
        return [Path(p) for p in paths]
    return sorted(p.parent for p in ROOT.glob("*/*/target.json"))


def _loads(path: Path) -> list[str]:
    """The variants of the database at ``path`` that fail to load as a build loads them."""
    kernels, failed = KernelDB(path), []
    for variant in VARIANTS:
        if kernels.has(variant):
            try:
                kernels.database(variant)
            except Exception as err:  # noqa: BLE001 (TVM raises its own error types)
                failed.append(f"{variant}: {str(err).splitlines()[0][:160]}")
    kernels.close()
    return failed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", help="database directories (default: all committed)")
    parser.add_argument("--keep", type=int, default=3, help="records kept per workload")
    parser.add_argument("--check", action="store_true", help="load each variant afterwards")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    bad = 0
    for path in _databases(args.paths):
        report = prune(KernelDB(path), keep=args.keep)
        packed = sum(p.stat().st_size for p in path.glob("**/*.xz"))
        row = {"db": str(path), "packed_bytes": packed, **report}
        if args.check:
            row["load_failures"] = _loads(path)
            bad += bool(row["load_failures"])
        print(json.dumps(row), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
