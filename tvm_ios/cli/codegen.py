"""``tvm-ios codegen``: write each rProgram's CUDA source and a summary, without a GPU.

    tvm-ios codegen --model inception_v3 --target nvidia/nvidia-h100 -o out/ [--policy ios]

For every rProgram (a multi-group IOS stage, or a wavefront program) the directory gets
``<name>.cu`` (the persistent kernel, through TVM's CUDA codegen), ``<name>.rprogram.json``
(the plan) and one ``summary.json`` listing vEUs, threads, rTasks, barriers and dynamic
shared memory of each. rTask times are analytical estimates: nothing is measured.
"""
from __future__ import annotations

import json
from pathlib import Path

from .common import add_ios_options, add_model_options, load_model, make_cost_model, write_json

__all__ = ["add_parser", "write_codegen"]


def add_parser(subparsers) -> None:
    """Register ``codegen``."""
    parser = subparsers.add_parser(
        "codegen", help="write the CUDA source of each rProgram kernel and a summary")
    add_model_options(parser)
    add_ios_options(parser)
    parser.add_argument("--target", default="nvidia/nvidia-h100",
                        help="CUDA target tag or JSON dict (default nvidia/nvidia-h100)")
    parser.add_argument("--policy", choices=("ios", "wavefront"), default="ios",
                        help="rProgram policy (default ios)")
    parser.add_argument("-o", "--output", required=True, help="output directory")
    parser.set_defaults(handler=codegen)


def write_codegen(mod, params, name: str, target, policy: str, out_dir, cost_model=None,
                  **ios_options) -> dict:
    """Generate the rProgram kernels of ``mod`` into ``out_dir``; returns the summary."""
    from .. import _tvm  # noqa: PLC0415  (keeps `tvm-ios --help` fast)
    from ..graph.extract import extract  # noqa: PLC0415
    from ..kernels.cuda_programs import cuda_rprograms  # noqa: PLC0415
    from ..schedule.ios import ios_schedule  # noqa: PLC0415

    if isinstance(target, str) and target.lstrip().startswith("{"):
        target = json.loads(target)
    mod = _tvm.bind_params(mod, params or {})
    schedule = None
    if policy == "ios":
        options = dict(ios_options, strategy="parallel")  # merges are not rPrograms
        schedule = ios_schedule(extract(mod["main"]).graph, cost_model, **options)
    generated = cuda_rprograms(mod, target, policy, schedule=schedule)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for gen in generated:
        (out / f"{gen.program.name}.cu").write_text(gen.source)
        (out / f"{gen.program.name}.rprogram.json").write_text(gen.program.to_json(indent=1))
    summary = {"model": name, "target": str(_tvm.make_target(target)), "policy": policy,
               "gpu_latency": "not measured", "rprograms": [g.summary for g in generated]}
    write_json(str(out / "summary.json"), summary)
    return summary


def codegen(args) -> int:
    """Print one line per rProgram; ``--json`` the summary too."""
    mod, params, name = load_model(args)
    summary = write_codegen(mod, params, name, args.target, args.policy, args.output,
                            make_cost_model(args), max_group_size=args.max_group_size,
                            max_num_groups=args.max_num_groups)
    print(f"{name}: {len(summary['rprograms'])} rPrograms for {summary['target']} "
          f"({args.policy} policy) in {args.output}")
    for row in summary["rprograms"]:
        print(f"  {row['name']}: {row['veus']} vEUs x {row['threads_per_veu']} threads, "
              f"{row['rtasks']} rTasks, {row['barriers']} barriers, "
              f"{row['dynamic_shared_bytes']} B dynamic shared, ops {len(row['ops'])}")
    write_json(args.json, summary)
    return 0
