"""SplitInstances: instances on slices plus concatenations, checked as IR and by running."""
import pytest
import tvm
from tvm.script import ir as I
from tvm.script import relax as R

from tvm_ios import models
from tvm_ios.graphturbo.hwspec import HardwareSpec
from tvm_ios.graphturbo.layers import GraphTurboError
from tvm_ios.passes.graphturbo_attr import load
from tvm_ios.passes.group_subgraphs import GroupSubgraphs
from tvm_ios.passes.order_instances import OrderInstances
from tvm_ios.passes.split_instances import SplitInstances
from tvm_ios.runtime.compare import compare_modules


def tiny(lb_bytes, cores=8):
    return HardwareSpec("tiny", 1, cores, lb_bytes, 1 << 20, 100.0, 8000.0)


@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor((1, 2, 4, 4), "float32")) -> R.Tensor((1, 2, 4, 4), "float32"):
        with R.dataflow():
            gv = R.nn.relu(x)
            R.output(gv)
        return gv


@I.ir_module
class Expected:
    @R.function
    def main(x: R.Tensor((1, 2, 4, 4), "float32")) -> R.Tensor((1, 2, 4, 4), "float32"):
        with R.dataflow():
            a = R.strided_slice(x, axes=[1], begin=[0], end=[1])
            b = R.nn.relu(a)
            c = R.strided_slice(x, axes=[1], begin=[1], end=[2])
            d = R.nn.relu(c)
            gv = R.concat((b, d), axis=1)
            R.output(gv)
        return gv


@I.ir_module
class ExpectedOutlined:
    @R.function(private=True)
    def gt0_0_inst(a: R.Tensor((1, 1, 4, 4), "float32")) -> R.Tensor((1, 1, 4, 4), "float32"):
        with R.dataflow():
            b = R.nn.relu(a)
            c = b
            R.output(c)
        return c

    @R.function
    def main(x: R.Tensor((1, 2, 4, 4), "float32")) -> R.Tensor((1, 2, 4, 4), "float32"):
        cls = ExpectedOutlined
        with R.dataflow():
            a = R.strided_slice(x, axes=[1], begin=[0], end=[1])
            b = cls.gt0_0_inst(a)
            c = R.strided_slice(x, axes=[1], begin=[1], end=[2])
            d = cls.gt0_0_inst(c)
            gv = R.concat((b, d), axis=1)
            R.output(gv)
        return gv


def test_instances_become_calls_of_one_shared_function():
    # both halves are the same computation, so they call one private function
    before = Before.clone()
    after = SplitInstances(tiny(128, cores=1))(Before)
    tvm.ir.assert_structural_equal(tvm.IRModule(after.functions), ExpectedOutlined)
    tvm.ir.assert_structural_equal(Before, before)  # the caller's module is left as it was


def test_relu_split_in_two_along_channels():
    # 128 B in + 128 B out, 128 B of LB: two instances; Eq. (1) picks C (N is 1)
    after = SplitInstances(tiny(128, cores=1), outline=False)(Before)
    tvm.ir.assert_structural_equal(after["main"], Expected["main"])
    plan = load(after, "main")["plan"]
    assert [(sg["dim"], sg["factor"]) for sg in plan["sgs"]] == [(1, 2)]


@I.ir_module
class ConvBefore:
    @R.function
    def main(x: R.Tensor((1, 1, 4, 4), "float32"), w: R.Tensor((1, 1, 3, 3), "float32")):
        with R.dataflow():
            gv = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])
            R.output(gv)
        return gv


@I.ir_module
class ConvExpected:
    @R.function
    def main(x: R.Tensor((1, 1, 4, 4), "float32"), w: R.Tensor((1, 1, 3, 3), "float32")):
        with R.dataflow():
            a = R.strided_slice(x, axes=[2], begin=[0], end=[3])
            b = R.nn.conv2d(a, w, padding=[1, 1, 0, 1])
            c = R.strided_slice(x, axes=[2], begin=[1], end=[4])
            d = R.nn.conv2d(c, w, padding=[0, 1, 1, 1])
            gv = R.concat((b, d), axis=2)
            R.output(gv)
        return gv


def test_conv_split_in_two_along_rows_with_a_halo():
    # 64 B in + 64 B out; an instance of 2 output rows reads 3 input rows (48 + 32 B <= 80 B);
    # the padding row survives only at the tensor's real border
    after = SplitInstances(tiny(80, cores=1), outline=False)(ConvBefore)
    tvm.ir.assert_structural_equal(after["main"], ConvExpected["main"])


def test_split_network_computes_the_same_outputs():
    mod, params = models.get("squeezenet", batch_size=2, image_size=32)
    seq = tvm.transform.Sequential([GroupSubgraphs(tiny(4096)), SplitInstances()])
    after = seq(mod)
    plan = load(after, "main")["plan"]
    dims = {sg["dim"] for sg in plan["sgs"] if sg["factor"] > 1}
    assert {0, 2} <= dims  # batch splits and row splits with halos
    text = after["main"].script()
    assert "R.strided_slice" in text and "R.concat" in text
    assert compare_modules(mod, after, params).max_abs_diff < 1e-4


def test_too_small_local_buffer_is_refused_by_the_pass():
    mod, _ = models.get("squeezenet", batch_size=1, image_size=32)
    with pytest.raises(GraphTurboError, match="local buffer"):
        SplitInstances(tiny(16))(mod)


def test_missing_function_is_named():
    with pytest.raises(ValueError, match="SplitInstances: module has no function 'f'"):
        SplitInstances(tiny(128), func_name="f")(Before)


ZOO_SIZES = {"resnet50": 64, "mobilenet_v2": 112, "inception_v3": 80, "squeezenet": 128}


@pytest.mark.slow
@pytest.mark.parametrize("hw", ["dsa", "h100"])
@pytest.mark.parametrize("name", sorted(ZOO_SIZES))
def test_zoo_models_match_after_graphturbo(name, hw):
    mod, params = models.get(name, batch_size=2, image_size=ZOO_SIZES[name])
    seq = tvm.transform.Sequential([GroupSubgraphs(hw), SplitInstances(), OrderInstances()])
    after = seq(mod)
    if hw == "dsa":  # the DSA's 512 KB of L1 makes these split (batch and rows)
        assert any(sg["factor"] > 1 for sg in load(after, "main")["plan"]["sgs"])
    assert compare_modules(mod, after, params).max_abs_diff < 1e-3
