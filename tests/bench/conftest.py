"""Shared fixtures of the benchmark tests: a small two-branch Relax model and its artifacts.

The model (two convolutions on one input, concatenated) is small enough that an llvm
artifact builds in about a second and a CUDA (sm_90a) one, with nvcc, in a few seconds.
"""
import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest
from tvm.script import ir as I
from tvm.script import relax as R

from tvm_ios.bench.artifact import build_artifact


@I.ir_module
class TwoBranch:
    @R.function
    def main(x: R.Tensor((2, 8, 12, 12), "float32"), w3: R.Tensor((8, 8, 3, 3), "float32"),
             w1: R.Tensor((4, 8, 1, 1), "float32"), gamma: R.Tensor((12,), "float32")):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            a = R.nn.relu(R.nn.conv2d(x, w3, padding=(1, 1)))
            b = R.nn.relu(R.nn.conv2d(x, w1))
            c = R.concat([a, b], axis=1)
            out = R.multiply(c, R.reshape(gamma, (1, 12, 1, 1)))
            R.output(out)
        return out


def two_branch_params():
    """Weights of :class:`TwoBranch` (gamma is non-negative, like a batch-norm scale)."""
    rng = np.random.default_rng(1)
    return {"w3": (0.2 * rng.standard_normal((8, 8, 3, 3))).astype("float32"),
            "w1": rng.standard_normal((4, 8, 1, 1)).astype("float32"),
            "gamma": rng.uniform(0.5, 1.5, 12).astype("float32")}


@pytest.fixture
def two_branch():
    """``(TwoBranch, weights)``."""
    return TwoBranch, two_branch_params()


@pytest.fixture(scope="session")
def llvm_artifact(tmp_path_factory):
    """An llvm artifact of TwoBranch (read-only: copy it before changing it)."""
    out = tmp_path_factory.mktemp("art") / "two_branch_llvm"
    build_artifact(TwoBranch, two_branch_params(), out, model="two_branch", batch=2,
                   target="llvm")
    return out


@pytest.fixture(scope="session")
def cuda_artifact(tmp_path_factory):
    """An nvidia/nvidia-h100 (sm_90a) artifact of TwoBranch, built with no GPU."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    out = tmp_path_factory.mktemp("art") / "two_branch_h100"
    build_artifact(TwoBranch, two_branch_params(), out, model="two_branch", batch=2,
                   target="nvidia/nvidia-h100")
    return out


@pytest.fixture
def artifact_copy(llvm_artifact, tmp_path):
    """A writable copy of the llvm artifact."""
    return shutil.copytree(llvm_artifact, tmp_path / "copy")


@pytest.fixture
def bounds():
    """``benchmarks/cpu_latency_bounds.py`` (the doc's lines of the ceiling and the floors),
    loaded from its file: the benchmarks folder is not a package."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "cpu_latency_bounds.py"
    spec = importlib.util.spec_from_file_location("cpu_latency_bounds", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
