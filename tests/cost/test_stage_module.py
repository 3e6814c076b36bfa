"""Stage modules: right inputs and outputs, keys shared by identical blocks, exact merges."""
import numpy as np
import pytest

from tvm_ios.cost.signature import StageSigner
from tvm_ios.cost.stage_module import op_stages, stage_module
from tvm_ios.graph.extract import extract
from tvm_ios.runtime.compare import build, random_inputs, run


@pytest.fixture(scope="module")
def ext(tiny):
    return extract(tiny["main"])


def test_one_op_stage_takes_activation_and_lifted_weights(ext):
    stage = stage_module(ext, [[0]])
    func = stage.mod["main"]
    assert stage.inputs == [((1, 8, 8, 8), "float32")]
    assert int(func.attrs["num_input"]) == 1
    assert len(func.params) == 3  # input, conv weight, bias (constants lifted)


def test_identical_blocks_share_keys_and_different_stages_do_not(ext):
    first = stage_module(ext, [[0], [1], [2, 3]]).key
    second = stage_module(ext, [[5], [6], [7, 8]]).key
    assert first == second
    assert stage_module(ext, [[0]]).key == stage_module(ext, [[5]]).key
    assert stage_module(ext, [[0]]).key != stage_module(ext, [[1]]).key  # 1x1 vs 3x3
    assert stage_module(ext, [[0], [1]]).key != stage_module(ext, [[0], [1]], merge=True).key


def test_merged_stage_computes_what_the_groups_compute(ext):
    sequential = stage_module(ext, [[0], [1], [2]])
    merged = stage_module(ext, [[0], [1], [2]], merge=True)
    assert "concat" in str(merged.mod) and "split" in str(merged.mod)
    rng = np.random.default_rng(1)
    weights = [rng.standard_normal([int(d) for d in p.ty.shape]).astype("float32")
               for p in list(sequential.mod["main"].params)[1:]]
    x = random_inputs(sequential.mod)
    out_seq = run(build(sequential.mod), x + weights)
    out_merged = run(build(merged.mod), x + weights)
    for a, b in zip(out_seq, out_merged):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_unmergeable_stage_is_refused(ext):
    with pytest.raises(ValueError, match="cannot be merged"):
        stage_module(ext, [[0], [4]], merge=True)  # a conv and a pool


def test_op_stages_hold_each_op_alone_once_per_signature(tiny, ext):
    signer = StageSigner(ext)
    distinct = {signer.signature([[i]]) for i in range(len(ext.graph))}
    mods = op_stages(tiny, "llvm")
    assert len(mods) == len(distinct) < len(ext.graph)  # identical blocks: once
    assert all(len(m["main"].params) == 1 for m in mods)  # weights bound, as measured
