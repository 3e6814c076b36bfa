"""The GPU day rehearsed on this CPU: a pack of llvm artifacts, two of them planted faults
(a wrong reference output, a program that never finishes), run by the pack's own run.sh
with TVM's runtime only; each fault is reported for its artifact alone, every other result
is in the JSON lines."""
import json
import os
import shutil
import subprocess
import sys
import tarfile

import numpy as np
import pytest

from tvm_ios.bench import pack
from tvm_ios.bench.artifact import build_artifact
from tvm_ios.bench.isolated import read_results
from tvm_ios.bench.manifest import Manifest, sha256_file
from tvm_ios.kernels.program_regions import RegionItem
from tvm_ios.kernels.rprogram import RTask
from tvm_ios.passes import rprogram_pass
from tvm_ios.testing import dag_model

STEP_TIMEOUT_S = 25


def _stuck(out):
    """An ios-rprogram llvm artifact whose vEU 1 waits for a step vEU 0 never reaches (a
    dropped signal), with a bound of 2**31 polls: it spins far past the step timeout."""
    plan, backend = rprogram_pass.plan_regions, rprogram_pass.make_backend

    def planned(*args, **kwargs):
        schedule, items = plan(*args, **kwargs)
        for item in items:
            if isinstance(item, RegionItem) and item.program.num_veus > 1:
                item.program.prog[1].append(RTask(kind="barrier", waits=((0, 99),)))
        return schedule, items
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rprogram_pass, "plan_regions", planned)
        patch.setattr(rprogram_pass, "make_backend",
                      lambda target, veus, bound, *rest: backend(target, veus, 2**31 - 1, *rest))
        mod, params = dag_model(1, num_ops=10, p=0.3, max_fanin=1)
        build_artifact(mod, params, out, model="dag", batch=1, variant="ios-rprogram")


def _wrong_reference(good, out):
    """A copy of ``good`` whose reference output is off by one (manifest hashes updated)."""
    shutil.copytree(good, out)
    manifest = Manifest.load(out)
    reference = np.load(out / "reference.npz")
    np.savez(out / "reference.npz", *[reference[k] + 1 for k in reference.files])
    manifest.files["reference"]["sha256"] = sha256_file(out / "reference.npz")
    manifest.save(out)


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory):
    """The unpacked pack's root after ``sh run.sh``, and the run's exit status and output."""
    arts = tmp_path_factory.mktemp("arts")
    mod, params = dag_model(1, num_ops=10, p=0.3, max_fanin=1)
    build_artifact(mod, params, arts / "dag-default", model="dag", batch=1)
    build_artifact(mod, params, arts / "dag-rprogram", model="dag", batch=1,
                   variant="ios-rprogram")
    _wrong_reference(arts / "dag-default", arts / "dag-wrongref")
    _stuck(arts / "dag-stuck")
    out = tmp_path_factory.mktemp("pack")
    pack.build_pack(out / "pack.tar.gz", sorted(arts.iterdir()))
    with tarfile.open(out / "pack.tar.gz") as archive:
        archive.extractall(out, filter="tar")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHON=sys.executable, STEP_TIMEOUT_S=str(STEP_TIMEOUT_S))
    proc = subprocess.run(["sh", str(out / "pack" / "run.sh"), "--repeat", "3", "--warmup",
                           "1"], env=env, capture_output=True, text=True, timeout=600,
                          check=False)
    return out / "pack", proc


def test_each_fault_is_reported_for_its_artifact_alone(rehearsal):
    root, proc = rehearsal
    assert proc.returncode == 3, proc.stderr  # bench_all: a failure other than a mismatch
    _, records = read_results(root / "results.jsonl")
    status = {(r["phase"], r["artifact"].rsplit("/", 1)[-1]): r["status"] for r in records}
    assert status == {("check", "dag-default"): "ok", ("check", "dag-rprogram"): "ok",
                      ("check", "dag-stuck"): "timeout", ("check", "dag-wrongref"): "mismatch",
                      ("time", "dag-default"): "ok", ("time", "dag-rprogram"): "ok"}
    stuck = next(r for r in records if r["artifact"].endswith("dag-stuck"))
    assert STEP_TIMEOUT_S <= stuck["wall_s"] < STEP_TIMEOUT_S + 10
    wrong = next(r for r in records if r["artifact"].endswith("dag-wrongref"))
    assert wrong["max_abs_err"] > wrong["error_bound"] and wrong["latency_ms"] is None


def test_checks_come_first_then_timings_fastest_first(rehearsal):
    root, _ = rehearsal
    provenance, records = read_results(root / "results.jsonl")
    phases = [r["phase"] for r in records]
    assert phases == ["check"] * 4 + ["time"] * 2
    checked = {r["artifact"]: r["settings"]["check_ms"] for r in records
               if r["phase"] == "check" and r["status"] == "ok"}
    timed = [r["artifact"] for r in records if r["phase"] == "time"]
    assert timed == sorted(checked, key=checked.get)
    for record in records[-2:]:
        assert record["latency_ms"] > 0 and len(record["repeats_ms"]) == 3
        assert record["versions"]["runtime_only"] and not record["versions"]["relax_imported"]
        assert record["versions"]["tvm_path"] == str(root / "site" / "tvm")
    assert provenance["pack_commit"] == json.loads((root / "pack.json").read_text())["commit"]
    assert provenance["timeout_s"] == STEP_TIMEOUT_S and "gpus" in provenance
