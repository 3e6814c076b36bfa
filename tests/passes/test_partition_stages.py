"""PartitionStages: Before/Expected IR, outputs equal to the unpartitioned build, bad cuts."""
import numpy as np
import pytest
import tvm
import tvm_ffi
from tvm.script import ir as I
from tvm.script import relax as R

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


@I.ir_module
class Residual:
    @R.function
    def main(x: R.Tensor((1, 4, 8, 8), "float32"), w0: R.Tensor((4, 4, 3, 3), "float32"),
             w1: R.Tensor((4, 4, 3, 3), "float32")) -> R.Tensor((1, 4, 4, 4), "float32"):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            a0 = R.nn.conv2d(x, w0, padding=[1, 1])
            a = R.nn.relu(a0)
            b = R.nn.conv2d(a, w1, padding=[1, 1])
            c0 = R.add(b, a)
            c = R.nn.relu(c0)
            d = R.nn.max_pool2d(c, pool_size=[2, 2], strides=[2, 2])
            R.output(d)
        return d


def test_outputs_equal_unpartitioned_build():
    rng = np.random.default_rng(0)
    params = {k: rng.standard_normal((4, 4, 3, 3)).astype("float32") for k in ("w0", "w1")}
    ext = extract(Residual["main"])
    assert len(ext.units) == 3                      # conv+relu, conv, pool
    parted = PartitionStages(layer_cuts(ext, [1, 1, 1]))(Residual)
    names = [gv.name_hint for gv in parted.get_global_vars()]
    assert sorted(names) == ["main", "main_stage0", "main_stage1", "main_stage2"]
    assert compare_modules(Residual, parted, params).max_abs_diff < 1e-5
    assert len(stage_module(parted, "main_stage1").get_global_vars()) == 1
    # a pipeline: each stage's outputs are the next stage's inputs (a and w1 pass through)
    for k in range(2):
        outs = parted[f"main_stage{k}"].ret_ty.fields
        ins = [p.ty for p in parted[f"main_stage{k + 1}"].params]
        assert len(outs) == len(ins)
        assert all(tvm_ffi.structural_equal(a, b) for a, b in zip(outs, ins))
    # x is not needed after stage 0; w1 and a are (parameters before bindings)
    assert [_tvm.var_name(p) for p in parted["main_stage1"].params] == ["w1", "a"]


@pytest.mark.parametrize("cuts", [[0], [3, 3], [99], [2, 1]])
def test_bad_cuts_are_named(cuts):
    with pytest.raises(ValueError, match="PartitionStages: cuts"):
        PartitionStages(cuts)(Before)


def test_layer_cuts_must_cover_layers():
    ext = extract(Residual["main"])
    with pytest.raises(ValueError, match="cover the 3 layers"):
        layer_cuts(ext, [2, 2])
