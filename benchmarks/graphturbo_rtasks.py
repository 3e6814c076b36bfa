"""Benchmark (not a test): GraphTurbo's instances as rTasks on the CPU vDevice, side by side.

For each model, four builds for ``llvm`` of the same weights, run on the same random input:

* ``tvm``: TVM's default build of the model (the reference every output is checked against);
* ``wavefront``: the rProgram engine without GraphTurbo (``RProgramPass("wavefront")``: the
  ops as rTasks, Rammer's policy), the same model without instances;
* ``instances``: GraphTurbo's instances as today's passes emit them, one at a time
  (``GroupSubgraphs``, ``SplitInstances``, ``OrderInstances``, TVM's default build);
* ``rtasks``: the instances as rTasks (``GraphTurboRProgramPass``): bound to vEUs, waiting
  only for the instances they read, their tensors kept in the vEU's scratch arena.

They are timed in turn, round after round (the machine is shared and noisy), and the
ratios of medians are printed, with the cores each build kept busy while it was timed (CPU
time over wall time: below 2 the vEUs did not get two cores) and the load average. Also reported: the activation traffic through global memory
of the original, the instances one at a time and the rTasks (counted on the code), beside
GraphTurbo's modelled off-core bytes (per layer and planned). The results file is written
with its provenance (command, commit, CPU, versions, date).

    PYTHONPATH=. python benchmarks/graphturbo_rtasks.py [--models resnet50 mobilenet_v2]
        [--image-size 224] [--threads 2] [--rounds 5] [--number 3] [--hw cpu]
        [--out benchmarks/results/graphturbo_rtasks.json]
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time

from tvm_ios.bench.provenance import provenance, write_results

VARIANTS = ("tvm", "wavefront", "instances", "rtasks")


def _args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["resnet50", "mobilenet_v2"])
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2, help="TVM_NUM_THREADS (vEUs)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--number", type=int, default=3, help="runs per timing")
    parser.add_argument("--hw", default="cpu", help="GraphTurbo preset instances are sized for")
    parser.add_argument("--out", default="benchmarks/results/graphturbo_rtasks.json")
    return parser.parse_args(argv)


def _builds(model: str, args):
    import tvm  # noqa: PLC0415

    from tvm_ios import models  # noqa: PLC0415
    from tvm_ios.passes.graphturbo_attr import load  # noqa: PLC0415
    from tvm_ios.passes.graphturbo_rprogram import GraphTurboRProgramPass  # noqa: PLC0415
    from tvm_ios.passes.group_subgraphs import GroupSubgraphs  # noqa: PLC0415
    from tvm_ios.passes.order_instances import OrderInstances  # noqa: PLC0415
    from tvm_ios.passes.rprogram_pass import RProgramPass  # noqa: PLC0415
    from tvm_ios.passes.split_instances import SplitInstances  # noqa: PLC0415
    from tvm_ios.runtime.compare import build  # noqa: PLC0415

    mod, params = models.get(model, batch_size=args.batch, image_size=args.image_size)
    rewrites = {"tvm": lambda m: m, "wavefront": RProgramPass("wavefront"),
                "instances": tvm.transform.Sequential([GroupSubgraphs(args.hw),
                                                      SplitInstances(), OrderInstances()]),
                "rtasks": GraphTurboRProgramPass(args.hw)}
    exes, info, rewritten = {}, {}, {}
    for name in VARIANTS:
        start = time.time()
        rewritten[name] = rewrites[name](mod)
        exes[name] = build(rewritten[name], "llvm", params)
        info[name] = {"build_s": round(time.time() - start, 1)}
        print(f"  {name:10s} built in {info[name]['build_s']} s", flush=True)
    record = load(rewritten["rtasks"], "main")
    info["rtasks"]["programs"] = record["rprogram"]["programs"]
    return mod, params, exes, info, record


def bench_model(model: str, args) -> dict:
    from tvm_ios import _tvm  # noqa: PLC0415
    from tvm_ios.runtime.compare import random_inputs, run, time_module  # noqa: PLC0415
    from tvm_ios.runtime.outputs import flatten_outputs  # noqa: PLC0415

    print(f"{model} {args.image_size} px, batch {args.batch}, {args.threads} threads", flush=True)
    mod, params, exes, info, record = _builds(model, args)
    inputs = random_inputs(_tvm.bind_params(mod, params), seed=0)
    ref = flatten_outputs(run(exes["tvm"], inputs))
    for name in VARIANTS:
        out = flatten_outputs(run(exes[name], inputs))
        info[name]["max_abs_diff"] = max(float(abs(a - b).max()) for a, b in zip(ref, out))
    times = {name: [] for name in VARIANTS}
    busy = {name: [] for name in VARIANTS}
    load = os.getloadavg()
    for _ in range(args.rounds):
        for name in VARIANTS:
            cpu, wall = _clocks()
            times[name].append(time_module(exes[name], inputs, number=args.number, repeat=1))
            cpu2, wall2 = _clocks()
            busy[name].append((cpu2 - cpu) / max(wall2 - wall, 1e-9))
    for name in VARIANTS:
        info[name]["ms"] = times[name]
        info[name]["median_ms"] = statistics.median(times[name])
        info[name]["cores_busy"] = round(statistics.median(busy[name]), 2)
    base = info["tvm"]["median_ms"]
    figures = record["plan"]["figures"]
    traffic = record["rprogram"]["traffic"]
    result = {"model": model, "image_size": args.image_size, "batch": args.batch,
              "loadavg_before_after": [list(load), list(os.getloadavg())],
              "threads": args.threads, "hw": args.hw, "builds": info,
              "ratios_vs_tvm": {n: info[n]["median_ms"] / base for n in VARIANTS},
              "rtasks_vs_wavefront": info["rtasks"]["median_ms"] / info["wavefront"]["median_ms"],
              "rtasks_vs_instances": info["rtasks"]["median_ms"] / info["instances"]["median_ms"],
              "traffic_bytes": {k: v["bytes"] for k, v in traffic.items()},
              "traffic": traffic,
              "modelled_offcore_bytes": {"per_layer": figures["per_layer"]["offcore_bytes"],
                                         "graphturbo": figures["graphturbo"]["offcore_bytes"]},
              "sgs": len(record["plan"]["sgs"]), "instances": len(record["plan"]["order"])}
    _print(result)
    return result


def _clocks() -> tuple[float, float]:
    """CPU time of this process (all threads) and wall time: their ratio over a timing is the
    number of cores it kept busy (2 when both vEUs ran at once on a quiet machine)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime, time.perf_counter()


