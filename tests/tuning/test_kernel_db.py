"""Kernel databases: named by target, refused for a CPU that cannot run them, corrupt lines
skipped by name."""
import logging

import pytest
import tvm
from tvm.script import ir as I
from tvm.script import tirx as T

from tvm_ios import _tvm
from tvm_ios.tuning.cpu_compat import disabled_groups
from tvm_ios.tuning.kernel_db import (KernelDB, KernelDBError, host_target, open_kernels,
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


@I.ir_module
class AddTwo:
    @T.prim_func(s_tir=True)
    def main(a: T.Buffer((16,), "float32"), b: T.Buffer((16,), "float32")):
        for i in range(16):
            with T.sblock("b"):
                vi = T.axis.spatial(16, i)
                b[vi] = a[vi] + T.float32(2)


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
    masked = "".join(f"-no-{g}" for g in disabled_groups(target.attrs.get("mattr")))
    assert target_name(target) == f"llvm-{target.attrs['mcpu']}{masked}-2c"
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


def test_a_vm_hiding_avx512_builds_the_schedules_of_its_cpu_models_database(tmp_path, caplog):
    zen4 = {"kind": "llvm", "mcpu": "znver4", "num-cores": 2}
    masked = {**zen4, "mattr": ["-avx512f", "-avx512bw", "-avx512vl", "-gfni"]}
    _db_with_one_record(tmp_path / "zen4", zen4)
    with caplog.at_level(logging.WARNING):
        kernels = open_kernels(tmp_path / "zen4", masked)
    assert kernels is not None and kernels.matches(masked)  # built for this machine
    assert kernels.name == "llvm-znver4-no-avx512-no-gfni-2c"
    assert "hides avx512, gfni" in caplog.text and "schedules" in caplog.text
    assert runs_here(tmp_path / "zen4", masked)
    assert kernels.best_us("parallel", AddOne["main"]) == pytest.approx(1.0)  # its records
    # another model's database (Sapphire Rapids: AMX) does not fit, nor the other way round
    KernelDB(tmp_path / "spr", {**zen4, "mcpu": "sapphirerapids"}, create=True)
    assert open_kernels(tmp_path / "spr", masked) is None
    KernelDB(tmp_path / "vm", masked, create=True)
    assert open_kernels(tmp_path / "vm", zen4) is None


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
    assert sorted(p.name for p in packed) == ["database_tuning_record.json.xz",
                                              "database_workload.json.xz"]
    for p in packed:
        p.with_suffix("").unlink()  # a fresh checkout: only the .xz files
    fresh = KernelDB(tmp_path)
    assert fresh.num_records("parallel") == 1
    assert len(fresh.database("parallel").get_all_tuning_records()) == 1


def test_a_database_packed_as_gzip_before_still_opens(tmp_path):
    import gzip

    _db_with_one_record(tmp_path, host_target(2))
    for path in (tmp_path / "parallel").glob("*.json"):
        path.with_name(path.name + ".gz").write_bytes(gzip.compress(path.read_bytes()))
        path.unlink()
    assert KernelDB(tmp_path).num_records("parallel") == 1


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
    assert kernels.database("parallel").get_all_tuning_records() == []  # read before tuning
    _commit(kernels, _trace(), 1e-6)  # the tuner appends through the writable one
    assert len(kernels.database("parallel").get_all_tuning_records()) == 1


def _trace(split: int | None = None):
    sch = tvm.s_tir.Schedule(AddOne)
    loop, = sch.get_loops(sch.get_sblock("b"))
    if split:
        sch.split(loop, [None, split])
    return sch.trace


def _commit(kernels, trace, secs, variant="parallel", func=AddOne["main"]):
    db = kernels.database(variant, writable=True)
    workload = db.commit_workload(_tvm.ms_workload(func))
    db.commit_tuning_record(ms.database.TuningRecord(
        trace, workload, [secs], kernels.target_for(variant),
        ms.arg_info.ArgInfo.from_prim_func(func)))


def _run(kernels, cache, variant="parallel"):
    entry = {"variant": variant, "records": kernels.num_records(variant)}
    kernels.meta["tuning"].append(entry if cache is None else {**entry, "cache": cache})
    kernels.save_meta()


def test_records_rank_within_the_timing_of_the_latest_run(tmp_path):
    """A warm record (an older run's, no ``cache`` in the history) beats a cold one of the
    same kernel by its lower time alone; once a cold run is the latest, the kernel's cold
    records rank, and a kernel with none keeps its warm ones."""
    kernels = KernelDB(tmp_path, host_target(2), create=True)
    _commit(kernels, _trace(4), 1e-6)  # warm: lower, by how it was timed
    _commit(kernels, _trace(), 1e-6, func=AddTwo["main"])
    _run(kernels, None)
    digest = KernelDB(tmp_path).fingerprint
    _commit(kernels, _trace(8), 3e-6)
    _run(kernels, "cold")
    fresh = KernelDB(tmp_path)
    assert fresh.best_us("parallel", AddOne["main"]) == pytest.approx(3.0)
    best = fresh.database("parallel").query_schedule(
        _tvm.ms_workload(AddOne["main"]), fresh.target, "main")
    assert "8" in str(best.trace) and "4" not in str(best.trace)
    assert fresh.best_us("parallel", AddTwo["main"]) == pytest.approx(1.0)  # warm only: kept
    assert len(fresh.database("parallel", writable=True).get_all_tuning_records()) == 3
    assert fresh.fingerprint != digest  # stages measured with the warm ranking: measured again
    _run(kernels, "warm")  # a warm run latest: the warm records rank again
    assert KernelDB(tmp_path).best_us("parallel", AddOne["main"]) == pytest.approx(1.0)


def test_a_read_database_holds_each_kernels_best_records_only(tmp_path):
    """Builds read each kernel's best record (meta_schedule replays every record it loads):
    the read database holds that one, the same the full one ranks first; ``keep`` more."""
    kernels = KernelDB(tmp_path, host_target(2), create=True)
    for split, secs in ((4, 3e-6), (8, 1e-6), (None, 2e-6)):
        _commit(kernels, _trace(split), secs)
    _commit(kernels, _trace(), 5e-6, func=AddTwo["main"])
    fresh = KernelDB(tmp_path)
    read = fresh.database("parallel")
    assert len(read.get_all_tuning_records()) == 2
    best = read.query_schedule(_tvm.ms_workload(AddOne["main"]), fresh.target, "main")
    full = fresh.database("parallel", writable=True)
    assert str(best.trace) == str(full.query_schedule(
        _tvm.ms_workload(AddOne["main"]), fresh.target, "main").trace)
    assert "8" in str(best.trace) and fresh.best_us("parallel", AddOne["main"]) == \
        pytest.approx(1.0)
    assert len(fresh.database("parallel", keep=2).get_all_tuning_records()) == 3
    assert len(full.get_all_tuning_records()) == 4
