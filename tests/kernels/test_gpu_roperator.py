"""GPU rOperators from TVM's dlight kernels, cut at blockIdx (no GPU needed)."""
import pytest
import tvm
from tvm import relax

from tvm_ios.kernels.gpu_roperator import gpu_roperator
from tvm_ios.kernels.tvm_kernels import lower_bindings

H100 = tvm.target.Target("nvidia/nvidia-h100")


def _step(make):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 32, 9, 9), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(make(x)))
        bb.emit_func_output(out)
    bindings = list(bb.get()["main"].body.blocks[0].bindings)
    (step,) = lower_bindings(bindings, bindings[-1].var)
    return step


@pytest.mark.parametrize("make", [
    lambda x: relax.op.nn.avg_pool2d(x, (3, 3), padding=(1, 1), count_include_pad=False),
    lambda x: relax.op.nn.max_pool2d(x, (3, 3), padding=(1, 1))], ids=["avg", "max"])
def test_pools_become_roperators(make):
    rop = gpu_roperator("pool", _step(make), H100)
    assert rop.num_tasks >= 1 and rop.threads >= 32
    body = rop.task_body(tvm.tirx.Var("t", "int32"), tvm.tirx.Var("tid", "int32"),
                         rop.threads, [tvm.tirx.decl_buffer((1,), "float32", n)
                                       for n in ("a", "b")],
                         tvm.tirx.decl_buffer((max(rop.smem_bytes, 16),), "uint8", "s",
                                              scope="shared.dyn"))
    assert body is not None


def test_avg_pool_one_element_shared_buffers_are_merged():
    """TVM's cross-thread reduction of an average pool has one-float shared buffers, which
    MergeSharedMemoryAllocations alone cannot place; padded, they merge into one buffer."""
    rop = gpu_roperator("avg", _step(lambda x: relax.op.nn.avg_pool2d(
        x, (3, 3), padding=(1, 1), count_include_pad=False)), H100)
    assert rop.smem_var is not None and rop.smem_bytes >= 8
