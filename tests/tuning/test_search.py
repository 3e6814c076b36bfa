"""Kernel tuning, for real and tiny: one small convolution, a few trials per variant.

The tuned database must change the kernels that run (sequential build and vEU kernels
inlined into an rProgram), leave the outputs equal, and resume rather than start over.
"""
import os

import numpy as np
import pytest
import tvm

from tvm_ios.graph.extract import extract
from tvm_ios.cli.tune_kernels import VARIANTS as cli_variants
from tvm_ios.tuning.records import WARM, line_timings
from tvm_ios.tuning.kernel_db import VARIANTS, KernelDB, host_target
from tvm_ios.kernels.program_regions import augment
from tvm_ios.kernels.tuned_build import TUNED_ATTR, apply_kernels, tuned_functions
from tvm_ios.tuning import search as tuning
from tvm_ios.tuning.search import tune_kernels
from tvm_ios.tuning.tasks import kernel_tasks, task_records, untuned_tasks
from tvm_ios.passes.rprogram_backends import CPUBackend
from tvm_ios.passes.rprogram_pass import RProgramPass
from tvm_ios.runtime.compare import random_inputs, run
from tvm_ios.testing import Concurrent, dag_model


@pytest.fixture(scope="module")
def model():
    """Two independent 3x3 convolutions of one input (same workload), then their sum."""
    return dag_model(seed=1, num_ops=2, channels=8, size=8, p=0.0)[0]


@pytest.fixture(scope="module")
def tuned(model, tmp_path_factory):
    kernels = KernelDB(tmp_path_factory.mktemp("kdb"), host_target(), create=True)
    reports = tune_kernels(model, kernels, trials=4, min_repeat_ms=1)
    return kernels, reports


def _primfunc_scripts(mod) -> dict:
    return {gv.name_hint: f.script() for gv, f in mod.functions.items()
            if isinstance(f, tvm.tirx.PrimFunc)}


def test_tasks_are_the_kernels_the_builds_call(model, tuned):
    kernels, _ = tuned
    parallel = kernel_tasks(model, kernels, "parallel")
    serial = kernel_tasks(model, kernels, "serial")
    assert any("conv2d" in t.task_name for t in parallel)
    assert len(serial) == 1 and serial[0].weight == 2  # one conv workload, used by both ops
    assert all(int(t.target.attrs["num-cores"]) == 1 for t in serial)


def test_tuning_writes_records_and_resumes(model, tuned):
    kernels, reports = tuned
    assert [r.variant for r in reports] == ["parallel", "serial", "packed", "serial-packed"]
    assert cli_variants == VARIANTS
    assert all(r.records >= 4 for r in reports)
    for variant in VARIANTS:  # timed, not failed: a candidate that died records 1e10 s
        secs = [min(float(x) for x in r.run_secs)
                for r in kernels.database(variant).get_all_tuning_records() if r.run_secs]
        assert secs and min(secs) < 1.0, (variant, secs[:4])
    again = tune_kernels(model, kernels, trials=4)
    assert all(r.trials == 0 for r in again)  # enough records: nothing measured again
    assert kernels.meta["target"]["mcpu"] == tvm.target.codegen.llvm_get_system_cpu()


def test_a_task_without_a_record_is_tuned_even_past_the_trial_budget(tmp_path):
    two = dag_model(seed=0, num_ops=2, channels=8, size=8, p=0.0)[0]  # 1x1 and 3x3 convs
    kernels = KernelDB(tmp_path, host_target(), create=True)
    tasks = kernel_tasks(two, kernels, "parallel")
    assert len(tasks) == 2
    # meta_schedule's warm-up round spends its budget on the first task only
    tune_kernels(two, kernels, variants=("parallel",), trials=2, cover=0, min_repeat_ms=1)
    assert len(untuned_tasks(tasks, kernels, "parallel")) == 1
    again = tune_kernels(two, kernels, variants=("parallel",), trials=2, cover=2,
                         min_repeat_ms=1)
    assert untuned_tasks(tasks, kernels, "parallel") == []
    assert again[0].trials >= 2 and again[0].records > 2  # past the budget of 2


