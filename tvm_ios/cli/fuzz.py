"""``tvm-ios fuzz``: random CNNs through the tvm-ios pipelines against TVM's default build.

Each seed's CNN (:func:`tvm_ios.testing.random_cnn`) is built with every ``--pipelines``
entry and compared with TVM's ``default`` build; a mismatch or crash is shrunk to the
fewest ops that still fail and written as a reproducer under ``--out``. Exits 1 when any
pair failed, printing one line per failure with its reproducer.
"""
from __future__ import annotations

import sys

from .common import write_json

__all__ = ["add_parser"]

DEFAULT_PIPELINES = "ios,ios-stages,ios-rprogram,ios-wavefront,ios-graphturbo"


def add_parser(subparsers) -> None:
    """Register ``fuzz``."""
    parser = subparsers.add_parser(
        "fuzz", help="differential fuzzing: random CNNs through each pipeline vs TVM's default")
    parser.add_argument("--seeds", type=int, default=20, help="number of seeds (default 20)")
    parser.add_argument("--start", type=int, default=0, help="first seed (default 0)")
    parser.add_argument("--pipelines", default=DEFAULT_PIPELINES,
                        help=f"comma-separated pipeline names (default {DEFAULT_PIPELINES}); "
                             "NAME:key=value,... passes options, e.g. ios-stages:device=v100")
    parser.add_argument("--tolerance", type=float, default=None,
                        help="largest max|diff|/max|out| counted equal (default 1e-4)")
    parser.add_argument("--simulate", action="store_true",
                        help="also run the rPrograms' OpenCL rendering under Oclgrind")
    parser.add_argument("--out", default="fuzz-findings",
                        help="directory of the reproducers (default fuzz-findings)")
    parser.add_argument("--json", default=None, help="write the campaign's records here")
    parser.set_defaults(handler=fuzz)


def _simulations(args, pipelines, tolerance) -> list:
    from ..testing.fuzz.simulate import POLICY, oclgrind_available, simulate_spec
    from ..testing.random_cnn import random_spec

    if not oclgrind_available():
        print("fuzz --simulate: oclgrind is not installed (apt-get install oclgrind "
              "ocl-icd-libopencl1); simulation skipped")
        return []
    wanted = [p for p in pipelines if p in POLICY]
    return [simulate_spec(random_spec(seed), p, tolerance=max(tolerance, 1e-3))
            for seed in range(args.start, args.start + args.seeds) for p in wanted]


def _pipelines(text: str) -> list[str]:
    """Split ``a,b:k=v,k2=v2,c`` into pipelines (a ``k=v`` item belongs to the one before)."""
    out: list[str] = []
    for item in (t.strip() for t in text.split(",")):
        if "=" in item and ":" not in item and out:
            out[-1] += "," + item
        elif item:
            out.append(item)
    return out


def fuzz(args) -> int:
    """Run the campaign; one line per failure; exit 1 when any."""
    from ..testing.fuzz import TOLERANCE, run_campaign

    if args.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {args.seeds}")
    pipelines = _pipelines(args.pipelines)
    tolerance = TOLERANCE if args.tolerance is None else args.tolerance
    result = run_campaign(range(args.start, args.start + args.seeds), pipelines, args.out,
                          tolerance=tolerance)
    if args.simulate:
        sims = _simulations(args, pipelines, tolerance)
        result["records"] += sims
        result["failures"] += [r for r in sims if r["status"] != "ok"]
        result["simulated"] = len(sims)
        print(f"oclgrind: {len(sims)} rProgram simulations, "
              f"{sum(r['status'] != 'ok' for r in sims)} failures")
    for pipeline, row in result["summary"].items():
        print(f"{pipeline}: {row['tried']} CNNs, {row['ok']} ok, {row['mismatch']} mismatches, "
              f"{row['crash']} crashes")
    for rec in result["failures"]:
        where = f" -> {rec['reproducer']}" if rec.get("reproducer") else ""
        shrunk = f" (shrunk to {rec['shrunk_ops']} ops)" if "shrunk_ops" in rec else ""
        print(f"FAIL seed {rec['seed']} {rec['pipeline']}: {rec['status']}: {rec['error']}"
              f"{shrunk}{where}", file=sys.stderr)
    print(f"fuzz: {len(result['records'])} checks, {len(result['failures'])} failures, "
          f"{result['seconds']} s")
    write_json(args.json, result)
    return 1 if result["failures"] else 0
