"""``python -m tvm_ios.cli.bench_all ART... --results FILE``: every artifact in its own process.

The GPU pack's runner (``pack/run.sh``): checks every artifact against its CPU reference,
then times those that matched, fastest first, each step in a fresh process under
``--timeout-s``, appending one JSON line per step to ``--results`` as it finishes
(:mod:`tvm_ios.bench.isolated`). Imports only the standard library here; TVM's runtime is
imported by the children. Exit status: 0 every artifact matched and was timed, 2 some
output differs from its reference, 3 some artifact failed otherwise (refused, error,
crashed, timeout); the results file holds the rest either way.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

__all__ = ["exit_status", "main"]

HELP = "check then time every artifact, one process each, results appended as JSON lines"


def exit_status(records: list[dict]) -> int:
    """0 all ok, 2 a reference mismatch, 3 another failure (the larger wins)."""
    status = 0
    for record in records:
        if record["status"] == "mismatch":
            status = max(status, 2)
        elif record["status"] != "ok":
            status = 3
    return status


def _commit(artifacts: list[str]) -> str | None:
    """The commit the pack was built at (``pack.json`` beside ``artifacts/``), if any."""
    for artifact in artifacts[:1]:
        info = Path(artifact).resolve().parent.parent / "pack.json"
        if info.is_file():
            return json.loads(info.read_text()).get("commit")
    return None


def main(argv=None) -> int:
    """Parse the options, run :func:`~tvm_ios.bench.isolated.run_all`, return the status."""
    parser = argparse.ArgumentParser(prog="python -m tvm_ios.cli.bench_all", description=HELP)
    parser.add_argument("artifact", nargs="+")
    parser.add_argument("--results", required=True, help="JSON-lines file (appended to)")
    parser.add_argument("--timeout-s", type=float, default=120.0,
                        help="wall-clock limit of each step's process (default 120)")
    parser.add_argument("--device-id", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--number", type=int, default=1)
    parser.add_argument("--min-repeat-ms", type=int, default=10)
    parser.add_argument("--rotate", type=int, default=4)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    from ..bench.isolated import run_all

    settings = {k: getattr(args, k) for k in ("device_id", "warmup", "repeat", "number",
                                             "min_repeat_ms", "rotate")}
    records = run_all(sorted(args.artifact), args.results, timeout_s=args.timeout_s,
                      settings=settings, commit=_commit(args.artifact))
    return exit_status(records)


if __name__ == "__main__":
    sys.exit(main())
