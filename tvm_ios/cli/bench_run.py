"""``tvm-ios bench-run DIR``: check a benchmark artifact against its reference and time it.

Also reached as ``python -m tvm_ios.cli.bench_run DIR`` on GPU hosts that have only TVM's
runtime; so this module imports nothing of tvm-ios but :mod:`tvm_ios.bench.run`.
Exit status: 0 measured, 1 refused (bad artifact, other TVM version or GPU architecture,
no CUDA runtime), 2 output differs from the reference (no latency printed).
"""
from __future__ import annotations

import argparse
import json
import sys

__all__ = ["add_parser", "add_arguments", "handle", "main"]

HELP = "check a benchmark artifact against its CPU reference, then time it"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``bench-run``."""
    parser.add_argument("artifact", nargs="+", help="artifact directories (tvm-ios build -o)")
    parser.add_argument("--device-id", type=int, default=0, help="GPU index (default 0)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed runs first")
    parser.add_argument("--repeat", type=int, default=50, help="timed repeats; median kept")
    parser.add_argument("--number", type=int, default=1, help="runs averaged per repeat")
    parser.add_argument("--min-repeat-ms", type=int, default=10,
                        help="raise --number until one repeat lasts this long")
    parser.add_argument("--rotate", type=int, default=4,
                        help="distinct input tensors cycled over the repeats")
    parser.add_argument("--json", metavar="FILE", help="write the results (a list) here")


def handle(args: argparse.Namespace) -> int:
    """Run every artifact; print one line each; return the exit status."""
    from ..bench import run
    from ..bench.manifest import ArtifactMismatch, ManifestError
    from ..bench.tensors import RecipeError

    results, status = [], 0
    for directory in args.artifact:
        try:
            result = run.bench_artifact(directory, args.device_id, args.warmup, args.repeat,
                                        args.number, args.min_repeat_ms, args.rotate)
        except (ManifestError, ArtifactMismatch, run.CudaRuntimeMissing, RecipeError) as err:
            print(f"{directory}: refused: {err}", file=sys.stderr)
            results.append({"artifact": str(directory), "status": "refused",
                            "error": str(err)})
            status = max(status, 1)
            continue
        print(result)
        results.append(dict(result.to_dict(), artifact=str(directory)))
        if result.status != "ok":
            status = max(status, 2)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle_:
            json.dump(results, handle_, indent=1)
    return status


def add_parser(subparsers) -> None:
    """Register ``bench-run`` on the ``tvm-ios`` command line."""
    parser = subparsers.add_parser("bench-run", help=HELP, description=HELP)
    add_arguments(parser)
    parser.set_defaults(handler=handle)


def main(argv=None) -> int:
    """Stand-alone entry (``python -m tvm_ios.cli.bench_run``)."""
    parser = argparse.ArgumentParser(prog="python -m tvm_ios.cli.bench_run", description=HELP)
    add_arguments(parser)
    return handle(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
