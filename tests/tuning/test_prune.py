"""Pruned kernel databases: each workload's best records kept, unchanged, with the
fingerprint its stage log is keyed by; workloads left without records dropped and the
records renumbered; the packed copies and the stage log restored from ``.xz``."""
import json

import pytest
import tvm
from tvm.script import ir as I
from tvm.script import tirx as T

from tvm_ios import _tvm
from tvm_ios.cost.log import MeasureLog
from tvm_ios.tuning.prune import best_records, prune
from tvm_ios.tuning.kernel_db import STAGE_LOG, KernelDB, host_target

ms = pytest.importorskip("tvm.s_tir.meta_schedule")


@I.ir_module
class Scale:
    @T.prim_func(s_tir=True)
    def main(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32")):
        for i in range(64):
            with T.sblock("b"):
                vi = T.axis.spatial(64, i)
                b[vi] = a[vi] * T.float32(2)


@I.ir_module
class Shift:
    @T.prim_func(s_tir=True)
    def main(a: T.Buffer((32,), "float32"), b: T.Buffer((32,), "float32")):
        for i in range(32):
            with T.sblock("b"):
                vi = T.axis.spatial(32, i)
                b[vi] = a[vi] + T.float32(3)


def _trace(mod, split: int):
    sch = tvm.s_tir.Schedule(mod)
    (loop,) = sch.get_loops(sch.get_sblock("b"))
    sch.split(loop, [None, split])
    return sch.trace


def _database(path, timings):
    """A database whose parallel variant holds ``timings``: (module, split, seconds) each."""
    kernels = KernelDB(path, host_target(2), create=True)
    db = kernels.database("parallel", writable=True)
    for mod, split, secs in timings:
        workload = db.commit_workload(_tvm.ms_workload(mod["main"]))
        db.commit_tuning_record(ms.database.TuningRecord(
            _trace(mod, split), workload, [secs], kernels.target,
            ms.arg_info.ArgInfo.from_prim_func(mod["main"])))
    kernels.meta["tuning"].append({"variant": "parallel", "records": len(timings),
                                   "cache": "cold"})
    kernels.save_meta()
    kernels.close()
    return KernelDB(path)


TIMINGS = [(Scale, 2, 5e-6), (Scale, 4, 2e-6), (Scale, 8, 9e-6), (Scale, 16, 3e-6),
           (Shift, 2, 4e-6), (Shift, 4, 1e-6), (Shift, 8, 1e10)]  # (1e10: never ran)


def test_pruning_keeps_each_workloads_best_records_and_the_fingerprint(tmp_path):
    kernels = _database(tmp_path, TIMINGS)
    best, fingerprint = best_records(tmp_path / "parallel", kernels.meta["tuning"],
                                     "parallel"), kernels.fingerprint
    report = prune(kernels, keep=2)
    assert report["parallel"] == {"records_before": 7, "records": 4, "workloads_before": 2,
                                  "workloads": 2, "best_kept": 2}
    pruned = KernelDB(tmp_path)
    assert pruned.num_records("parallel") == 4
    assert pruned.fingerprint == fingerprint  # (its logged stages still count)
    assert best_records(tmp_path / "parallel", pruned.meta["tuning"], "parallel") == best
    times = sorted(r.run_secs[0].value for r in
                   pruned.database("parallel", keep=None).get_all_tuning_records())
    assert times == pytest.approx([1e-6, 2e-6, 3e-6, 4e-6])
    assert pruned.best_us("parallel", Scale["main"]) == pytest.approx(2.0)
    assert [e["pruned"]["records_before"] for e in pruned.meta["tuning"]] == [7]


def test_a_workload_left_without_records_is_dropped_and_records_renumbered(tmp_path):
    kernels = _database(tmp_path, [(Scale, 2, 1e10), (Shift, 4, 1e-6), (Shift, 8, 2e-6)])
    report = prune(kernels, keep=1)
    assert report["parallel"]["workloads"] == 1
    pruned = KernelDB(tmp_path)
    lines = (tmp_path / "parallel" / "database_tuning_record.json").read_text().splitlines()
    assert [json.loads(line)[0] for line in lines] == [0]  # (was workload 1)
    assert pruned.best_us("parallel", Shift["main"]) == pytest.approx(1.0)
    assert pruned.best_us("parallel", Scale["main"]) is None


def test_records_tuned_further_after_pruning_change_the_fingerprint(tmp_path):
    kernels = _database(tmp_path, TIMINGS)
    prune(kernels, keep=1)
    pruned = KernelDB(tmp_path)
    kept = pruned.fingerprint
    db = pruned.database("parallel", writable=True)
    workload = db.commit_workload(_tvm.ms_workload(Scale["main"]))
    db.commit_tuning_record(ms.database.TuningRecord(
        _trace(Scale, 32), workload, [1e-7], pruned.target,
        ms.arg_info.ArgInfo.from_prim_func(Scale["main"])))
    pruned.close()
    assert KernelDB(tmp_path).fingerprint != kept


def test_a_fresh_checkout_has_only_the_xz_copies_and_the_stage_log_comes_back(tmp_path):
    kernels = _database(tmp_path, TIMINGS)
    line = {"key": "s-k" + kernels.fingerprint, "target": "llvm", "device_key": "local:x",
            "run_secs": [1e-4], "median_us": 100.0}
    (tmp_path / STAGE_LOG).write_text(json.dumps(line) + "\n")
    prune(kernels, keep=1)
    for path in list(tmp_path.glob("**/*.json")) + [tmp_path / STAGE_LOG]:
        if path.name != "target.json":
            assert path.with_name(path.name + ".xz").is_file()
            path.unlink()
    fresh = KernelDB(tmp_path)
    assert fresh.best_us("parallel", Shift["main"]) == pytest.approx(1.0)
    assert len(MeasureLog(fresh.stage_log).records) == 1
    (tmp_path / STAGE_LOG).unlink()
    assert len(MeasureLog(tmp_path / STAGE_LOG).records) == 1  # (any reader of the log)


def test_keep_below_one_is_refused(tmp_path):
    with pytest.raises(ValueError, match="at least 1"):
        prune(_database(tmp_path, TIMINGS), keep=0)


def test_pruning_that_would_change_a_best_record_writes_nothing(tmp_path, monkeypatch):
    from tvm_ios.tuning import prune as db_prune

    kernels = _database(tmp_path, TIMINGS)
    records = (tmp_path / "parallel" / "database_tuning_record.json").read_text()
    worst_first = db_prune.best_lines  # a pruning that keeps each workload's worst record
    monkeypatch.setattr(db_prune, "_renumbered", lambda w, r: (w, [
        line for line in records.splitlines() if line not in (worst_first(r, 1) or r)]))
    with pytest.raises(ValueError, match="would change the best record"):
        prune(kernels, keep=1)
    assert (tmp_path / "parallel" / "database_tuning_record.json").read_text() == records
