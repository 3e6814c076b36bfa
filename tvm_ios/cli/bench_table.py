"""Command line of the results page: ``python -m tvm_ios.cli.bench_table RESULTS.json... -o PAGE``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..bench.table import bar_chart, collect, render

__all__ = ["main"]


def main(argv=None) -> int:
    """Command line: render the page from result files (missing files are an error)."""
    parser = argparse.ArgumentParser(prog="python -m tvm_ios.cli.bench_table")
    parser.add_argument("results", nargs="*", help="JSON result lists (bench-run, torch)")
    parser.add_argument("-o", "--output", default="docs/benchmarks.md")
    args = parser.parse_args(argv)
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
