"""``tvm-ios codegen``: each rProgram's persistent kernel, and its run under a GPU simulator.

    tvm-ios codegen --model inception_v3 --target nvidia/nvidia-h100 -o out/ [--policy ios]
    tvm-ios codegen --model squeezenet --image-size 64 --target nvidia/nvidia-h100 \\
        --simulate --json sim.json

For every rProgram (a multi-group IOS stage, or a wavefront program) ``-o DIR`` gets
``<name>.cu`` (``.cl`` for an OpenCL target: the persistent kernel through TVM's codegen),
``<name>.rprogram.json`` (the plan) and one ``summary.json`` listing vEUs, threads, rTasks,
barriers and shared memory of each. With ``-o`` each finished simulation is also kept in
``DIR/simulated.jsonl``: the same command run again resumes, reusing the rows of programs
whose kernels are unchanged. ``--simulate`` runs every program's OpenCL rendering
(the same TIR, :mod:`tvm_ios.kernels.gpu.sync`) under Oclgrind on random inputs and compares it
with TVM's llvm build: largest difference, steps left zero, races inside a work-group,
out-of-bounds accesses, barrier divergence. rTask times are estimates: nothing is measured
on a GPU.
"""
from __future__ import annotations

import json
from pathlib import Path

from .common import add_ios_options, add_model_options, load_model, make_cost_model, write_json

__all__ = ["add_parser", "write_codegen", "TOLERANCE"]

#: Largest difference from the llvm build a simulated program may show (float32 sums).
TOLERANCE = 1e-3


def add_parser(subparsers) -> None:
    """Register ``codegen``."""
    parser = subparsers.add_parser(
        "codegen", help="write each rProgram's persistent kernel; --simulate runs them")
    add_model_options(parser)
    add_ios_options(parser)
    parser.add_argument("--target", default="nvidia/nvidia-h100",
                        help="GPU target tag or JSON dict: CUDA (sm_80/86/89/90) or OpenCL "
                             "(default nvidia/nvidia-h100)")
    parser.add_argument("--policy", choices=("ios", "wavefront"), default="ios",
                        help="rProgram policy (default ios)")
    parser.add_argument("-o", "--output", default=None, help="output directory (optional)")
    parser.add_argument("--simulate", action="store_true",
                        help="run every program under the Oclgrind OpenCL simulator and "
                             "compare it with the llvm build")
    parser.add_argument("--sim-threads", type=int, default=None,
                        help="Oclgrind threads (default: one per vEU)")
    parser.add_argument("--no-data-races", action="store_true",
                        help="skip Oclgrind's data-race detection (faster)")
    parser.add_argument("--sim-timeout", type=float, default=3600.0,
                        help="wall seconds one program may simulate (default 3600; large "
                             "programs need hours on two cores)")
    parser.set_defaults(handler=codegen)


def write_codegen(mod, params, name: str, target, policy: str, out_dir=None, cost_model=None,
                  simulate: bool = False, sim_options: dict | None = None,
                  progress=None, **ios_options) -> dict:
    """Generate (and optionally simulate) the rProgram kernels of ``mod``; the summary."""
    from .. import _tvm
    from ..graph.extract import extract
    from ..kernels.gpu.programs import build_program, plan_programs
    from ..kernels.gpu.build import build_kernels
    from ..schedule.ios import ios_schedule

    if isinstance(target, str) and target.lstrip().startswith("{"):
        target = json.loads(target)
    target = _tvm.make_target(target)
    mod = _tvm.bind_params(mod, params or {})
    schedule = None
    if policy == "ios":
        options = dict(ios_options, strategy="parallel")  # merges are not rPrograms
        schedule = ios_schedule(extract(mod["main"]).graph, cost_model, **options)
    regions, gpu, vdevice = plan_programs(mod, target, policy, schedule)
    rows = []
    out = Path(out_dir) if out_dir else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    for ops, program in regions:
        kernel = build_program(program, ops, gpu, vdevice, target)
        rows.append(kernel.summary(target))
        if out:
            source = build_kernels(kernel, target, arg_checks=False).source  # device code only
            ext = ".cu" if target.kind.name == "cuda" else ".cl"
            (out / f"{program.name}{ext}").write_text(source)
            (out / f"{program.name}.rprogram.json").write_text(program.to_json(indent=1))
    summary = {"model": name, "target": str(target), "policy": policy,
               "gpu_latency": "not measured", "rprograms": rows}
    if simulate:
        from ..kernels.simulation.check import simulate_regions

        journal = out / "simulated.jsonl" if out else None  # a rerun resumes from it
        sim = simulate_regions(regions, gpu, vdevice, progress=progress, journal=journal,
                               **(sim_options or {}))
        summary.update({k: v for k, v in sim.items() if k != "results"},
                       simulator="oclgrind (OpenCL rendering of the same TIR)",
                       simulation=sim["results"])
    if out:
        write_json(str(out / "summary.json"), summary)
    return summary


def _print_row(row) -> None:
    errors = {k: v for k, v in row["errors"].items() if v and k != "inter_group_races"}
    across = row["errors"].get("inter_group_races")
    across = ("races across work-groups not recorded" if across is None else
              f"{across} races across work-groups, not counted")
    print(f"  simulated {row['name']}: max|diff| {row['max_abs_diff']:.2e}, steps zero "
          f"{row['steps_zero']}, errors {errors or 'none'} ({across}), {row['seconds']} s",
          flush=True)


def codegen(args) -> int:
    """Print one line per rProgram (and per simulation); ``--json`` the summary too."""
    mod, params, name = load_model(args)
    sim_options = {"num_threads": args.sim_threads, "data_races": not args.no_data_races,
                   "timeout": args.sim_timeout}
    summary = write_codegen(mod, params, name, args.target, args.policy, args.output,
                            make_cost_model(args), simulate=args.simulate,
                            sim_options=sim_options, progress=_print_row,
                            max_group_size=args.max_group_size,
                            max_num_groups=args.max_num_groups)
    where = f" in {args.output}" if args.output else ""
    print(f"{name}: {len(summary['rprograms'])} rPrograms for {summary['target']} "
          f"({args.policy} policy){where}")
    for row in summary["rprograms"]:
        print(f"  {row['name']}: {row['veus']} vEUs x {row['threads_per_veu']} threads, "
              f"{row['rtasks']} rTasks, {row['barriers']} barriers, "
              f"{row['dynamic_shared_bytes']} B shared, ops {len(row['ops'])}")
    if args.simulate:
        print(f"simulated {summary['simulated']} of {summary['programs']} programs under "
              f"Oclgrind: max|diff| vs llvm {summary['max_abs_diff']}, steps zero "
              f"{summary['steps_zero']}, failures {sorted(summary['failures']) or 'none'}")
    write_json(args.json, summary)
    failed = args.simulate and (summary["failures"] or not summary["steps_zero"] or any(
        v for errs in summary["errors"].values() for k, v in errs.items()
        if k != "inter_group_races") or (summary["max_abs_diff"] or 0.0) >= TOLERANCE)
    return 1 if failed else 0