def test_kernel_patterns_tune_those_kernels_only_and_count_their_records(tmp_path):
    two = dag_model(seed=0, num_ops=2, channels=8, size=8, p=0.0)[0]  # two conv kernels
    kernels = KernelDB(tmp_path, host_target(), create=True)
    tasks = kernel_tasks(two, kernels, "parallel")
    chosen = [t for t in tasks if t.task_name.startswith("fused_conv2d1_")]
    assert len(tasks) == 2 and len(chosen) == 1
    report, = tune_kernels(two, kernels, variants=("parallel",), trials=2, cover=0,
                           only=["fused_conv2d1_*"], min_repeat_ms=1)
    assert [t.task_name for t in untuned_tasks(tasks, kernels, "parallel")] == \
        [t.task_name for t in tasks if t not in chosen]  # the other kernel: no record
    assert report.tasks == 1 and report.records == task_records(chosen, kernels, "parallel")
    assert report.records >= 2 and kernels.meta["tuning"][-1]["kernels"] == ["fused_conv2d1_*"]
    # the chosen kernel holds its trials already: nothing is measured again
    again, = tune_kernels(two, kernels, variants=("parallel",), trials=2, cover=0,
                          only=["fused_conv2d1_*"])
    assert again.trials == 0
    # the other kernel, timed warm: the run's entry counts the file's lines (each line ranks
    # by the timing of the run that appended it), its kernels' records beside them
    other, = tune_kernels(two, kernels, variants=("parallel",), trials=2, cover=0,
                          only=["fused_conv2d_add*"], cold=False, min_repeat_ms=1)
    entry = kernels.meta["tuning"][-1]
    assert entry["kernel_records"] == other.records < entry["records"]
    assert entry["records"] == kernels.num_records("parallel")
    timings = line_timings(kernels.meta["tuning"], "parallel", entry["records"])
    assert other.trials >= 1 and timings[-other.trials:] == [WARM] * other.trials
    with pytest.raises(ValueError, match="no kernel matches nothing_*.*fused_conv2d1_add_relu"):
        tune_kernels(two, kernels, variants=("parallel",), trials=2, only=["nothing_*"])


def test_database_changes_the_sequential_kernels(model, tuned):
    kernels, _ = tuned
    untuned = apply_kernels(model, None, kernels.target)
    tuned_mod = apply_kernels(model, kernels)
    assert tuned_functions(untuned)[0] == 0
    assert tuned_functions(tuned_mod)[0] >= 1
    changed = [name for name, script in _primfunc_scripts(tuned_mod).items()
               if script != _primfunc_scripts(untuned).get(name)]
    assert changed and all(f.attrs.get(TUNED_ATTR) for gv, f in tuned_mod.functions.items()
                           if gv.name_hint in changed)
    x = random_inputs(model)
    a = run(tvm.compile(untuned, kernels.target), x)
    b = run(tvm.compile(tuned_mod, kernels.target), x)
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_database_changes_the_vEU_kernels_of_an_rprogram(model, tuned):
    kernels, _ = tuned
    mods = [RProgramPass("ios", cost_model=Concurrent(), kernels=k)(model)
            for k in (None, kernels)]
    programs = [[f for _, f in m.functions.items() if f.attrs is not None
                 and "tvm_ios.rprogram" in f.attrs] for m in mods]
    assert [len(p) for p in programs] == [1, 1]
    untuned, tuned_prog = (p[0].script() for p in programs)
    assert untuned != tuned_prog
    assert "T.vectorized" in tuned_prog and "T.vectorized" not in untuned
    assert tuned_prog.count("T.parallel") == 1  # only the vEU loop: kernels are serial
    x = random_inputs(model)
    ref = run(tvm.compile(model, "llvm"), x)
    out = run(tvm.compile(apply_kernels(mods[1], kernels), kernels.target), x)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_the_cpu_backend_prices_ops_by_the_records_of_their_serial_kernels(model, tuned):
    kernels, _ = tuned
    ext = extract(model["main"])
    graph, members = augment(ext)
    bindings = list(ext.func.body.blocks[ext.block_index].bindings)
    rops = CPUBackend(kernels=kernels, balance=True).rops(graph, members, bindings)
    records = [r for r in kernels.database("serial").get_all_tuning_records() if r.run_secs]
    best = min(records, key=lambda r: np.mean([float(x) for x in r.run_secs]))
    convs = [r for name, r in rops.items() if name.startswith("op")]
    assert len(convs) == 2  # both convolutions are the one tuned workload
    for rop in convs:
        whole = rop.kernels[0]
        assert whole.source == "record"
        assert whole.task_us == pytest.approx(min(float(x) for x in best.run_secs) * 1e6)


