"""Benchmark (not a test): what the kept rPrograms gain inside the whole model, against what
their stages were judged to gain one by one.

The stage judges time each concurrent stage alone (its rProgram, and its groups in turn),
caches flushed; the CPU table's rProgram column then judges the kept stages again in the
whole model, because the gains did not add up there. This script says where they went. Per
model, with the committed kernel database and its stage log (nothing is measured into the
log): the schedule the rProgram column starts from (:func:`~tvm_ios.cost.stage_judges.
rprogram_schedule`, stage judges from the log), built twice, every kept stage as its
rProgram, and every stage in turn; both timed round-robin, plain and with each kernel timed
inside the model (:mod:`tvm_ios.bench.in_situ`). It prints, per model, the judged gain of
the kept stages (log), the rPrograms' own time in situ against the judged concurrent time,
the stages' kernels in turn in situ against the judged sequential time, and the models.

    python benchmarks/rprogram_in_situ.py --models inception_v3:75 nasnet_a:64 --threads 2
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from tvm_ios import _tvm
from tvm_ios.bench.cpu_builds import build_tuned, rprogram_plan, zoo_case
from tvm_ios.bench.in_situ import compare_in_situ, rprogram_gain
from tvm_ios.bench.provenance import provenance, write_model_rows
from tvm_ios.cost.model_judge import keep_only, ranked_stages
from tvm_ios.graph.extract import extract
from tvm_ios.passes.apply_schedule import record_schedule, schedule_of

RESULTS = Path(__file__).resolve().parent / "results" / "rprogram_in_situ.json"
KERNELS = Path(__file__).resolve().parent / "kernels"


def judged(decisions: list) -> dict:
    """Judged figures (us) of the stages the judges kept concurrent, summed."""
    kept = [d for d in decisions if d["kept"] == "concurrent"]
    return {"stages": len(kept), "concurrent_us": round(sum(d["concurrent_us"] for d in kept), 1),
            "sequential_us": round(sum(d["sequential_us"] for d in kept), 1)}


def builds(mod, kernels, threads: int, cover: int) -> tuple[dict, dict]:
    """The schedule the rProgram column starts from (stage judges from the log), built with
    its kept stages as rPrograms and in turn: ``({label: (module, executable)}, judged
    figures)``."""
    decisions: list = []
    recorded, rewrite = rprogram_plan(mod, kernels, threads, decisions=decisions,
                                      from_log=True, cover=cover)
    graph = extract(recorded["main"], name="main").graph
    schedule = schedule_of(recorded, "main")
    out = {}
    for label, keep in (("rPrograms", set(ranked_stages(decisions))), ("in turn", set())):
        info: dict = {}
        candidate = rewrite(record_schedule(recorded, "main", keep_only(graph, schedule, keep)))
        build_tuned(candidate, kernels, info, cover)
        out[label] = (info["_module"], info["_executable"])
    return out, judged(decisions)


def measure(spec: str, threads: int, rounds: int, cover: int) -> dict:
    """One model: its two builds compared in situ, beside the judged figures."""
    name, size, mod, x, kernels = zoo_case(spec)
    _tvm.config_threads(threads)  # an rProgram has one vEU per worker of TVM's pool
    start = time.time()
    compiled, judged_sums = builds(mod, kernels, threads, cover)
    built_s = round(time.time() - start, 1)
    runs = compare_in_situ(compiled, [x], threads, rounds=rounds)
    gain = rprogram_gain(runs["rPrograms"], runs["in turn"])
    return {"model": name, "image_size": size, "kernels": str(kernels.path.relative_to(
        KERNELS.parent.parent)), "threads": threads, "rounds": rounds, "build_s": built_s,
        "judged": judged_sums, "in_situ": gain, "builds": runs}


def _line(row: dict) -> str:
    j, g = row["judged"], row["in_situ"]
    b = row["builds"]
    return (f"{row['model']} ({row['image_size']} px, {row['threads']} threads): "
            f"{j['stages']} kept stages judged {j['sequential_us']:.0f} us in turn, "
            f"{j['concurrent_us']:.0f} as rPrograms (gain {j['sequential_us'] - j['concurrent_us']:.0f});"
            f" in the model {g['stages_in_turn_us']:.0f} in turn, {g['rprograms_us']:.0f} as "
            f"rPrograms (gain {g['gain_us']:.0f}); the models {b['in turn']['model_us']:.0f} "
            f"in turn, {b['rPrograms']['model_us']:.0f} with rPrograms (gain "
            f"{g['model_gain_us']:.0f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["inception_v3:75", "nasnet_a:64"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--cover", type=int, default=32,
                        help="trials for a kernel the database lacks (as the CPU table)")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    started = provenance()
    path = write_model_rows(args.out, args.models,
                            lambda spec: measure(spec, args.threads, args.rounds, args.cover),
                            lambda row: print(_line(row), flush=True), started)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
