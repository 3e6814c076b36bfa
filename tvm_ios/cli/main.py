"""The ``tvm-ios`` command line: one subcommand per module of this package.

Each module named in :data:`COMMANDS` has ``add_parser(subparsers)``, which registers its
subcommand and sets ``handler`` (a function of the parsed arguments returning an exit code).
"""
from __future__ import annotations

import argparse
import importlib
import logging
import sys

__all__ = ["main", "COMMANDS", "EXTRAS"]

#: Subcommand modules under ``tvm_ios.cli``, in the order ``--help`` lists them.
COMMANDS = ("schedule", "run", "compile", "stats", "tune", "tune_kernels", "codegen", "pipeline",
            "graphturbo", "build",
            "bench_run", "bench_table", "gpu_pack")

#: Optional modules -> the extra of setup.py that installs them (named when one is missing).
EXTRAS = {"cloudpickle": "tune", "psutil": "tune", "tornado": "tune", "xgboost": "tune",
          "matplotlib": "plot", "onnx": "onnx", "torch": "torch"}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="tvm-ios", description="Inter-operator scheduling for Apache TVM (Relax).")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="log more (-v info, -vv debug)")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(f"{__package__}.{name}").add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code (2 for bad input)."""
    args = build_parser().parse_args(argv)
    level = [logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)]
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args.handler(args) or 0)
    except (ValueError, FileNotFoundError, KeyError) as err:
        print(f"tvm-ios {args.command}: error: {err}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as err:
        extra = EXTRAS.get((err.name or "").split(".")[0])
        if extra is None:
            raise
        print(f"tvm-ios {args.command}: error: the Python module {err.name} is missing; "
              f"install it with: pip install 'tvm-ios[{extra}]'", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
