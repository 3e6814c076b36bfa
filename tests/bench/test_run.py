"""The runtime-only runner: reference check, timing, and each refusal."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tvm

from tvm_ios.bench import artifact, pack, run
from tvm_ios.bench.manifest import MANIFEST_NAME, Manifest, sha256_file
from tvm_ios.cli.bench_run import main as bench_run_main

REPO = Path(__file__).resolve().parents[2]


def _edit_manifest(directory, change):
    data = json.loads((directory / MANIFEST_NAME).read_text())
    change(data)
    (directory / MANIFEST_NAME).write_text(json.dumps(data))


def test_llvm_artifact_checks_and_times(llvm_artifact):
    result = run.bench_artifact(llvm_artifact, warmup=2, repeat=6, rotate=3, min_repeat_ms=0)
    assert result.status == "ok" and result.max_abs_err <= result.error_bound
    assert len(result.repeats_ms) == 6 and all(t > 0 for t in result.repeats_ms)
    assert min(result.repeats_ms) <= result.latency_ms <= max(result.repeats_ms)
    assert "median" in str(result)


def test_runtime_only_copy_without_compiler_library(llvm_artifact, tmp_path):
    """A copy of the tvm package lacking libtvm_compiler.so runs the artifact."""
    site = tmp_path / "site"
    tvm_copy = pack.copy_runtime(site)
    assert not (tvm_copy / "lib" / "libtvm_compiler.so").exists()
    assert (tvm_copy / "lib" / "libtvm_runtime.so").exists()
    out = tmp_path / "result.json"
    env = dict(os.environ, PYTHONPATH=f"{site}{os.pathsep}{REPO}")
    proc = subprocess.run([sys.executable, "-m", "tvm_ios.cli.bench_run", str(llvm_artifact),
                           "--repeat", "3", "--warmup", "1", "--json", str(out)],
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads(out.read_text())
    assert result["status"] == "ok" and result["latency_ms"] > 0
    runtime = result["versions"]
    assert runtime["tvm_path"] == str(tvm_copy)
    assert runtime["runtime_only"] and not runtime["relax_imported"]


def test_reference_mismatch_reports_error_and_no_latency(artifact_copy, tmp_path, capsys):
    reference = np.load(artifact_copy / "reference.npz")["arr_0"]
    np.savez(artifact_copy / "reference.npz", reference + 0.5)
    _edit_manifest(artifact_copy, lambda d: d["files"]["reference"].update(
        sha256=sha256_file(artifact_copy / "reference.npz")))
    out = tmp_path / "r.json"
    assert bench_run_main([str(artifact_copy), "--repeat", "2", "--json", str(out)]) == 2
    printed = capsys.readouterr().out
    assert "REFERENCE MISMATCH" in printed and "max abs error 0.5" in printed
    assert "median" not in printed
    (result,) = json.loads(out.read_text())
    assert result["status"] == "mismatch" and result["latency_ms"] is None
    assert result["repeats_ms"] == [] and result["max_abs_err"] == pytest.approx(0.5)


def test_other_tvm_version_is_refused(artifact_copy, capsys):
    _edit_manifest(artifact_copy, lambda d: d["versions"].update(tvm="0.26.0"))
    assert bench_run_main([str(artifact_copy)]) == 1
    err = capsys.readouterr().err
    assert "TVM 0.26.0" in err and f"TVM {tvm.__version__}" in err


def test_cuda_artifact_of_other_tvm_version_is_refused_before_loading_cuda(cuda_artifact,
                                                                          tmp_path, capsys):
    import shutil

    copy = shutil.copytree(cuda_artifact, tmp_path / "cuda")
    _edit_manifest(copy, lambda d: d["versions"].update(tvm="0.28.0"))
    assert bench_run_main([str(copy)]) == 1
    err = capsys.readouterr().err
    assert "built with TVM 0.28.0" in err and "CUDA runtime" not in err


@pytest.mark.skipif(tvm.cuda(0).exist, reason="a GPU is present: the CUDA runtime loads")
def test_missing_cuda_runtime_is_a_clear_refusal(cuda_artifact, capsys):
    assert bench_run_main([str(cuda_artifact)]) == 1
    err = capsys.readouterr().err
    assert "cannot load TVM's CUDA runtime libtvm_runtime_cuda.so" in err
    assert "NVIDIA driver" in err


def test_precompiled_kernels_are_served_to_the_cuda_loader(cuda_artifact, two_branch):
    """The callback TVM's CUDA module calls at load returns the artifact's fatbin."""
    import tvm_ffi

    manifest = Manifest.load(cuda_artifact)
    executable = tvm.compile(two_branch[0], target=tvm.target.Target("nvidia/nvidia-h100"))
    (source,) = artifact.cuda_sources(executable)
    # the library stores exactly this source; its loader hands it to the callback
    assert source.encode() in (cuda_artifact / "model.so").read_bytes()
    previous = tvm_ffi.get_global_func("tvm_callback_cuda_compile")
    try:
        run.install_kernels(manifest, cuda_artifact)
        served = tvm_ffi.get_global_func("tvm_callback_cuda_compile")(source)
        assert bytes(served) == (cuda_artifact / "kernels.fatbin").read_bytes()
    finally:
        tvm_ffi.register_global_func("tvm_callback_cuda_compile", previous, override=True)
