"""Benchmark report (not a test): bad inputs and faults, performed on the real command line,
and what came of each.

Every bad input (a damaged ONNX model, schedule file, compiled library, kernel database
line) is given to ``tvm-ios`` in a subprocess and its answer kept: the first line of stderr
and the exit code. Every fault (``kill -9`` during ``tune`` and ``tune-kernels``, a full disk
while logging, processes appending to one stage log at once) is injected and what held
afterwards is checked and said. Everything runs in a temporary directory on a tiny
two-branch ONNX model (:func:`tvm_ios.testing.faults.tiny_onnx`); the tests that assert the
same are ``tests/cli/test_faults.py``, ``tests/cli/test_damaged_inputs.py`` and
``tests/cost/test_log.py``. The results go to ``benchmarks/results/faults.json`` with the
provenance of this run; the page takes them from there::

    python benchmarks/faults.py
    python benchmarks/fuzz.py --render --faults benchmarks/results/faults.json
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from tvm_ios.cost.log import MeasureLog
from tvm_ios.testing.faults import (add_partial_line, cli, corrupt_kernel_db, first_error,
                                    flipped, kill_when_written, log_keys, onnx_with_op, pad_log,
                                    start_appenders, start_cli, tiny_onnx, truncated,
                                    tune_argv, tune_counts, tune_kernels_argv, tuned_trials)

ROOT = Path(__file__).resolve().parents[1]


def _answer(what: str, argv, work: Path, pick: str | None = None) -> dict:
    """Run ``tvm-ios argv``; its first error line (or first line holding ``pick``), exit."""
    done = cli(argv)
    lines = [x for x in done.stderr.splitlines() if pick and pick in x]
    answer = (lines[0] if lines else first_error(done.stderr)).replace(str(work) + "/", "")
    return {"input": what, "answer": answer[:240], "exit": done.returncode}


def _damaged(work: Path, source: Path, damage: str) -> Path:
    out = work / f"{damage}-{source.name}"
    data = source.read_bytes()
    out.write_bytes(truncated(data) if damage == "truncated" else flipped(data))
    return out


def bad_inputs(work: Path, model: Path) -> list[dict]:
    """Each damaged input given to the command that reads it."""
    schedule, lib = work / "s.json", work / "t.so"
    for argv in (["schedule", "--model", model, "-o", schedule],
                 ["compile", "--model", model, "-o", lib]):
        assert cli(argv).returncode == 0, argv
    run = ["run", "--model", model, "--repeat", "1"]
    rows = []
    for damage in ("truncated", "flipped"):
        rows.append(_answer(f"ONNX model, {damage} (tvm-ios schedule --model)",
                            ["schedule", "--model", _damaged(work, model, damage)], work))
        rows.append(_answer(f"schedule file, {damage} (tvm-ios run --schedule)",
                            [*run, "--schedule", _damaged(work, schedule, damage)], work))
        rows.append(_answer(f"compiled library, {damage} (tvm-ios run --lib)",
                            [*run, "--lib", _damaged(work, lib, damage)], work))
    corrupt_kernel_db(work / "db")
    rows.append(_answer("kernel database, a line cut mid-write (tvm-ios run --kernels)",
                        [*run, "--kernels", work / "db"], work, pick="skipped corrupt"))
    return rows + issue_inputs(work)


def issue_inputs(work: Path) -> list[dict]:
    """The bad inputs issue 61 found answered with a traceback or silently: an op the
    frontend lacks, a stale schedule and kernels tuned for another target (under
    ``--strict``; without it they run, saying so in the JSON), a pipeline preset this
    machine lacks."""
    from tvm_ios.tuning.kernel_db import KernelDB

    small = ["--model", "squeezenet", "--image-size", "17"]
    stale = work / "greedy.json"
    assert cli(["schedule", *small, "--scheduler", "greedy", "-o", stale]).returncode == 0
    other = KernelDB(work / "other-db", target={"kind": "llvm", "num-cores": 64}, create=True)
    return [
        _answer("ONNX model with an op TVM's frontend lacks (Det) (tvm-ios run --model)",
                ["run", "--model", onnx_with_op(work / "det.onnx"), "--repeat", "1"], work),
        _answer("schedule of another model (tvm-ios run --schedule --strict)",
                ["run", "--model", "mobilenet_v2", "--image-size", "8", "--repeat", "1",
                 "--schedule", stale, "--strict"], work),
        _answer("kernel database tuned for another target (tvm-ios run --kernels --strict)",
                ["run", *small, "--repeat", "1", "--kernels", other.path, "--strict"], work),
        _answer("pipeline preset this machine lacks (tvm-ios pipeline --eps c2 --times "
                "online)", ["pipeline", *small, "--eps", "c2", "--times", "online",
                            "--frames", "1"], work)]


def kill_tune(work: Path, model: Path) -> dict:
    """``kill -9`` of ``tvm-ios tune`` once its log holds a record, a partial line after it;
    then a rerun."""
    log = work / "kill.jsonl"
    kept = kill_when_written(start_cli(tune_argv(model, log, "--batch-size", "1"),
                                       work / "kill.err"), log)
    add_partial_line(log)
    before, loaded = log_keys(log), MeasureLog(log)
    rerun = cli(tune_argv(model, log))
    after, counts = log_keys(log), tune_counts(rerun.stdout)
    again = len(set(after[kept:]) & set(before))
    return {"fault": "kill -9 during `tvm-ios tune` (stage log), a partial line after it",
            "survived": f"log loads {len(loaded)} records (partial line {kept + 1} skipped "
                        f"with a warning); rerun exit {rerun.returncode}, measured "
                        f"{counts['measured']} others, {again} again; "
                        f"{len(after) - len(set(after))} duplicate keys in {len(after)}"}


def kill_tune_kernels(work: Path, model: Path) -> dict:
    """``kill -9`` of ``tvm-ios tune-kernels`` once its database holds a record; a rerun."""
    from tvm_ios.tuning.kernel_db import KernelDB

    db = work / "kdb"
    records = db / "parallel" / "database_tuning_record.json"
    kept = kill_when_written(start_cli(tune_kernels_argv(model, db), work / "kdb.err"),
                             records)
    loads = KernelDB(db).num_records("parallel")
    add_partial_line(records)
    rerun = cli(tune_kernels_argv(model, db))
    measured, total = tuned_trials(rerun.stdout)
    rows = [json.loads(x) for x in records.read_text().splitlines() if x.strip()]
    unique = len({json.dumps([r[0], r[1][0]]) for r in rows})
    return {"fault": "kill -9 during `tvm-ios tune-kernels` (meta_schedule database), a "
                     "partial line after it",
            "survived": f"killed with {kept} records: the database loads {loads} (a partial "
                        f"line after them set aside with a warning); rerun exit {rerun.returncode} started from them: "
                        f"{measured} measured, {total} in all (budget 16); "
                        f"{len(rows) - unique} duplicate records in {len(rows)}"}


def full_disk(work: Path, model: Path) -> tuple[dict, dict]:
    """``tvm-ios tune`` whose log reaches the file-size limit (EFBIG, a full disk as the
    process sees it) after one record: its answer, and what the log holds."""
    log = work / "full.jsonl"
    pad_log(log, 4 << 20)
    done = cli(tune_argv(model, log), file_size_limit=log.stat().st_size + 1000)
    loaded = MeasureLog(log)
    answer = first_error(done.stderr).replace(str(work) + "/", "")
    return ({"input": "a full disk while `tvm-ios tune` logs (file-size limit, EFBIG)",
             "answer": answer[:240], "exit": done.returncode},
            {"fault": "a full disk while `tvm-ios tune` appends to its stage log",
             "survived": f"exit {done.returncode}, "
                         f"{'no' if 'Traceback' not in done.stderr else 'a'} traceback; log "
                         f"loads {len(loaded) - 1} records written before (and the padding), "
                         f"{loaded.skipped} partial line skipped"})


def concurrent_appends(work: Path, tags: str = "abc", count: int = 60) -> dict:
    """Processes appending 20 kB records to one stage log at once."""
    log = work / "shared.jsonl"
    procs = start_appenders(log, tags, count, size=20000)
    codes = [p.wait(300) for p in procs]
    loaded = MeasureLog(log)
    whole = sum(r.stage.get("pad") == r.key[0] * 20000 for r in loaded.records)
    return {"fault": f"{len(tags)} processes appending {count} records of 20 kB each to one "
                     "stage log at once",
            "survived": f"exits {codes}; {len(loaded)} of {len(tags) * count} records load, "
                        f"{whole} whole, {loaded.skipped} lines skipped"}


def main(argv=None) -> int:
    """Perform every bad input and fault; write the results with their provenance."""
    from tvm_ios.bench.provenance import provenance, write_results

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default=str(ROOT / "benchmarks/results/faults.json"))
    args = parser.parse_args(argv)
    started = provenance(None if argv is None else ["benchmarks/faults.py", *argv])
    begin = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tvm_ios_faults_") as tmp:
        work = Path(tmp)
        model = tiny_onnx(work / "t.onnx")
        inputs = bad_inputs(work, model)
        disk_answer, disk = full_disk(work, model)
        faults = [kill_tune(work, model), kill_tune_kernels(work, model), disk,
                  concurrent_appends(work)]
    results = {"bad_inputs": [*inputs, disk_answer], "faults": faults,
               "wall_s": round(time.perf_counter() - begin, 1)}
    write_results(args.output, results, started)
    for row in results["bad_inputs"]:
        print(f"{row['exit']}  {row['input']}: {row['answer']}")
    for row in faults:
        print(f"{row['fault']}: {row['survived']}")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
