"""``tvm-ios schedule``: schedule a model and print the stage table (and JSON)."""
from __future__ import annotations

import argparse

from .common import (Progress, add_ios_options, add_model_options, block_options,
                     load_ios_graph, make_cost_model, write_json)
from .tune import add_log_options, log_cost_model

__all__ = ["add_parser"]


def add_parser(subparsers) -> None:
    """Register ``schedule``."""
    parser = subparsers.add_parser("schedule", help="find a stage schedule for a model")
    parser.add_argument("--list", action=_ListModels,
                        help="print the models --model accepts (every command's) and exit")
    add_model_options(parser)
    add_ios_options(parser)
    parser.add_argument("--scheduler", choices=("ios", "sequential", "greedy"), default="ios")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the schedule JSON here")
    parser.add_argument("--plot", metavar="FILE", help="draw the schedule (PNG/SVG/PDF)")
    add_log_options(parser)  # --log FILE: price stages with logged measurements
    parser.set_defaults(handler=run)


class _ListModels(argparse.Action):
    """``--list``: print :func:`model_list` and exit 0 (before ``--model`` is required)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(model_list())
        parser.exit(0)


def model_list() -> str:
    """What ``--model`` accepts: the zoo's names (sizes in px) and the other forms."""
    from .. import models

    lines = ["zoo models (--model NAME; --image-size N and --batch B apply):"]
    lines += [f"  {name:14s} default {models.default_image_size(name)} px, smallest "
              f"{models.min_image_size(name)} px" for name in models.names()]
    lines += ["other forms:", "  FILE.onnx      an ONNX file (any path: a name with '/' or "
              "a suffix);", "                 its own input shapes, weights from its "
              "initializers"]
    return "\n".join(lines)


def run(args) -> int:
    """Schedule ``--model`` and print the table; ``--json``/``-o`` write the Schedule JSON."""
    from ..graph.extract import op_graph
    from ..schedule.baselines import greedy_schedule, sequential_schedule
    from ..schedule.ios import ios_schedule

    mod, name = load_ios_graph(args)
    graph = op_graph(mod)
    graph.name = name
    cost = log_cost_model(args, mod) or make_cost_model(args)
    if args.scheduler == "sequential":
        schedule = sequential_schedule(graph, cost)
    elif args.scheduler == "greedy":
        schedule = greedy_schedule(graph, cost)
    else:
        schedule = ios_schedule(graph, cost, max_group_size=args.max_group_size,
                                max_num_groups=args.max_num_groups, strategy=args.strategy,
                                progress=Progress(f"IOS {name}"), **block_options(args))
    print(schedule)
    seq = sequential_schedule(graph, cost)
    print(f"estimated latency: {schedule.latency_us:.1f} us vs sequential "
          f"{seq.latency_us:.1f} us ({seq.latency_us / max(schedule.latency_us, 1e-9):.2f}x)")
    write_json(args.json, schedule.to_dict())
    write_json(args.output, schedule.to_dict())
    if args.plot:
        from ..plot import plot_schedule

        print(f"plot: {plot_schedule(schedule, args.plot)}")
    return 0
