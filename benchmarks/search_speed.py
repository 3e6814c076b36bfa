"""Benchmark: IOS search time, tvm-ios's exact search against IOS's own DP, side by side.

On IOS's model blocks (``benchmarks/ios_blocks.py``: RandWire with IOS's own stage graphs,
NASNet-A, Inception V3 and SqueezeNet from the zoo, split into IOS's per-module blocks),
each block is scheduled as a graph with r=3, s=8 and the analytical cost model (V100
preset), by ``ios_schedule`` with its defaults and by a reference implementation of IOS's
dynamic program written from the thesis (``benchmarks/ios_reference_dp.py``), one block
after the other in one process. Then each whole network is scheduled by ``ios_schedule``
with its defaults (exact over the whole graph unless a bound cut is reported).

    python benchmarks/search_speed.py [--models randwire nasnet_a inception_v3 squeezenet]
                                      [--out benchmarks/results/search_speed.json]

Prints per model our seconds, the reference's seconds and their ratio, and writes the
results file with its provenance.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ios_blocks import ios_blocks, ios_randwire_graph, zoo_graph
from ios_reference_dp import IOSReferenceDP

from tvm_ios.cost.analytical import AnalyticalCostModel
from tvm_ios.graph.analysis import width
from tvm_ios.graph.opgraph import OpGraph
from tvm_ios.bench.provenance import provenance, write_results
from tvm_ios.schedule.ios import ios_schedule

R, S = 3, 8
MODELS = ("randwire", "nasnet_a", "inception_v3", "squeezenet")


def _timed(call):
    start = time.perf_counter()
    result = call()
    return result, time.perf_counter() - start


def bench_blocks(graph: OpGraph, cost) -> dict:
    """Ours and the reference on every IOS block of ``graph``, one block after the other."""
    rows = []
    for name, block in ios_blocks(graph):
        ours, ours_s = _timed(lambda: ios_schedule(block, cost, max_group_size=R,
                                                   max_num_groups=S))
        ref = IOSReferenceDP(block, cost, R, S)
        (ref_latency, _), ref_s = _timed(ref.run)
        if ours.latency_us > ref_latency * (1 + 1e-9) or not ours.stats["exact"]:
            raise AssertionError(f"{graph.name}/{name}: ours {ours.latency_us} us (exact "
                                 f"{ours.stats['exact']}), IOS DP {ref_latency} us")
        rows.append({"block": name, "ops": len(block), "width": width(block),
                     "ours_s": round(ours_s, 4), "ios_dp_s": round(ref_s, 4),
                     "ours_us": round(ours.latency_us, 3), "ios_dp_us": round(ref_latency, 3),
                     "states": ours.stats["states"], "transitions": ours.stats["transitions"],
                     "ios_dp_states": len(ref.memo) - 1, "ios_dp_transitions": ref.transitions})
    ours_s = sum(r["ours_s"] for r in rows)
    ref_s = sum(r["ios_dp_s"] for r in rows)
    largest = max(rows, key=lambda r: r["transitions"])
    return {"blocks": len(rows), "largest": {"ops": largest["ops"], "width": largest["width"]},
            "ours_s": round(ours_s, 3), "ios_dp_s": round(ref_s, 3),
            "ratio": round(ref_s / ours_s, 2),
            "ours_us": round(sum(r["ours_us"] for r in rows), 2),
            "ios_dp_us": round(sum(r["ios_dp_us"] for r in rows), 2), "per_block": rows}


def bench_whole(graph: OpGraph, cost) -> dict:
    """``ios_schedule`` with its defaults on the whole network."""
    sched, seconds = _timed(lambda: ios_schedule(graph, cost, max_group_size=R,
                                                 max_num_groups=S))
    stats = sched.stats
    return {"ops": len(graph), "seconds": round(seconds, 3),
            "latency_us": round(sched.latency_us, 2), "regions": stats["blocks"],
            "states": stats["states"], "transitions": stats["transitions"],
            "exact": stats["exact"], "bound_cuts": stats["bound_cuts"]}


def _graph(name: str) -> tuple[OpGraph, str]:
    if name == "randwire":
        return ios_randwire_graph(), "IOS's four stage graphs (benchmarks/data), zoo layers"
    return zoo_graph(name), "tvm-ios zoo"


def _warm_up(cost) -> None:
    tiny = OpGraph.from_edges(4, [(0, 1), (0, 2), (1, 3), (2, 3)])
    ios_schedule(tiny, cost)
    IOSReferenceDP(tiny, cost).run()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" /
                                             "search_speed.json"))
    args = parser.parse_args()
    started = provenance()
    cost = AnalyticalCostModel("v100")
    _warm_up(cost)
    results = {"cost_model": repr(cost), "r": R, "s": S, "load_before": os.getloadavg(),
               "models": []}
    print(f"{'model':<14}{'blocks':>7}{'largest n,d':>12}{'ours s':>9}{'IOS DP s':>10}"
          f"{'ratio':>8}{'ours us':>11}{'IOS DP us':>11}   graphs")
    for name in args.models:
        graph, source = _graph(name)
        row = {"model": name, "graphs": source, "ios_blocks": bench_blocks(graph, cost)}
        b = row["ios_blocks"]
        print(f"{name:<14}{b['blocks']:>7}{b['largest']['ops']:>8},{b['largest']['width']:<3}"
              f"{b['ours_s']:>9.2f}{b['ios_dp_s']:>10.2f}{b['ratio']:>7.1f}x"
              f"{b['ours_us']:>11.1f}{b['ios_dp_us']:>11.1f}   {source}", flush=True)
        results["models"].append(row)
    print(f"\n{'whole network':<20}{'ops':>5}{'regions':>8}{'states':>9}{'transitions':>13}"
          f"{'seconds':>9}{'latency us':>12}  exact")
    wholes = [("randwire (zoo)", zoo_graph("randwire"))] if "randwire" in args.models else []
    wholes += [(name, _graph(name)[0]) for name in args.models]
    for label, graph in wholes:
        whole = bench_whole(graph, cost)
        cuts = whole["bound_cuts"]
        loss = sum(c["loss_lower_bound_us"] for c in cuts)
        print(f"{label:<20}{whole['ops']:>5}{whole['regions']:>8}{whole['states']:>9}"
              f"{whole['transitions']:>13}{whole['seconds']:>9.2f}{whole['latency_us']:>12.1f}"
              f"  {whole['exact']}" + (f" ({len(cuts)} segment(s) cut by the bound; the cuts"
                                       f" lose at least {loss:.1f} us)" if cuts else ""),
              flush=True)
        results.setdefault("whole_network", []).append({"model": label, **whole})
    results["load_after"] = os.getloadavg()
    print(f"\nload average before {results['load_before']}, after {results['load_after']}")
    print(f"wrote {write_results(args.out, results, started)}")


if __name__ == "__main__":
    main()
