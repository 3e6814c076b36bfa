"""The preloaded shim drops Oclgrind's cross-group race reports, and only those."""
import logging
import tempfile

import numpy as np
import pytest

from tvm_ios import _tvm
from tvm_ios.kernels.simulation import shim as oclgrind_shim
from tvm_ios.kernels.gpu.programs import build_program, plan_programs
from tvm_ios.kernels.gpu.build import build_kernels
from tvm_ios.kernels.simulation.oclgrind import run_kernel
from tvm_ios.kernels.gpu.persistent import ZERO_THREADS
from tvm_ios.kernels.simulation.check import program_arrays
from tvm_ios.testing import dag_model

OPENCL = _tvm.make_target("opencl")


@pytest.fixture
def fresh_tmp(tmp_path, monkeypatch):
    """A temporary directory of its own, so no shim built before is reused."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def test_the_shim_defines_the_race_detector_function(fresh_tmp):
    path = oclgrind_shim.race_shim()
    assert path is not None and path.startswith(str(fresh_tmp))
    data = open(path, "rb").read()
    assert data.startswith(b"\x7fELF") and oclgrind_shim.SHIM_SYMBOL.encode() in data
    assert oclgrind_shim.race_shim() == path  # built once


def test_without_a_compiler_there_is_no_shim_and_a_warning(fresh_tmp, monkeypatch, caplog):
    monkeypatch.setenv("CC", "no-such-compiler")
    monkeypatch.setenv("PATH", str(fresh_tmp))
    with caplog.at_level(logging.WARNING):
        assert oclgrind_shim.race_shim() is None
    assert "no C compiler" in caplog.text


def test_cross_group_reports_are_dropped_and_the_verdict_is_unchanged(oclgrind):
    """A wavefront program whose vEUs read each other's outputs: Oclgrind reports those
    reads as races across work-groups unless the shim is preloaded; outputs, steps and the
    reports that count are the same either way."""
    mod, _ = dag_model(3, num_ops=3, channels=4, size=4, p=0.5)
    plan = plan_programs(mod, "nvidia/nvidia-h100", "wavefront")
    (ops, program), = plan[0]
    kernel = build_program(program, ops, plan[1], plan[2], OPENCL)
    source = build_kernels(kernel, OPENCL).source
    outputs = [kernel.tensors[key][0] for key in kernel.outputs]
    args = (source, program.name, program_arrays(kernel), outputs, program.num_veus,
            kernel.threads, ZERO_THREADS)
    recorded = run_kernel(*args, launches=1, record_inter_group=True)
    dropped = run_kernel(*args, launches=1)
    assert recorded.inter_group_recorded and recorded.errors["inter_group_races"] > 0
    assert not dropped.inter_group_recorded and "inter_group_races" not in dropped.errors
    assert dropped.errors == {k: v for k, v in recorded.errors.items()
                              if k != "inter_group_races"}
    assert dropped.error_count == recorded.error_count == 0
    for name in outputs:
        np.testing.assert_array_equal(dropped.outputs[0][name], recorded.outputs[0][name])
    np.testing.assert_array_equal(dropped.steps[0], recorded.steps[0])
