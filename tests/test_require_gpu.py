"""TVM_IOS_REQUIRE_GPU=1: a test marked gpu fails, not skips, where no GPU is found."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CONFTEST = Path(__file__).with_name("conftest.py")
TINY = '''
import pytest


@pytest.mark.gpu
def test_needs_a_gpu():
    pass


def test_plain():
    pass
'''


def _has_cuda():
    import tvm

    try:
        return bool(tvm.cuda(0).exist)
    except Exception:  # noqa: BLE001
        return False


def _inner(tmp_path, require: str | None):
    """A pytest run, in its own process, of one gpu-marked and one plain test under the
    project's conftest; returns (exit code, output)."""
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    (tmp_path / "test_tiny.py").write_text(TINY)
    env = {k: v for k, v in os.environ.items() if k != "TVM_IOS_REQUIRE_GPU"}
    if require is not None:
        env["TVM_IOS_REQUIRE_GPU"] = require
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                         env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "-rs", "-p", "no:xdist", str(tmp_path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.fixture
def no_gpu():
    if _has_cuda():
        pytest.skip("this host has a GPU: the no-GPU behaviour cannot be shown here")


def test_without_the_variable_gpu_tests_skip(tmp_path, no_gpu):
    code, out = _inner(tmp_path, None)
    assert code == 0, out
    assert "1 passed, 1 skipped" in out and "no CUDA GPU" in out


def test_with_the_variable_gpu_tests_fail(tmp_path, no_gpu):
    code, out = _inner(tmp_path, "1")
    assert code == 1, out  # pytest's "tests failed" exit code
    assert "1 passed, 1 error" in out or "1 failed, 1 passed" in out, out
    assert "TVM_IOS_REQUIRE_GPU=1 but no CUDA GPU is found" in out