def test_ios_pipeline_applies_the_database(model, tuned):
    from tvm_ios import pipeline

    kernels, _ = tuned  # (no merges: a merged convolution is another kernel, not tuned here)
    x = random_inputs(model)
    reference = run(tvm.compile(model, "llvm"), x)
    for engine in ("stages", "rprogram"):
        with_db = pipeline(engine=engine, kernels=kernels, strategy="parallel")
        untuned = pipeline(engine=engine, strategy="parallel")
        out = run(tvm.compile(model, kernels.target, relax_pipeline=with_db), x)
        tvm.compile(model, kernels.target, relax_pipeline=untuned)
        assert with_db.report["tuned_kernels"]["tuned"] >= 1
        assert "tuned_kernels" not in untuned.report and "ApplyKernels" in with_db.report["passes"]
        np.testing.assert_allclose(out, reference, rtol=1e-4, atol=1e-4)


def test_the_local_runner_times_kernels_on_the_cores_they_are_tuned_for(tuned, monkeypatch):
    kernels, _ = tuned
    monkeypatch.setenv("TVM_NUM_THREADS", "0")
    monkeypatch.delenv("TVM_NUM_THREADS")  # restored after the test, as it was
    cores = int(kernels.target.attrs["num-cores"])
    tuning.make_runner(None, {}, tuning.tuning_cores(kernels))
    assert os.environ["TVM_NUM_THREADS"] == str(cores)  # TVM's default here would be 1



def test_a_kernel_the_parallel_variant_lacks_gets_the_serial_record(model, tmp_path):
    """A stage module fuses an op alone, where the model fuses it with what follows: its
    kernel is in the serial variant (every op alone), not the parallel one."""
    kernels = KernelDB(tmp_path, host_target(), create=True)
    tune_kernels(model, kernels, variants=("serial",), trials=2, min_repeat_ms=1)
    assert kernels.has("serial") and not kernels.has("parallel")
    tuned_mod = apply_kernels(model, kernels)
    tuned = [gv.name_hint for gv, f in tuned_mod.functions.items()
             if isinstance(f, tvm.tirx.PrimFunc) and f.attrs.get(TUNED_ATTR)]
    assert tuned and all("conv2d" in name for name in tuned)
    assert all("T.parallel" not in tuned_mod[name].script() for name in tuned)
    x = random_inputs(model)
    ref = run(tvm.compile(apply_kernels(model, None, kernels.target), kernels.target), x)
    out = run(tvm.compile(tuned_mod, kernels.target), x)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_a_kernel_the_parallel_variant_lacks_gets_a_serial_packed_record(model, tmp_path):
    """The one-core fallback packs its weights where the serial-packed variant has the
    kernel (here the only one it has: a serial-packed record beats none)."""
    kernels = KernelDB(tmp_path, host_target(), create=True)
    tune_kernels(model, kernels, variants=("serial-packed",), trials=2, min_repeat_ms=1)
    assert kernels.has("serial-packed") and not kernels.has("serial")
    tuned_mod = apply_kernels(model, kernels)
    assert tuned_functions(tuned_mod)[0] >= 1
    x = random_inputs(model)
    ref = run(tvm.compile(apply_kernels(model, None, kernels.target), kernels.target), x)
    out = run(tvm.compile(tuned_mod, kernels.target), x)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_candidates_are_timed_cold_unless_asked_warm(tuned):
    """A model's kernels read weights the caches no longer hold: candidates are timed one
    call at a time, every argument but the input flushed first (the tuning record says so)."""
    cold = tuning.evaluator_config({})
    assert cold.enable_cpu_cache_flush and cold.number == 1 and cold.repeat > 1
    warm = tuning.evaluator_config({"cold": False})
    assert not warm.enable_cpu_cache_flush and warm.number > 1
    kernels, _ = tuned
    assert {e["cache"] for e in kernels.meta["tuning"]} == {"cold"}


