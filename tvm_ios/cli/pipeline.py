"""``tvm-ios pipeline``: schedule a CNN pipeline over execution places and report it.

Layer times are modelled (roofline per EP), measured (each layer built with TVM and timed on
each CPU EP, logged), or the search drives the real pipeline executor online.
"""
from __future__ import annotations

import sys

from .common import add_model_options, load_model, write_json

__all__ = ["add_parser"]

SEARCHES = ("shisha", "pipesearch", "sa", "hc", "rw", "es")


def add_parser(subparsers) -> None:
    """Register ``pipeline``."""
    parser = subparsers.add_parser(
        "pipeline", help="schedule a CNN pipeline over execution places (Shisha, Pipe-search)")
    add_model_options(parser)
    parser.add_argument("--eps", required=True, metavar="SPEC",
                        help="EP preset (c1..c5, cpu2), JSON file or kind:units:class:bw[,...]")
    parser.add_argument("--search", default="shisha",
                        help=f"one or more of {', '.join(SEARCHES)} (comma-separated) or all")
    parser.add_argument("--times", choices=("modelled", "measured", "online"),
                        default="modelled", help="layer-time source (default modelled)")
    parser.add_argument("--log", metavar="FILE", help="JSON-lines log of measured layer times")
    parser.add_argument("--stages", type=int, default=None, help="deepest pipeline")
    parser.add_argument("--alpha", type=int, default=10, help="Shisha/Pipe-search alpha")
    parser.add_argument("--heuristic", default="H3", help="Shisha heuristic H1..H4 or all")
    parser.add_argument("--frames", type=int, default=10, help="frames per measurement")
    parser.add_argument("--seed", type=int, default=0, help="seed of SA, HC, RW")
    parser.add_argument("--plot", metavar="FILE", help="write a convergence plot")
    parser.set_defaults(handler=run)


def _searches(text: str) -> list[str]:
    names = list(SEARCHES) if text == "all" else [s.strip() for s in text.split(",")]
    for name in names:
        if name not in SEARCHES:
            raise ValueError(f"unknown search {name!r}; one of {', '.join(SEARCHES)} or all")
    return names


def _options(args, name: str) -> dict:
    if name == "shisha":
        return {"alpha": args.alpha, "heuristic": args.heuristic}
    return {"alpha": args.alpha} if name == "pipesearch" else {}


def run(args) -> int:
    """Search, print one line per algorithm, write ``--json`` and ``--plot``."""
    from ..pipelining.eps import eps_to_json, parse_eps  # noqa: PLC0415
    from ..pipelining.layer_times import (layer_weights, measured_times,  # noqa: PLC0415
                                         modelled_times)
    from ..pipelining.run import check_stages, modelled_search, run_search  # noqa: PLC0415
    from ..pipelining.space import ConfigSpace  # noqa: PLC0415
    from ..pipelining.stages import PipelineMeasure, StagePlan  # noqa: PLC0415

    eps = parse_eps(args.eps)
    names = _searches(args.search)
    mod, params, model = load_model(args)
    plan = StagePlan.from_model(mod, params)
    depth = check_stages(args.stages, eps, plan.num_layers)
    if args.times == "online":                    # one measure: compiled stages are shared
        measure = PipelineMeasure(plan, eps, frames=args.frames)
        space = ConfigSpace(plan.num_layers, len(eps), depth)
    elif args.times == "measured":
        times = measured_times(plan.mod, None, eps, args.log)
    else:
        times = modelled_times(plan.graph, eps)
    results = []
    for name in names:
        if args.times == "online":
            result = run_search(name, space, measure, layer_weights(plan.graph), eps,
                                args.seed, **_options(args, name))
        else:
            result = modelled_search(name, times, eps, depth, args.frames, args.seed,
                                     **_options(args, name))
        results.append(result)
        print(result)
    data = {"model": model, "eps": eps_to_json(eps), "times": args.times,
            "layers": plan.num_layers, **results[0].to_dict(),
            "results": [r.to_dict() for r in results]}
    write_json(args.json, data, provenance=True)
    if args.plot:
        from ..pipelining.plot import plot_convergence  # noqa: PLC0415

        plot_convergence(results, args.plot, f"{model} on {args.eps}")
        print(f"plot: {args.plot}")
    errors = [r.extra["error"] for r in results if "error" in r.extra]
    for error in errors:
        print(f"tvm-ios pipeline: {error}", file=sys.stderr)
    return 1 if errors else 0
