"""GPU rOperators from TVM's dlight kernels, cut at blockIdx (no GPU needed)."""
import numpy as np
import pytest
import tvm
from tvm import relax, tirx

from tvm_ios import _tvm
from tvm_ios.kernels.gpu.roperator import gpu_roperator, rtask_target
from tvm_ios.kernels.gpu.rtask_mask import guarded_barriers, has_barrier
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


AVG = lambda x: relax.op.nn.avg_pool2d(x, (3, 3), padding=(1, 1),  # noqa: E731
                                       count_include_pad=False)
MAX = lambda x: relax.op.nn.max_pool2d(x, (3, 3), padding=(1, 1))  # noqa: E731
CONV = lambda x: relax.op.nn.conv2d(x, relax.const(np.ones((16, 32, 3, 3), "float32")),  # noqa: E731
                                    padding=(1, 1))


def _vars(node) -> list:
    found = []
    _tvm.structural_map(node, (tirx.Var, lambda var: (found.append(var), var)[1]))
    return found


def _free_vars(node) -> set:
    return {var.name for var in _vars(node)}


def _body(rop, veu_threads):
    bufs = [tirx.decl_buffer((1 << 16,), "float32", f"buf{i}") for i in range(len(rop.params))]
    smem = tirx.decl_buffer((max(rop.smem_bytes // 4, 4),), "float32", "smem", scope="shared")
    return rop.task_body(tirx.Var("rtask", "int32"), tirx.Var("tid", "int32"), veu_threads,
                         bufs, smem)


@pytest.mark.parametrize("make", [AVG, MAX, CONV], ids=["avg", "max", "conv"])
def test_kernels_become_rtask_bodies_of_rtask_and_thread_index(make):
    rop = gpu_roperator("op", _step(make), H100)
    assert rop.num_tasks >= 1 and rop.threads >= 8
    body = _body(rop, rop.threads)
    launch = {v.name for v in rop.launch_vars.values()}
    assert launch and not launch & _free_vars(body)  # blockIdx/threadIdx all substituted
    assert {"rtask", "tid"} <= _free_vars(body)
    used = _vars(body)
    assert not [p for p in rop.params if any(v.same_as(p) for v in used)]  # ours instead


def test_no_warp_shuffles_in_rtask_kernels():
    """Lowered with a warp size of one: the average pool's reduction goes through shared
    memory, which both CUDA and OpenCL render (no warp shuffle)."""
    assert int(rtask_target(H100).attrs["thread_warp_size"]) == 1
    rop = gpu_roperator("avg", _step(AVG), H100)
    calls = set()
    _tvm.structural_map(rop.body, (tvm.ir.expr.Call, lambda c: (calls.add(c.op.name), c)[1]))
    assert not [c for c in calls if "warp" in c or "shuffle" in c]
    assert rop.smem_var is not None and rop.smem_bytes >= 8 and has_barrier(rop.body)


def test_avg_pool_one_element_shared_buffers_are_merged():
    """TVM's cross-thread reduction of an average pool has one-float shared buffers, which
    MergeSharedMemoryAllocations alone cannot place; padded, they merge into one buffer."""
    rop = gpu_roperator("avg", _step(AVG), H100)
    assert rop.smem_var is not None and rop.smem_bytes >= 8


def test_a_narrower_rtask_is_masked_around_its_barriers():
    rop = gpu_roperator("conv", _step(CONV), H100)
    assert has_barrier(rop.body)
    body = _body(rop, rop.threads * 4)
    text = tirx.PrimFunc([], body).script()
    assert f"T.Select(tid < {rop.threads}, tid, 0)" in text  # idle threads act as thread 0
    assert f"if tid < {rop.threads}:" in text and has_barrier(body)
    assert not guarded_barriers(body, {"tid", "conv_tid"})
    # the shape of a named barrier (everything under the guard) is what the check catches
    assert guarded_barriers(tirx.IfThenElse(tirx.Var("tid", "int32") < rop.threads, body,
                                            None), {"tid"})


@pytest.mark.parametrize("max_tasks", [4, 7, 1 << 20])
def test_an_op_of_more_blocks_than_the_cap_runs_several_blocks_per_rtask(max_tasks):
    """dlight gives an average pool one block per output element (2592 here): at most
    ``max_tasks`` rTasks, each looping over its ``grain`` blocks, the last one guarded."""
    rop = gpu_roperator("op", _step(AVG), H100, max_tasks=max_tasks)
    assert rop.blocks == 32 * 9 * 9 and rop.num_tasks <= max_tasks
    assert rop.num_tasks * rop.grain >= rop.blocks > (rop.num_tasks - 1) * rop.grain
    barrier = tirx.Evaluate(tirx.IntImm("int32", 7))
    bufs = [tirx.decl_buffer((1 << 16,), "float32", f"buf{i}") for i in range(len(rop.params))]
    smem = tirx.decl_buffer((max(rop.smem_bytes // 4, 4),), "float32", "smem", scope="shared")
    body = rop.task_body(tirx.Var("rtask", "int32"), tirx.Var("tid", "int32"), rop.threads,
                         bufs, smem, barrier)
    if rop.grain == 1:
        assert not isinstance(body, tirx.For)
        return
    assert isinstance(body, tirx.For) and int(body.extent) == rop.grain
    guarded, barrier_after = body.body.seq  # the pool's reduction shares memory: a barrier
    assert barrier_after.same_as(barrier) and isinstance(guarded, tirx.IfThenElse)
    block = tirx.Var("rtask", "int32") * rop.grain + body.loop_var
    tvm.ir.assert_structural_equal(guarded.condition, block < rop.blocks, map_free_vars=True)


def test_an_identical_kernel_is_lowered_once_and_gets_fresh_definitions(monkeypatch):
    from tvm_ios.kernels.gpu import roperator

    # a cache of its own: other tests in this worker have lowered kernels before
    cache = roperator._LoweredKernels()
    monkeypatch.setattr(roperator, "_KERNELS", cache)
    first = gpu_roperator("a", _step(CONV), H100)
    assert (cache.hits, cache.misses) == (0, 1)
    second = gpu_roperator("b", _step(CONV), H100)  # another op, the same kernel
    assert (cache.hits, cache.misses) == (1, 1)
    assert (second.grid, second.block, second.smem_bytes) == (first.grid, first.block,
                                                              first.smem_bytes)
    # two ops of one rProgram kernel must not define the same variables (the launch
    # variables are not defined: task_body substitutes them)
    assert _tvm.structural_equal(first.body, second.body, map_free_vars=True)
    launch = set(first.launch_vars.values())
    shared = ({v for v in _vars(first.body)} & {v for v in _vars(second.body)}) - launch
    assert not shared, sorted(v.name for v in shared)[:5]
    assert not any(p.same_as(q) for p in first.params for q in second.params)
    other = gpu_roperator("c", _step(AVG), H100)  # another kernel is no hit
    assert (cache.hits, cache.misses) == (1, 2) and other.grid != first.grid
