"""Benchmark (not a test): the tuned kernels inside the model against the same kernels alone.

The kernel database ranks each kernel's candidates by timing it alone, its arguments
flushed from the caches (``cold``) as the tuner times them; the CPU table's models then run
slower than their kernels' records add up to (Inception V3 at 75 px on the Zen 4: 3.27 ms of
records, 4.05 ms the model). This script says where the difference is. Per model, the
``tvm-ios sequential (tuned)`` build (the graph the tvm-ios builds take, its ops in model
order, the committed database's kernels) is timed as a user runs it, then its calls are
replayed in order on the model's own buffers, each kernel timed
(:func:`~tvm_ios.bench.in_situ.in_situ_profile`), and each kernel is timed alone, cold and
warm (:func:`~tvm_ios.bench.cpu_profile.kernel_profile`); all at each thread count. It
prints the sums and the kernels that lose the most inside the model.

    python benchmarks/kernels_in_model.py --models inception_v3:75 --threads 1 2
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from tvm_ios.bench.cpu_builds import build_ios_sequential, zoo_case
from tvm_ios.bench.cpu_profile import kernel_profile
from tvm_ios.bench.in_situ import in_situ_profile
from tvm_ios.bench.provenance import provenance, write_model_rows

RESULTS = Path(__file__).resolve().parent / "results" / "kernels_in_model.json"
KERNELS = Path(__file__).resolve().parent / "kernels"
ALL = 100000  # rows: every kernel


def compare(mod, executable, x, threads: int, rounds: int, top: int) -> dict:
    """One build at one thread count: the model, its kernels in it, and alone."""
    situ = in_situ_profile(mod, executable, [x], threads, rounds=rounds, top=ALL)
    alone = {cold: {r["kernel"]: r["total_us"] for r in kernel_profile(
        mod, executable, threads, top=ALL, number=rounds, cold=cold)}
        for cold in (True, False)}
    rows = [{"kernel": r["kernel"], "calls": r["calls"], "in_model_us": r["total_us"],
             "cold_us": alone[True][r["kernel"]], "warm_us": alone[False][r["kernel"]]}
            for r in situ["kernels"] if r["kernel"] in alone[True]]
    rows.sort(key=lambda r: r["cold_us"] - r["in_model_us"])
    return {"threads": threads, "model_us": situ["model_us"],
            "replayed_us": situ["replayed_us"], "calls": situ["calls"],
            "in_model_us": round(sum(r["in_model_us"] for r in rows), 1),
            "cold_us": round(sum(r["cold_us"] for r in rows), 1),
            "warm_us": round(sum(r["warm_us"] for r in rows), 1),
            "untimed_alone": len(situ["kernels"]) - len(rows), "kernels": rows[:top]}


def measure(spec: str, thread_counts: list, rounds: int, top: int) -> dict:
    """One model: its tuned sequential build compared at each thread count."""
    name, size, mod, x, kernels = zoo_case(spec)
    info: dict = {}
    start = time.time()
    build_ios_sequential(mod, kernels, info)
    built_s = round(time.time() - start, 1)
    return {"model": name, "image_size": size, "kernels": str(kernels.path.relative_to(
        KERNELS.parent.parent)), "tuned_kernels": info["tuned_kernels"],
        "build_s": built_s, "rounds": rounds,
        "runs": [compare(info["_module"], info["_executable"], x, t, rounds, top)
                 for t in thread_counts]}


def _lines(row: dict) -> list[str]:
    out = []
    for run in row["runs"]:
        worst = ", ".join(f"{k['kernel']} x{k['calls']} {k['in_model_us']:.0f} us in the "
                          f"model, {k['cold_us']:.0f} alone cold" for k in run["kernels"][:3])
        out.append(f"{row['model']} ({row['image_size']} px, {run['threads']} threads): model "
                   f"{run['model_us']:.0f} us; its {run['calls']} kernel calls "
                   f"{run['in_model_us']:.0f} us in the model, {run['cold_us']:.0f} alone "
                   f"cold, {run['warm_us']:.0f} alone warm; most lost: {worst}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["inception_v3:75"])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--top", type=int, default=12, help="kernels kept per run")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    started = provenance()
    path = write_model_rows(args.out, args.models,
                            lambda spec: measure(spec, args.threads, args.rounds, args.top),
                            lambda row: print("\n".join(_lines(row)), flush=True), started)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
