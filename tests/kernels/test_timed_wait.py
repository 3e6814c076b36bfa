"""The CUDA bounded wait is a time (%globaltimer, microseconds); OpenCL keeps a poll count."""
import re
import shutil

import pytest

from tvm_ios import _tvm
from tvm_ios.kernels.bounded_wait import DEFAULT_WAIT_US, WAIT_US_ENV, wait_us
from tvm_ios.kernels.gpu.programs import build_program, plan_programs
from tvm_ios.kernels.gpu.build import build_kernels
from tvm_ios.passes.rprogram_backends import GPUBackend
from tvm_ios.testing import dag_model

H100 = "nvidia/nvidia-h100"


@pytest.fixture(scope="module")
def sources():
    mod, _ = dag_model(0, num_ops=3, channels=8, size=8, p=1.0)
    (ops, program), = (plan := plan_programs(mod, H100, "wavefront"))[0]
    out = {}
    for target in (H100, "opencl"):
        kernel = build_program(program, ops, plan[1], plan[2], _tvm.make_target(target), 1234)
        out[target] = build_kernels(kernel, target).source
    return out


def test_cuda_wait_reads_the_global_timer(sources):
    src = sources[H100]
    assert "mov.u64 %0, %%globaltimer;" in src  # the helper, declared in the kernel source
    assert "rp_wait_t0_ptr[0] = tvm_ios_globaltimer();" in src  # the wait's start
    # inside the loop: elapsed ns against config[0] microseconds
    assert re.search(r"\(\(uint64_t\)rp_config_ptr\[0\]\) \* \(uint64_t\)1000ULL\) < "
                     r"\(tvm_ios_globaltimer\(\) - rp_wait_t0_ptr\[0\]\)", src)
    assert "rp_polls" not in src  # no poll counter bounds the CUDA wait


def test_opencl_wait_keeps_the_poll_count(sources):
    src = sources["opencl"]
    assert "globaltimer" not in src
    assert "rp_polls" in src


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
def test_timed_wait_compiles_with_nvcc(sources):
    from tvm_ios._tvm import nvcc

    with _tvm.make_target(H100):
        assert len(bytes(nvcc.compile_cuda(sources[H100], target_format="fatbin",
                                           compiler="nvcc"))) > 0


def test_cuda_bound_is_microseconds_from_the_environment(monkeypatch):
    monkeypatch.delenv(WAIT_US_ENV, raising=False)
    assert wait_us() == DEFAULT_WAIT_US == 1_000_000
    assert GPUBackend(_tvm.make_target(H100)).wait_bound == DEFAULT_WAIT_US
    monkeypatch.setenv(WAIT_US_ENV, "2500")
    backend = GPUBackend(_tvm.make_target(H100))
    assert (backend.wait_bound, backend.wait_unit) == (2500, "us")
    assert GPUBackend(_tvm.make_target("opencl")).wait_unit == "polls"
    monkeypatch.setenv(WAIT_US_ENV, "soon")
    with pytest.raises(ValueError, match="TVM_IOS_WAIT_US='soon'"):
        wait_us()
