"""Command line of the results page: ``python -m tvm_ios.cli.bench_table RESULTS.json... -o PAGE``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..bench.table import bar_chart, collect, render

__all__ = ["add_parser", "handle", "main"]


HELP = "render the GPU benchmark table from result files (JSON lists, results.jsonl)"


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", nargs="*", help="JSON result lists (bench-run, torch) or "
                        "the GPU pack's results.jsonl")
    parser.add_argument("-o", "--output", default="docs/benchmarks.md")


def add_parser(subparsers) -> None:
    """Register ``bench-table`` on the ``tvm-ios`` command line."""
    parser = subparsers.add_parser("bench-table", help=HELP, description=HELP)
    _arguments(parser)
    parser.set_defaults(handler=handle)


def main(argv=None) -> int:
    """Command line: render the page from result files (missing files are an error)."""
    parser = argparse.ArgumentParser(prog="python -m tvm_ios.cli.bench_table")
    _arguments(parser)
    return handle(parser.parse_args(argv))


def handle(args: argparse.Namespace) -> int:
    """Render ``args.output`` (and its chart) from ``args.results``."""
    rows = []
    for path in args.results:
        text = Path(path).read_text()
        if path.endswith(".jsonl"):  # the GPU pack's results: one JSON object a line
            rows.extend(json.loads(line) for line in text.splitlines() if line.strip())
        else:
            rows.extend(json.loads(text))
    figures, meta = collect(rows)
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    chart = bar_chart(figures, out.with_suffix(".png"))
    out.write_text(render(figures, meta, chart=chart.name if chart else None))
    print(f"wrote {out}" + (f" and {chart}" if chart else " (nothing measured: no chart)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
