"""Kernel databases: named by target, refused for a CPU that cannot run them, corrupt lines
skipped by name."""
import logging

import pytest
import tvm
from tvm.script import ir as I
from tvm.script import tirx as T

from tvm_ios import _tvm
from tvm_ios.kernels.kernel_db import (KernelDB, KernelDBError, host_target, open_kernels,
                                       runs_here, serial_target, target_name)

ms = pytest.importorskip("tvm.s_tir.meta_schedule")


@I.ir_module
class AddOne:
    @T.prim_func(s_tir=True)
    def main(a: T.Buffer((16,), "float32"), b: T.Buffer((16,), "float32")):
        for i in range(16):
            with T.sblock("b"):
                vi = T.axis.spatial(16, i)
                b[vi] = a[vi] + T.float32(1)


def _db_with_one_record(path, target, variant="parallel", secs=1e-6):
    kernels = KernelDB(path, target, create=True)
    db = kernels.database(variant, writable=True)
    workload = db.commit_workload(_tvm.ms_workload(AddOne["main"]))  # as the tuner keys it
    sch = tvm.s_tir.Schedule(AddOne)
    sch.get_sblock("b")  # (a record with an empty trace is never returned)
    trace = sch.trace
    db.commit_tuning_record(ms.database.TuningRecord(
        trace, workload, [secs], kernels.target_for(variant),
        ms.arg_info.ArgInfo.from_prim_func(AddOne["main"])))
    kernels.close()
    return KernelDB(path)


def test_targets_are_this_cpu_and_named_by_it():
    target = host_target(2)
    assert target.attrs["mcpu"] == tvm.target.codegen.llvm_get_system_cpu()
    assert target_name(target) == f"llvm-{target.attrs['mcpu']}-2c"
    assert int(serial_target(target).attrs["num-cores"]) == 1


def test_database_for_a_cpu_that_cannot_run_it_warns_naming_both_and_is_not_applied(
        tmp_path, caplog):
    newer = {"kind": "llvm", "mcpu": "sapphirerapids", "num-cores": 2}
    older = {"kind": "llvm", "mcpu": "x86-64-v2", "num-cores": 2}
    KernelDB(tmp_path, newer, create=True)
    with caplog.at_level(logging.WARNING):
        assert open_kernels(tmp_path, older) is None
    message = caplog.text
    assert "sapphirerapids" in message and "x86-64-v2" in message
    assert "lacks" in message and "untuned" in message
    assert open_kernels(tmp_path, newer) is not None  # the same target is accepted
    assert not runs_here(tmp_path, older) and runs_here(tmp_path, newer)


def test_database_of_an_older_cpu_of_the_line_is_applied_with_a_warning(tmp_path, caplog):
    older = {"kind": "llvm", "mcpu": "x86-64-v2", "num-cores": 2}
    KernelDB(tmp_path, older, create=True)
    with caplog.at_level(logging.WARNING):
        kernels = open_kernels(tmp_path, {"kind": "llvm", "mcpu": "sapphirerapids",
                                          "num-cores": 2})
    assert kernels is not None and kernels.name == "llvm-x86-64-v2-2c"  # built for it
    assert "x86-64-v2" in caplog.text and "sapphirerapids" in caplog.text
    assert "runs its code" in caplog.text
    with caplog.at_level(logging.WARNING):  # another core count: not applied
        assert open_kernels(tmp_path, {**older, "num-cores": 4}) is None
    assert "num-cores 2 is not 4" in caplog.text


def test_corrupt_line_is_skipped_and_named(tmp_path, caplog):
    kernels = _db_with_one_record(tmp_path, host_target(2))
    records = tmp_path / "parallel" / "database_tuning_record.json"
    good = records.read_text()
    records.write_text(good + "{not json\n")
    with caplog.at_level(logging.WARNING):
        db = kernels.database("parallel")
    assert f"{records}: skipped corrupt line(s) 2" in caplog.text
    assert len(db.get_all_tuning_records()) == 1
    assert records.read_text() == good + "{not json\n"  # reading never rewrites the file
    kernels.close()
    kernels.database("parallel", writable=True)  # tuning: the bad line moves aside
    assert records.read_text() == good
    assert (tmp_path / "parallel" / "database_tuning_record.json.corrupt").read_text() \
        == "{not json\n"


def test_a_directory_without_target_json_is_refused(tmp_path):
    with pytest.raises(KernelDBError, match="not a kernel database"):
        KernelDB(tmp_path)
    assert open_kernels(tmp_path / "missing", quiet_missing=True) is None


def test_packed_database_is_what_a_checkout_carries(tmp_path):
    kernels = _db_with_one_record(tmp_path, host_target(2))
    packed = kernels.pack()
    assert sorted(p.name for p in packed) == ["database_tuning_record.json.gz",
                                              "database_workload.json.gz"]
    for p in packed:
        p.with_suffix("").unlink()  # a fresh checkout: only the .gz files
    fresh = KernelDB(tmp_path)
    assert fresh.num_records("parallel") == 1
    assert len(fresh.database("parallel").get_all_tuning_records()) == 1


def test_best_time_of_a_kernel_and_the_digest_stages_are_logged_under(tmp_path):
    import hashlib

    kernels = _db_with_one_record(tmp_path, host_target(2))
    assert kernels.best_us("parallel", AddOne["main"]) == pytest.approx(1.0)
    assert kernels.best_us("packed", AddOne["main"]) is None
    before = kernels.fingerprint  # (databases without packed kernels keep their digest)
    assert before == hashlib.sha1(f"{kernels.name}:1:0".encode()).hexdigest()[:10]
    with_packed = _db_with_one_record(tmp_path, host_target(2), "packed", 5e-7)
    assert with_packed.best_us("packed", AddOne["main"]) == pytest.approx(0.5)
    assert with_packed.fingerprint != before  # stages measured before are measured again


def test_a_variant_read_after_it_was_opened_for_tuning_holds_what_was_appended(tmp_path):
    KernelDB(tmp_path, host_target(), create=True).database("parallel", writable=True)
    kernels = KernelDB(tmp_path)
    before = kernels.database("parallel")  # read before tuning
    writable = kernels.database("parallel", writable=True)
    assert kernels.database("parallel") is writable is not before
