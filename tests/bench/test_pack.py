"""The pack: runtime subset + tvm_ffi + artifacts, under 64 MiB, runs with run.sh."""
import json
import os
import subprocess
import sys
import tarfile

import pytest

from tvm_ios.bench import pack
from tvm_ios.bench.isolated import read_results


@pytest.fixture(scope="module")
def packed(llvm_artifact, tmp_path_factory):
    out = tmp_path_factory.mktemp("pack") / "pack.tar.gz"
    summary = pack.build_pack(out, [llvm_artifact])
    return out, summary


def test_pack_is_small_and_has_no_compiler(packed):
    out, summary = packed
    assert summary["archive_bytes"] == out.stat().st_size < pack.LIMIT_BYTES
    with tarfile.open(out) as archive:
        names = set(archive.getnames())
    assert "pack/site/tvm/lib/libtvm_runtime.so" in names
    assert "pack/site/tvm/lib/libtvm_runtime_cuda.so" in names
    assert not any(n.endswith("libtvm_compiler.so") for n in names)
    assert "pack/site/tvm_ios/bench/run.py" in names
    assert "pack/artifacts/two_branch_llvm/manifest.json" in names
    assert any(n.startswith("pack/site/tvm_ffi/lib/") for n in names)
    assert "pack/site/typing_extensions.py" in names
    assert "pack/site/tvm_ios/models/torch_emit.py" in names


def test_unpacked_pack_runs_its_artifacts(packed, tmp_path):
    out, _ = packed
    with tarfile.open(out) as archive:
        archive.extractall(tmp_path, filter="tar")
    root = tmp_path / "pack"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHON"] = sys.executable
    proc = subprocess.run(["sh", str(root / "run.sh"), "--repeat", "2", "--warmup", "1"],
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    provenance, records = read_results(root / "results.jsonl")
    assert provenance["pack_commit"] == json.loads((root / "pack.json").read_text())["commit"]
    assert [(r["phase"], r["status"]) for r in records] == [("check", "ok"), ("time", "ok")]
    result = records[-1]
    assert result["versions"]["tvm_path"] == str(root / "site" / "tvm")
    assert result["versions"]["runtime_only"]


def test_too_large_pack_is_refused(llvm_artifact, tmp_path):
    with pytest.raises(pack.PackTooLarge, match="over 0 MiB"):
        pack.build_pack(tmp_path / "p.tar.gz", [llvm_artifact], limit=1000)
    assert not (tmp_path / "p.tar.gz").exists()


def _python312():
    """A working Python 3.12 interpreter, or None."""
    import glob
    import shutil

    candidates = [shutil.which("python3.12")] + sorted(glob.glob(
        os.path.expanduser("~/.pyenv/versions/3.12*/bin/python")))
    for exe in filter(None, candidates):
        probe = subprocess.run([exe, "-c", "import sys; print(sys.version_info[:2])"],
                               capture_output=True, text=True, check=False)
        if probe.returncode == 0 and probe.stdout.strip() == "(3, 12)":
            return exe
    return None


@pytest.mark.slow
def test_pack_for_python312_runs_on_a_bare_python312(llvm_artifact, tmp_path):
    """The GPU host's case: another Python (3.12) with no TVM and no numpy of its own."""
    python = _python312()
    if python is None:
        pytest.skip("no Python 3.12 interpreter here")
    try:
        ffi = pack.download_wheel(pack.FFI_PIN, "3.12", tmp_path)
        numpy = pack.download_wheel("numpy<2.4", "3.12", tmp_path)
    except (subprocess.CalledProcessError, FileNotFoundError) as err:
        pytest.skip(f"cannot download the Python 3.12 wheels: {err}")
    out = tmp_path / "pack312.tar.gz"
    pack.build_pack(out, [llvm_artifact], ffi_wheel=ffi, extra_wheels=[numpy])
    with tarfile.open(out) as archive:
        archive.extractall(tmp_path, filter="tar")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(["sh", str(tmp_path / "pack" / "run.sh"), "--repeat", "2"],
                          env=dict(env, PYTHON=python), capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    result = read_results(tmp_path / "pack" / "results.jsonl")[1][-1]
    assert result["status"] == "ok" and result["versions"]["python"].startswith("3.12")
