"""TVM's own default TIR pipeline, cut at MergeSharedMemoryAllocations (no copied pass list).

If TVM moves the passes the merge depends on after the cut, or adds a pass to the tail, the
halves differ from what the persistent kernels were checked with and these tests fail.
"""
import pytest
import tvm

from tvm_ios.kernels.gpu import tir_pipeline
from tvm_ios.kernels.gpu.tir_pipeline import CUT, PipelineCutError, lower_to_merge, pipeline_halves

#: The tail the persistent kernels were built and simulated with (TVM 0.27).
CHECKED_TAIL = ["tirx.SplitHostDevice", "tirx.ConvertSSA", "tirx.MakePackedAPI",
                "tirx.FP8StorageLegalize", "tirx.BF16StorageLegalize"]


@pytest.fixture(scope="module")
def halves():
    return pipeline_halves("nvidia/nvidia-h100")


def test_the_merge_needs_are_in_the_head(halves):
    head, _ = halves
    # syncs are inserted and reductions lowered per kernel, before the kernels are merged
    assert head.count("s_tir.ThreadSync") == 3
    for name in ("s_tir.LowerThreadAllreduce", "tirx.FlattenBuffer", "tirx.VectorizeLoop",
                 "s_tir.LowerOpaqueBlock", "s_tir.InjectSoftwarePipeline"):
        assert name in head
    assert CUT not in head and "tirx.SplitHostDevice" not in head


def test_the_tail_is_the_host_device_split_only(halves):
    _, tail = halves
    assert tail == CHECKED_TAIL


def test_a_pipeline_without_the_cut_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(tir_pipeline, "CUT", "s_tir.NoSuchPass")
    from tvm.script import tirx as T

    @T.prim_func
    def f(a: T.Buffer((4,), "float32")):
        for i in range(4):
            a[i] = a[i] + T.float32(1)
    mod = tvm.tirx.transform.BindTarget(tvm.target.Target("llvm"))(tvm.IRModule({"f": f}))
    with pytest.raises(PipelineCutError, match="no pass s_tir.NoSuchPass"):
        lower_to_merge(mod)


def test_no_pipeline_is_registered_globally():
    from tvm.tirx import compilation_pipeline

    import tvm_ios.kernels.gpu.build  # noqa: F401
    import tvm_ios.passes.rprogram_pass  # noqa: F401

    assert not [name for name in compilation_pipeline.PIPELINE_MAP if "tvm_ios" in name]
