"""The ``tvm-ios`` command line: one subcommand per module of this package.

Each module named in :data:`COMMANDS` has ``add_parser(subparsers)``, which registers its
subcommand and sets ``handler`` (a function of the parsed arguments returning an exit code).
"""
from __future__ import annotations

import argparse
import errno
import importlib
import logging
import sys
import traceback

from .errors import BadInput, OutputsDiffer

__all__ = ["main", "COMMANDS", "EXTRAS"]

#: Subcommand modules under ``tvm_ios.cli``, in the order ``--help`` lists them.
COMMANDS = ("schedule", "run", "compile", "stats", "tune", "tune_kernels", "codegen", "pipeline",
            "graphturbo", "build", "fuzz",
            "bench_run", "bench_table", "gpu_pack")

#: Optional modules -> the extra of setup.py that installs them (named when one is missing).
EXTRAS = {"cloudpickle": "tune", "psutil": "tune", "tornado": "tune", "xgboost": "tune",
          "matplotlib": "plot", "onnx": "onnx", "torch": "torch"}

#: Write errors that are the machine's, not ours: exit 2, one line naming the file.
FULL = {errno.ENOSPC: "the disk is full", errno.EFBIG: "the file is too large for this "
        "machine's file-size limit", errno.EDQUOT: "the disk quota is exceeded"}

#: Optional modules no extra installs -> the command that does.
INSTALLS = {"torchvision": "pip install --no-deps torchvision==0.28.0"}


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


def _one_line(err: BaseException) -> str:
    """The first non-empty line of ``err``'s message (its type when it has none)."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return lines[0] if lines else type(err).__name__


def _fail(args, kind: str, err: BaseException, code: int, line: str | None = None) -> int:
    """Print ``tvm-ios CMD: KIND: <one line>`` (``line``, default ``err``'s first; with
    ``-v`` the traceback before it); returns ``code``."""
    if args.verbose:
        traceback.print_exception(err, file=sys.stderr)
    print(f"tvm-ios {args.command}: {kind}: {line or _one_line(err)}", file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code (:mod:`tvm_ios.cli.errors`: 1 outputs
    differ, 2 bad input, 3 internal error)."""
    args = build_parser().parse_args(argv)
    level = [logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)]
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args.handler(args) or 0)
    except OutputsDiffer as err:
        return _fail(args, "outputs differ", err, 1)
    except (BadInput, ValueError, FileNotFoundError, KeyError) as err:
        return _fail(args, "error", err, 2)
    except ModuleNotFoundError as err:
        top = (err.name or "").split(".")[0]
        extra = EXTRAS.get(top)
        if extra is None and top not in INSTALLS:
            return _fail(args, "internal error", err, 3, f"ModuleNotFoundError: {err}")
        how = INSTALLS.get(top) or f"pip install 'tvm-ios[{extra}]'"
        print(f"tvm-ios {args.command}: error: the Python module {err.name} is missing; "
              f"install it with: {how}", file=sys.stderr)
        return 2
    except OSError as err:
        if err.errno not in FULL:
            return _internal(args, err)
        return _fail(args, "error", err, 2, f"cannot write {err.filename or 'a file'}: "
                     f"{FULL[err.errno]} ({err.strerror})")
    except Exception as err:  # noqa: BLE001  (anything else is ours: one line, -v for more)
        return _internal(args, err)


def _internal(args, err: BaseException) -> int:
    """An internal error: one line (``-v`` the traceback), exit 3."""
    hint = "" if args.verbose else " (-v prints the traceback)"
    return _fail(args, "internal error", err, 3, f"{type(err).__name__}: {_one_line(err)}{hint}")


if __name__ == "__main__":
    sys.exit(main())
