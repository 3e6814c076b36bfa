"""The persistent rProgram kernel: tables, workspace, and its CUDA and OpenCL renderings of
one TIR (no GPU, no simulator needed)."""
import re

import pytest

from tvm_ios import _tvm
from tvm_ios.kernels.gpu.programs import build_program, plan_programs
from tvm_ios.kernels.gpu.build import build_kernels, kernel_signatures, persistent_kernel
from tvm_ios.kernels.gpu.persistent import TABLES, Workspace, encode_tables
from tvm_ios.kernels.rprogram import RProgram, RTask
from tvm_ios.kernels.gpu.rtask_mask import guarded_barriers, has_barrier
from tvm_ios.testing import dag_model

H100 = "nvidia/nvidia-h100"


@pytest.fixture(scope="module")
def plan():
    """A wavefront plan whose program mixes 1024-thread glue rTasks and 128-thread convs."""
    mod, _ = dag_model(0, num_ops=3, channels=8, size=8, p=1.0)
    return plan_programs(mod, H100, "wavefront")


@pytest.fixture(scope="module")
def kernels(plan):
    (ops, program), = plan[0]
    out = {}
    for target in (H100, "opencl"):
        kernel = build_program(program, ops, plan[1], plan[2], _tvm.make_target(target))
        out[target] = (kernel, build_kernels(kernel, target).source)
    return out


def test_tables_encode_the_program():
    p = RProgram(2)
    p.append(RTask("a", 0), 0)
    p.append(RTask("b", 3), 1)
    p.wait(1, [(0, 0)])
    tables = encode_tables(p, {"a": 0, "b": 1}, wait_bound=77)
    assert list(tables) == list(TABLES)
    assert tables["offsets"] == [0, 1, 3]
    assert tables["entries"] == [0, 0, 0, 0, 0, 1, 3, 0, 1, -1, 0, 0]
    assert tables["wait_offsets"] == [0, 0, 0, 1] and tables["waits"] == [0, 1]
    assert tables["config"] == [77, 0]


def test_workspace_layout_and_error_record():
    ws = Workspace(3)
    assert (ws.done, ws.error, ws.waiter, ws.awaited, ws.step, ws.words) == (3, 4, 5, 6, 7, 8)
    assert ws.error_of([0] * 8) is None
    assert ws.error_of([0, 0, 0, 3, 1, 2, 0, 5]) == (2, 0, 5)


def test_cuda_rendering(kernels):
    kernel, src = kernels[H100]
    zero, main = persistent_kernel(src, kernel.program.name)
    assert "rp_config" in kernel_signatures(src)[main]
    assert kernel.func.params[-1].name == "rp_steps"  # the step workspace: the last output
    assert kernel_signatures(src)[zero] == ["rp_steps"]
    assert "ld_acquire_gpu_global_s32" in src and "st_release_gpu_global_s32" in src
    assert "__nanosleep" in src and "tvm_builtin_cuda_atomic_cas" in src
    assert "__syncthreads()" in src and "extern __shared__" in src
    assert "bar.sync" not in src  # no named barriers: every thread reaches each barrier
    per_sm = -(-kernel.program.num_veus // kernel.vdevice.sms)
    assert f"__launch_bounds__({kernel.threads}, {per_sm}) {main}(" in src
    assert list(kernel.func.attrs["tirx.kernel_launch_params"]) == [
        "tirx.use_cooperative_launch"]


def test_opencl_rendering_uses_local_memory_and_global_fences(kernels):
    kernel, src = kernels["opencl"]
    assert "barrier(3)" in src and "mem_fence(2)" in src  # CLK_LOCAL | CLK_GLOBAL, GLOBAL
    assert "atomic_or(" in src and "atomic_xchg(" in src and "atomic_cmpxchg(" in src
    assert re.search(r"__local float rp_smem_ptr\[\d+\];", src)
    assert not re.search(r"\(\((?:float|int|uchar)\d?\*\)rp_smem_ptr", src)  # no private cast
    assert "__launch_bounds__" not in src and "tirx.kernel_launch_params" not in (
        kernel.func.attrs or {})


def test_masked_rtasks_reach_every_barrier_with_all_threads(kernels, plan):
    kernel, _ = kernels[H100]
    masked = [op for op, rop in kernel.rops.items() if rop.threads < kernel.threads]
    assert masked  # the 128-thread convs in 1024-thread vEUs
    names = {"threadIdx_x", "tid"} | {f"{op}_tid" for op in masked}
    assert has_barrier(kernel.func.body)  # the block barriers between rTasks
    assert not guarded_barriers(kernel.func.body, names)
    bodies = [f.body for f in kernel.functions.values()]  # the ops' own, in device functions
    assert any(has_barrier(body) for body in bodies)
    assert not any(guarded_barriers(body, names) for body in bodies)


def test_same_plan_renders_both_targets_from_one_builder(kernels):
    (cuda, _), (opencl, _) = kernels[H100], kernels["opencl"]
    assert cuda.tables == opencl.tables and cuda.program is opencl.program
    assert [p.name for p in cuda.func.params] == [p.name for p in opencl.func.params]
