"""``tvm-ios stats``: the IOS search space per block (n, width, transitions, schedules)."""
from __future__ import annotations

from .common import Progress, add_model_options, block_options, load_model, write_json

__all__ = ["add_parser"]


def add_parser(subparsers) -> None:
    """Register ``stats``."""
    parser = subparsers.add_parser(
        "stats", help="per block: n, width d, transitions #(S,S'), #schedules (Table 3.1)")
    add_model_options(parser)
    parser.add_argument("-r", "--max-group-size", type=int, default=None,
                        help="prune to r ops per group (default: unpruned, as Table 3.1)")
    parser.add_argument("-s", "--max-num-groups", type=int, default=None,
                        help="prune to s groups per stage (default: unpruned)")
    parser.add_argument("--max-block-bound", type=float, default=None,
                        help="cut blocks whose transition bound exceeds this (default 3e9)")
    parser.set_defaults(handler=run)


def run(args) -> int:
    """Print one row per block and the largest block; ``--json`` writes the rows."""
    from ..graph.extract import op_graph
    from ..schedule.stats import block_stats

    for value in (args.max_group_size, args.max_num_groups):
        if value is not None and value < 1:
            raise ValueError(f"r and s must be >= 1, got {value}")
    mod, _, name = load_model(args)
    graph = op_graph(mod)
    rows = block_stats(graph, args.max_group_size, args.max_num_groups,
                       progress=Progress(f"stats {name}", unit="transitions"),
                       **block_options(args))
    print(f"{name}: {len(graph)} ops in {len(rows)} blocks")
    print(f"{'block':>5} {'n':>4} {'d':>3} {'bound':>10} {'transitions':>12} {'schedules':>12}"
          f" {'seconds':>8}  first op")
    for row in rows:
        print(f"{row['block']:>5} {row['n']:>4} {row['width']:>3} {row['bound']:>10.2g} "
              f"{row['transitions']:>12} {float(row['schedules']):>12.3g} {row['seconds']:>8.2f}"
              f"  {row['ops'][0]}")
    largest = max(rows, key=lambda r: (r["transitions"], r["n"]))
    print(f"largest block: n={largest['n']} d={largest['width']} "
          f"transitions={largest['transitions']:.3g} schedules={float(largest['schedules']):.3g}")
    write_json(args.json, rows)
    return 0
