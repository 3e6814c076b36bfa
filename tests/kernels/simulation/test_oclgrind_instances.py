"""Under Oclgrind: GraphTurbo's instance programs (outputs kept in shared memory) and ops of
one kernel sharing one body (their tensors chosen by op) match TVM's llvm build."""
import os

os.environ.setdefault("TVM_NUM_THREADS", "2")  # before TVM creates its pool

import re

import pytest

from tvm_ios import _tvm
from tvm_ios.graphturbo.hwspec import HardwareSpec
from tvm_ios.kernels.gpu import sync
from tvm_ios.kernels.gpu.build import build_kernels
from tvm_ios.kernels.gpu.programs import build_program, plan_programs
from tvm_ios.kernels.simulation.check import simulate_program
from tvm_ios.passes.graphturbo_rprogram import GraphTurboRProgramPass
from tvm_ios.testing import dag_model

OPENCL = _tvm.make_target("opencl")
CLEAN = {"local_races": 0, "global_races": 0, "out_of_bounds": 0, "barrier_divergence": 0,
         "other": 0}


def _global_pointers(source: str) -> str:
    """``source`` with the chosen pointers declared ``__global``: TVM's OpenCL codegen
    declares a pointer variable without its address space (why OpenCL kernels do not choose
    pointers, :class:`~tvm_ios.kernels.gpu.sync.OpenCLSync`); CUDA runs the same TIR."""
    source = re.sub(r"(?m)^(\s*)(\w+\*) (condval\w*|\w+_op\d+_ptr\w*)\b", r"\1__global \2 \3",
                    source)
    return re.sub(r"\((\w+\*)\)(condval\w*)", r"(__global \1)\2", source)


def _matches(kernel, source):
    row = simulate_program(kernel, source, launches=1)
    errors = {k: v for k, v in row["errors"].items() if k != "inter_group_races"}
    assert errors == CLEAN, row["messages"][:2]
    assert row["max_abs_diff"] < 1e-5 * max(1.0, row["max_abs_reference"]), row
    return row


@pytest.mark.parametrize("pointers", [False, True], ids=["views", "chosen"])
def test_instance_programs_keep_tensors_in_shared_memory_and_match(oclgrind, monkeypatch,
                                                                   pointers):
    """Kept tensors at their own offsets of the block's arena (a lowered kernel reads its
    view through a flattened buffer over the view's data: TVM applied no offset there, and
    every kept tensor sat at offset 0, raced and came out wrong). ``chosen``: the ops of one
    kernel share a body, global tensors chosen as pointers, kept ones as offsets."""
    monkeypatch.setattr(sync.OpenCLSync, "chosen_pointers", pointers)
    mod, _ = dag_model(1, num_ops=5, channels=8, size=16, p=0.3)
    hw = HardwareSpec("tiny", 2, 1, 8 * 1024, 1 << 20, 20.0, 50.0)
    rewrite = GraphTurboRProgramPass(hw, target=OPENCL)
    rewrite(mod)
    (kernel,) = rewrite.rewrite.backend.kernels
    assert kernel.program.meta["local_ops"]
    ops = len(kernel.program.ops)
    assert (kernel.op_bodies < ops) if pointers else (kernel.op_bodies == ops)
    source = build_kernels(kernel, OPENCL).source
    if pointers:
        # a kept tensor at an offset chosen by op (OpenCL's select(b, a, cond))
        assert re.search(r"rp_kept_ptr\[[^\]]*select\(\d+, \d+, [^\]]*op == ", source)
        source = _global_pointers(source)
    _matches(kernel, source)


def test_ops_of_one_kernel_share_one_body_with_chosen_pointers(oclgrind, monkeypatch):
    """The wavefront program of a DAG whose ops repeat kernels: fewer bodies than ops, each
    op on its own tensors."""
    monkeypatch.setattr(sync.OpenCLSync, "chosen_pointers", True)
    mod, _ = dag_model(3, num_ops=6, channels=8, size=8, p=0.35)
    regions, gpu, vdevice = plan_programs(mod, "nvidia/nvidia-h100", "wavefront")
    (ops, program), = regions
    kernel = build_program(program, ops, gpu, vdevice, OPENCL)
    assert kernel.op_bodies < len(ops)
    source = build_kernels(kernel, OPENCL).source
    assert "condval" in source  # the pointers are chosen
    _matches(kernel, _global_pointers(source))
