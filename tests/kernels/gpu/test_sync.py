"""The per-target synchronisation table: one strategy object per GPU target kind."""
import pytest
import tvm

from tvm_ios import _tvm
from tvm_ios.kernels.gpu.sync import CudaSync, OpenCLSync, sync_for

OPS = ("poll", "signal", "atomic_add", "atomic_cas", "fence", "block_barrier", "pause",
       "launch_bounds", "kernel_attrs")


def test_one_strategy_per_gpu_kind_with_the_same_operations():
    assert isinstance(sync_for(_tvm.make_target("nvidia/nvidia-h100")), CudaSync)
    assert isinstance(sync_for(_tvm.make_target("opencl")), OpenCLSync)
    for cls in (CudaSync, OpenCLSync):
        assert all(callable(getattr(cls, op)) for op in OPS)
    assert (CudaSync.smem_scope, OpenCLSync.smem_scope) == ("shared.dyn", "shared")
    with pytest.raises(ValueError, match="target kind 'llvm'"):
        sync_for(_tvm.make_target("llvm"))


def test_opencl_barrier_fences_local_and_global_memory():
    barrier = OpenCLSync().block_barrier().value
    assert barrier.args[0].value == "barrier" and int(barrier.args[1]) == 3  # LOCAL | GLOBAL
    fence = OpenCLSync().fence().value
    assert fence.args[0].value == "mem_fence" and int(fence.args[1]) == 2  # GLOBAL
    assert OpenCLSync().pause() is None


def test_cuda_uses_release_acquire_and_cooperative_launch():
    steps = _tvm.tirx.decl_buffer((4,), "int32", "s")
    dst = _tvm.tirx.decl_buffer((1,), "int32", "d", scope="local")
    sync = CudaSync()
    assert "acquire" in str(sync.poll(dst, steps.access_ptr("r")))
    assert "release" in str(sync.signal(steps.access_ptr("w"), 1))
    func = sync.kernel_attrs(tvm.tirx.PrimFunc([], tvm.tirx.Evaluate(0)))
    assert list(func.attrs["tirx.kernel_launch_params"]) == ["tirx.use_cooperative_launch"]
