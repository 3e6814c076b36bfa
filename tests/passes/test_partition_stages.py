"""PartitionStages: Before/Expected IR, outputs equal to the unpartitioned build, bad cuts."""
import pytest
import tvm
import tvm_ffi
from tvm.script import ir as I
from tvm.script import relax as R

from tests.pipelines.tiny import tiny_cnn
from tvm_ios import _tvm
from tvm_ios.graph.extract import extract
from tvm_ios.passes.partition_stages import PartitionStages, layer_cuts, stage_module
from tvm_ios.runtime.compare import compare_modules


@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        with R.dataflow():
            a = R.nn.relu(x)
            b = R.add(a, x)
            c = R.multiply(b, a)
            R.output(c)
        return c


@I.ir_module
class Expected:
    @R.function
    def main_stage0(x: R.Tensor((4,), "float32")
                    ) -> R.Tuple(R.Tensor((4,), "float32"), R.Tensor((4,), "float32")):
        with R.dataflow():
            a = R.nn.relu(x)
            R.output(a)
        return (x, a)

    @R.function
    def main_stage1(x: R.Tensor((4,), "float32"), a: R.Tensor((4,), "float32")
                    ) -> R.Tuple(R.Tensor((4,), "float32")):
        with R.dataflow():
            b = R.add(a, x)
            c = R.multiply(b, a)
            R.output(c)
        return (c,)

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Expected
        s0 = cls.main_stage0(x)
        x1 = s0[0]
        a = s0[1]
        s1 = cls.main_stage1(x1, a)
        c = s1[0]
        return c


def test_before_expected():
    after = PartitionStages([1])(Before)
    tvm.ir.assert_structural_equal(after, Expected)


def test_outputs_equal_unpartitioned_build():
    mod, params = tiny_cnn(size=16)
    mod = _tvm.bind_params(mod, params)
    ext = extract(mod["main"])
    parted = PartitionStages(layer_cuts(ext, [2, 2, 3]))(mod)
    assert [gv.name_hint for gv in parted.get_global_vars()].count("main") == 1
    assert "main_stage2" in [gv.name_hint for gv in parted.get_global_vars()]
    assert compare_modules(mod, parted).max_abs_diff < 1e-5
    assert len(stage_module(parted, "main_stage1").get_global_vars()) == 1
    # a pipeline: each stage's outputs are the next stage's inputs (lv1 passes through)
    for k in range(2):
        outs = parted[f"main_stage{k}"].ret_ty.fields
        ins = [p.ty for p in parted[f"main_stage{k + 1}"].params]
        assert len(outs) == len(ins)
        assert all(tvm_ffi.structural_equal(a, b) for a, b in zip(outs, ins))


@pytest.mark.parametrize("cuts", [[0], [3, 3], [99], [2, 1]])
def test_bad_cuts_are_named(cuts):
    with pytest.raises(ValueError, match="PartitionStages: cuts"):
        PartitionStages(cuts)(Before)


def test_layer_cuts_must_cover_layers():
    mod, params = tiny_cnn(size=8)
    ext = extract(_tvm.bind_params(mod, params)["main"])
    with pytest.raises(ValueError, match="cover the 7 layers"):
        layer_cuts(ext, [2, 2])
