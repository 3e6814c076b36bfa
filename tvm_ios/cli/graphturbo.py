"""``tvm-ios graphturbo``: GraphTurbo's sub-graphs, instances, order and Table-3 figures.

    tvm-ios graphturbo --model resnet50 --hw dsa [--verify] [--json FILE] [--plot FILE]
    python -m tvm_ios.cli.graphturbo --model mobilenet_v2 --hw h100 --image-size 112
    tvm-ios graphturbo --model resnet50 --engine rprogram [--target T] [--verify]

``--engine instances`` (default) verifies the instances as the passes emit them, one at a
time; ``--engine rprogram`` runs them as rTasks of rPrograms
(:class:`~tvm_ios.passes.graphturbo_rprogram.GraphTurboRProgramPass`) for ``--target``
and prints the programs and the activation traffic through global memory of the original,
the instances one at a time and the rTasks.

Models come from the model zoo (``tvm_ios.models``) or an ONNX file through
:func:`tvm_ios.cli.common.load_model`.
"""
from __future__ import annotations

import argparse
import sys
import time

from . import common

__all__ = ["add_parser", "run", "main"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register the ``graphturbo`` subcommand."""
    parser = subparsers.add_parser("graphturbo", help=__doc__.splitlines()[0])
    _arguments(parser)
    parser.set_defaults(handler=run)
    return parser


def _arguments(parser) -> None:
    common.add_model_options(parser)
    parser.add_argument("--hw", default=None,
                        help="hardware preset: dsa, h100, a100, cpu, h100-block, a100-block "
                             "(default: dsa; with --engine rprogram the target's vEU preset)")
    parser.add_argument("--engine", default="instances", choices=["instances", "rprogram"],
                        help="run the instances one at a time, or as rTasks of rPrograms")
    parser.add_argument("--target", default="llvm",
                        help="with --engine rprogram: llvm or a CUDA target such as "
                             "nvidia/nvidia-h100 (built, not run)")
    parser.add_argument("--order", default="auto", choices=["auto", "bfs", "dfs"])
    parser.add_argument("--oversize", default="error", choices=["error", "fallback"],
                        help="a layer too large for LB: error, or keep it per layer in DRAM")
    parser.add_argument("--verify", action="store_true",
                        help="build original and rewritten module on llvm and compare")
    parser.add_argument("--plot", metavar="FILE", help="write a PNG of LB use per step")
    parser.add_argument("--verbose-sgs", action="store_true", help="list every sub-graph")


def run(args) -> int:
    """Plan (and optionally verify) one model; prints the report."""
    from tvm_ios.graphturbo.layers import layer_graph  # noqa: PLC0415
    from tvm_ios.graphturbo.plan import plan_graph  # noqa: PLC0415
    from tvm_ios.graphturbo.report import plot_lb, summary, table3  # noqa: PLC0415
    from tvm_ios.passes.graphturbo_rprogram import default_hw  # noqa: PLC0415

    if args.hw is None:
        args.hw = default_hw(args.target) if args.engine == "rprogram" else "dsa"
    mod, params, name = common.load_model(args)
    start = time.time()
    plan = plan_graph(layer_graph(mod["main"], name=name), args.hw, order=args.order,
                      oversize=args.oversize)
    plan_s = time.time() - start
    text = summary(plan, max_order=10_000 if args.verbose_sgs else 40)
    if not args.verbose_sgs:
        lines = text.splitlines()
        text = "\n".join(lines[:26] + (["  ..."] if len(plan.sgs) > 25 else []) + [
            line for line in lines[26:] if not line.startswith("  sg")])
    print(text)
    print(table3(plan, name))
    print(f"planning took {plan_s:.2f} s")
    result = {"model": name, "hw": args.hw, "batch": args.batch,
              "image_size": args.image_size or 224, "plan": plan.to_dict()}
    rewritten = _rprogram(mod, args, result) if args.engine == "rprogram" else None
    if args.verify:
        _verify(mod, params, args, rewritten, result)
    if args.plot:
        print(f"LB plot: {plot_lb(plan, args.plot)}")
    if args.json:
        common.write_json(args.json, result)
        print(f"figures written to {args.json}")
    return 0


def _rprogram(mod, args, result):
    """The instances as rTasks for ``--target``; prints programs and traffic."""
    from tvm_ios.passes.graphturbo_attr import load  # noqa: PLC0415
    from tvm_ios.passes.graphturbo_rprogram import GraphTurboRProgramPass  # noqa: PLC0415

    rewrite = GraphTurboRProgramPass(args.hw, target=args.target, order=args.order,
                                     oversize=args.oversize)
    start = time.time()
    rewritten = rewrite(mod)
    record = load(rewritten, "main")["rprogram"]
    print(f"rPrograms ({args.target}, {time.time() - start:.1f} s):")
    for p in record["programs"]:
        gb = sum(s == "GB" for s in p["scopes"].values())
        print(f"  {p['name']}: {len(p['instances'])} instances on {p['veus']} vEUs, "
              f"{p['rtasks']} rTasks, {p['barriers']} barriers, {p['kept_ops']} of "
              f"{p['ops']} op outputs kept on their vEU, {gb} instance outputs to global")
    print("activation traffic through global memory (counted on the code):")
    labels = {"original": "original, op by op", "instances": "instances one at a time",
              "rtasks": "instances as rTasks"}
    for key, label in labels.items():
        t = record["traffic"][key]
        kept = f"  ({t['kept_bytes'] / 1e6:.2f} MB kept on vEUs)" if t["kept_bytes"] else ""
        print(f"  {label:26s}{t['bytes'] / 1e6:10.2f} MB{kept}")
    result["rprogram"] = record
    return rewritten


def _verify(mod, params, args, rewritten, result) -> None:
    """Build the original and the rewritten module on llvm and compare their outputs."""
    import tvm  # noqa: PLC0415

    from tvm_ios.runtime.compare import compare_modules  # noqa: PLC0415

    if rewritten is None:
        from tvm_ios.passes.group_subgraphs import GroupSubgraphs  # noqa: PLC0415
        from tvm_ios.passes.order_instances import OrderInstances  # noqa: PLC0415
        from tvm_ios.passes.split_instances import SplitInstances  # noqa: PLC0415

        rewritten = tvm.transform.Sequential([GroupSubgraphs(args.hw), SplitInstances(
            order=args.order, oversize=args.oversize), OrderInstances()])(mod)
    elif args.target != "llvm":
        raise SystemExit("tvm-ios graphturbo: --verify runs on llvm; this machine cannot run "
                         f"{args.target}")
    cmp = compare_modules(mod, rewritten, params, "llvm")
    print(f"verify (llvm, {args.engine}): max abs diff {cmp.max_abs_diff:.3g} "
          f"(max |output| {cmp.max_abs_value:.3g})")
    result["verify"] = cmp.to_dict()


def main(argv=None) -> int:
    """Entry point for ``python -m tvm_ios.cli.graphturbo``."""
    parser = argparse.ArgumentParser(prog="tvm-ios graphturbo", description=__doc__)
    _arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