def test_timing_follows_whether_the_weights_fit_the_last_level_cache():
    mb = 1 << 20
    assert tuning.timing_for(5 * mb, 32 * mb) == "warm"  # SqueezeNet at 64 px on the Zen 4
    assert tuning.timing_for(69 * mb, 32 * mb) == "cold"  # Inception V3 at 75 px
    assert tuning.timing_for(5 * mb, 0) == "cold"  # cache unknown: the tuner's default
    cache = tuning.last_level_cache()
    assert cache is None or cache >= 256 * 1024


def test_a_run_without_a_timing_times_as_the_databases_latest_run(tmp_path):
    """A search or a cover run on a database timed warm adds warm records (else they would
    be the ones builds rank), on a new database cold; a timing given is kept."""
    two = dag_model(seed=0, num_ops=2, channels=8, size=8, p=0.0)[0]
    kernels = KernelDB(tmp_path, host_target(), create=True)
    assert tuning.resolved({}, kernels, "parallel")["cold"] is True
    tune_kernels(two, kernels, variants=("parallel",), trials=2, cover=0, cold=False,
                 min_repeat_ms=1)
    assert tuning.resolved({}, kernels, "parallel")["cold"] is False
    assert tuning.resolved({"cold": True}, kernels, "parallel")["cold"] is True
    tune_kernels(two, kernels, variants=("parallel",), trials=2, cover=2, min_repeat_ms=1)
    assert [e["cache"] for e in kernels.meta["tuning"]] == ["warm", "warm"]


def test_a_blocked_layout_database_tunes_and_runs_the_blocked_kernels(tmp_path):
    from tvm_ios.passes.blocked_layout import in_layout

    model = dag_model(seed=1, num_ops=2, channels=16, size=6, p=0.0)[0]
    kernels = KernelDB(tmp_path, host_target(), create=True)
    kernels.meta["layout"] = "NCHW16c"
    blocked = in_layout(model, kernels)
    tune_kernels(blocked, kernels, variants=("parallel", "serial"), trials=2,
                 min_repeat_ms=1)
    assert all("conv2d_NCHWc" in t.task_name or "conv2d" not in t.task_name
               for t in kernel_tasks(blocked, kernels, "parallel"))
    tuned_mod = apply_kernels(blocked, kernels)
    assert any("conv2d_NCHWc" in gv.name_hint and f.attrs.get(TUNED_ATTR)
               for gv, f in tuned_mod.functions.items() if isinstance(f, tvm.tirx.PrimFunc))
    program = RProgramPass("ios", cost_model=Concurrent(), kernels=kernels)(blocked)
    x = random_inputs(model)
    ref = run(tvm.compile(model, "llvm"), x)
    for mod in (tuned_mod, apply_kernels(program, kernels)):
        np.testing.assert_allclose(run(tvm.compile(mod, kernels.target), x), ref,
                                   rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", [None, "users-own"])
def test_tuning_survives_foreign_handlers_on_meta_schedules_logger(model, tmp_path, name):
    """pytest 9.2's capture handler (unnamed), or a user's named one, on meta_schedule's
    non-propagating logger made its logger set-up crash in every tuning call."""
    import logging

    log = logging.getLogger("tvm.s_tir.meta_schedule")
    handler = logging.NullHandler()
    handler.set_name(name)
    log.addHandler(handler)
    log.propagate = False
    try:
        kernels = KernelDB(tmp_path, host_target(), create=True)
        reports = tune_kernels(model, kernels, variants=("serial",), trials=2, cover=0,
                               min_repeat_ms=1)
        assert reports[0].records >= 1
        assert handler in log.handlers  # the user's handler is back after the set-up
    finally:
        log.removeHandler(handler)
