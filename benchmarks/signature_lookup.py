"""Benchmark (not a test): finding a candidate stage in the log by signature vs by module.

A measured stage is found again either by its *signature* (read off the model's bindings,
:class:`~tvm_ios.cost.signature.StageSigner`) or by the workload key of its standalone
module (build the module with :func:`~tvm_ios.cost.stage_module.stage_module`, hash it).
For a sample of the IOS candidate stages of each model, both ways are timed side by side,
stage by stage, ``--rounds`` times (the signer's per-binding cache warmed first, as it is
after the DP's first stages); the figures are the medians per stage, then the median and
10th/90th percentiles over the stages. Writes ``benchmarks/results/signature_lookup.json``.

    PYTHONPATH=. python benchmarks/signature_lookup.py --models inception_v3:75 randwire:64 \\
        -r 2 -s 3 --sample 200 --rounds 3
"""
from __future__ import annotations

import argparse
import logging
import statistics
import time
from pathlib import Path

import numpy as np

from tvm_ios import models
from tvm_ios.bench.provenance import provenance, write_results
from tvm_ios.cost.log import MeasureLog
from tvm_ios.cost.measured import MeasuredCostModel, canonical_groups
from tvm_ios.cost.stage_module import stage_module

RESULTS = Path(__file__).resolve().parent / "results" / "signature_lookup.json"


def _ms(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def _summary(values: list[float]) -> dict:
    return {"median_ms": round(statistics.median(values), 4),
            "p10_ms": round(float(np.percentile(values, 10)), 4),
            "p90_ms": round(float(np.percentile(values, 90)), 4)}


def bench(spec: str, args) -> dict:
    """Time both lookups on a sample of one model's candidate stages."""
    name, size = spec.split(":")
    mod, _ = models.get(name, image_size=int(size))
    model = MeasuredCostModel(mod, None, None)
    fingerprint, ext = next(iter(model.extractions.items()))
    signer, log = model.signers[fingerprint], MeasureLog()
    stages = [(canonical_groups(g), merge) for g, merge in model.candidates(
        ext.graph, max_group_size=args.r, max_num_groups=args.s)]
    sample = stages[::max(1, len(stages) // args.sample)][:args.sample]
    for groups, merge in sample:  # warm the per-binding cache, as the DP's first stages do
        signer.signature(groups, merge)
    by_signature, by_module = [[] for _ in sample], [[] for _ in sample]
    for _ in range(args.rounds):
        for k, (groups, merge) in enumerate(sample):
            by_signature[k].append(_ms(lambda: log.lookup_signature(
                signer.signature(groups, merge), model.target, model.device_key)))
            by_module[k].append(_ms(lambda: log.lookup(
                stage_module(ext, groups, merge, signer).key, model.target, model.device_key)))
    sig = [statistics.median(t) for t in by_signature]
    mod_ = [statistics.median(t) for t in by_module]
    row = {"model": name, "image_size": int(size), "candidates": len(stages),
           "sampled": len(sample), "signature": _summary(sig), "module": _summary(mod_),
           "module_over_signature": round(statistics.median(
               m / s for m, s in zip(mod_, sig)), 1)}
    print(f"{name} {size}px: {len(sample)} of {len(stages)} candidate stages | signature "
          f"{row['signature']['median_ms']} ms (p10-p90 {row['signature']['p10_ms']}-"
          f"{row['signature']['p90_ms']}) | module {row['module']['median_ms']} ms (p10-p90 "
          f"{row['module']['p10_ms']}-{row['module']['p90_ms']}) | module/signature "
          f"{row['module_over_signature']}x", flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", metavar="NAME:SIZE",
                        default=["inception_v3:75", "randwire:64"])
    parser.add_argument("-r", type=int, default=2, help="IOS max group size")
    parser.add_argument("-s", type=int, default=3, help="IOS max groups per stage")
    parser.add_argument("--sample", type=int, default=200, help="stages timed per model")
    parser.add_argument("--rounds", type=int, default=3, help="timings per stage and way")
    parser.add_argument("--results", default=str(RESULTS))
    args = parser.parse_args()
    started = provenance()  # the code and command that run, before anything changes
    logging.basicConfig(level=logging.WARNING)
    rows = [bench(spec, args) for spec in args.models]
    settings = {"r": args.r, "s": args.s, "sample": args.sample, "rounds": args.rounds}
    print(f"results: {write_results(args.results, {'settings': settings, 'rows': rows}, started)}")


if __name__ == "__main__":
    main()
