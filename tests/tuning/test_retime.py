"""Timing a database's best candidates again (``tvm-ios tune-kernels --retime``), for real:
one small convolution tuned with a few trials, its best records timed again."""
import tempfile

import pytest

from tvm_ios.tuning.kernel_db import KernelDB, host_target, open_kernels
from tvm_ios.tuning.retime import _workloads, retime_kernels
from tvm_ios.tuning.search import tune_kernels
from tvm_ios.testing import dag_model


@pytest.fixture
def tuned(tmp_path):
    model = dag_model(seed=1, num_ops=2, channels=8, size=8, p=0.0)[0]
    kernels = KernelDB(tmp_path, host_target(), create=True)
    tune_kernels(model, kernels, variants=("parallel",), trials=6, min_repeat_ms=1)
    return kernels


def _traces(db, workload, k):
    return [str(r.trace) for r in db.get_top_k(workload, k)]


def test_the_best_candidates_are_timed_again_and_appended(tuned, tmp_path, monkeypatch):
    db = tuned.database("parallel", keep=2)
    before = {str(w.mod): _traces(db, w, 2) for w in _workloads(db)}
    records = tuned.num_records("parallel")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where candidates are built
    report = retime_kernels(tuned, "parallel", top_k=2, min_repeat_ms=1)
    tuned.close()  # (its read copies of the records go with it)
    assert not list(scratch.iterdir())  # each candidate's build removed once it was timed
    assert report.failed == 0 and report.workloads == len(before)
    assert report.timed == sum(len(t) for t in before.values())
    assert tuned.num_records("parallel") == records + report.timed  # appended, none lost
    again = open_kernels(tuned.path).database("parallel", writable=True)  # every record
    for workload in _workloads(again):
        timed = [r for r in again.get_all_tuning_records()
                 if str(r.workload.mod) == str(workload.mod)]
        # each old top-2 candidate now has two records: the old and the new timing
        for trace in before[str(workload.mod)]:
            assert sum(str(r.trace) == trace for r in timed) >= 2
    entry = open_kernels(tuned.path).meta["tuning"][-1]
    assert entry["retimed_top_k"] == 2 and entry["timed"] == report.timed


def test_another_databases_best_candidates_seed_a_new_one(tuned, tmp_path):
    """``--retime K --from DIR``: the K best records there, built for this database's target
    and timed here, are the new database's records (the source is left as it was)."""
    source_records = tuned.num_records("parallel")
    fresh = KernelDB(tmp_path / "here", host_target(), create=True)
    report = retime_kernels(fresh, "parallel", top_k=2, source=tuned, min_repeat_ms=1)
    assert report.failed == 0 and report.timed > 0
    assert fresh.num_records("parallel") == report.timed
    assert tuned.num_records("parallel") == source_records
    db = open_kernels(fresh.path).database("parallel")
    assert {str(r.target) for r in db.get_all_tuning_records()} == {str(fresh.target)}
    entry = open_kernels(fresh.path).meta["tuning"][-1]
    assert entry["from"] == tuned.name and entry["cache"] == "cold"


def test_warm_records_timed_cold_again_are_the_ones_that_rank(tmp_path):
    """A database tuned warm, retimed cold: its best candidates get cold records, and builds
    rank those alone (the warm ones are lower by how they were timed)."""
    model = dag_model(seed=1, num_ops=2, channels=8, size=8, p=0.0)[0]
    kernels = KernelDB(tmp_path, host_target(), create=True)
    tune_kernels(model, kernels, variants=("parallel",), trials=6, cold=False, min_repeat_ms=1)
    warm = kernels.num_records("parallel")
    report = retime_kernels(kernels, "parallel", top_k=2, cold=True)  # (else: as it was)
    assert report.failed == 0 and report.timed > 0
    fresh = open_kernels(tmp_path)
    assert fresh.num_records("parallel") == warm + report.timed  # every record kept
    ranked = fresh.database("parallel", keep=2).get_all_tuning_records()
    assert len(ranked) == report.timed  # every workload has cold records: only those rank
    assert [e["cache"] for e in fresh.meta["tuning"]] == ["warm", "cold"]