def _print(r: dict) -> None:
    print(f"  {r['sgs']} sub-graphs, {r['instances']} instances; "
          f"{len(r['builds']['rtasks']['programs'])} rPrograms")
    for name in VARIANTS:
        b = r["builds"][name]
        print(f"  {name:10s} {b['median_ms']:9.2f} ms  x{r['ratios_vs_tvm'][name]:.2f} of tvm  "
              f"max_abs_diff {b['max_abs_diff']:.3g}  cores busy {b['cores_busy']:.2f}")
    print(f"  rtasks / wavefront {r['rtasks_vs_wavefront']:.2f}, rtasks / instances "
          f"{r['rtasks_vs_instances']:.2f}")
    t = r["traffic_bytes"]
    print(f"  activation traffic (code): original {t['original'] / 1e6:.2f} MB, instances "
          f"{t['instances'] / 1e6:.2f} MB, rtasks {t['rtasks'] / 1e6:.2f} MB; modelled: per "
          f"layer {r['modelled_offcore_bytes']['per_layer'] / 1e6:.2f} MB, GraphTurbo "
          f"{r['modelled_offcore_bytes']['graphturbo'] / 1e6:.2f} MB", flush=True)


def main(argv=None) -> int:
    args = _args(argv)
    started = provenance()
    os.environ["TVM_NUM_THREADS"] = str(args.threads)  # before TVM starts its pool
    results = {"variants": list(VARIANTS), "models": [bench_model(m, args)
                                                      for m in args.models]}
    write_results(args.out, results, started)
    print(f"results written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
