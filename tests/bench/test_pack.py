"""The pack: runtime subset + tvm_ffi + artifacts, under 64 MiB, runs with run.sh."""
import json
import os
import subprocess
import sys
import tarfile

import pytest

from tvm_ios.bench import pack


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
    (result,) = json.loads((root / "results.json").read_text())
    assert result["status"] == "ok"
    assert result["versions"]["tvm_path"] == str(root / "site" / "tvm")
    assert result["versions"]["runtime_only"]


def test_too_large_pack_is_refused(llvm_artifact, tmp_path):
    with pytest.raises(pack.PackTooLarge, match="over 0 MiB"):
        pack.build_pack(tmp_path / "p.tar.gz", [llvm_artifact], limit=1000)
    assert not (tmp_path / "p.tar.gz").exists()
