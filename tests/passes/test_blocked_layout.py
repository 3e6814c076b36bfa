"""BlockedLayout: convolutions in NCHW{b}c, checked on IR (Before/Expected) and by running
the rewritten module against the original on random inputs."""
import numpy as np
import pytest
import tvm
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T

from tvm_ios import _tvm, models
from tvm_ios.tuning.kernel_db import KernelDB, host_target
from tvm_ios.kernels.blocked_conv import parse_layout
from tvm_ios.passes.blocked_layout import (BlockedLayout, blocked_layouts, conv_layouts,
                                           in_layout, layout_for_kernels)
from tvm_ios.passes.rprogram_pass import RProgramPass
from tvm_ios.runtime.compare import random_inputs, run
from tvm_ios.testing import Concurrent, dag_model


@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor((1, 16, 4, 4), "float32"), w: R.Tensor((32, 16, 1, 1), "float32")):
        with R.dataflow():
            y = R.nn.conv2d(x, w)
            z = R.nn.relu(y)
            R.output(z)
        return z


@I.ir_module
class Expected:
    @R.function
    def main(x: R.Tensor((1, 16, 4, 4), "float32"), w: R.Tensor((32, 16, 1, 1), "float32")):
        with R.dataflow():
            lv = R.layout_transform(x, index_map=T.index_map(
                lambda n, c, h, w_: (n, c // 16, h, w_, c % 16), index_dtype="int32"))
            lv1 = R.layout_transform(w, index_map=T.index_map(
                lambda o, i, h, w_: (o // 16, i // 16, h, w_, i % 16, o % 16),
                index_dtype="int32"))
            y = R.nn.conv2d(lv, lv1, data_layout="NCHW16c", kernel_layout="OIHW16i16o",
                            out_layout="NCHW16c")
            z = R.nn.relu(y)
            lv2 = R.layout_transform(z, index_map=T.index_map(
                lambda n, c, h, w_, b: (n, c * 16 + b, h, w_), index_dtype="int32"))
            R.output(lv2)
        return lv2


def test_a_convolution_and_its_activation_run_blocked_and_transform_back():
    tvm.ir.assert_structural_equal(BlockedLayout(16)(Before), Expected)


def test_it_runs_once_a_second_time_leaves_the_module_as_it_is():
    once = BlockedLayout(16)(Before)
    tvm.ir.assert_structural_equal(BlockedLayout(16)(once), once)


def test_channels_the_block_does_not_divide_stay_nchw():
    mod, params = models.get("squeezenet", image_size=32)  # 3 input channels, 1000 classes
    layouts = conv_layouts(BlockedLayout(16)(_tvm.bind_params(mod, params)))
    assert layouts.count("NCHW") == 2 and layouts.count("NCHW16c") == len(layouts) - 2
    assert set(conv_layouts(BlockedLayout(8)(_tvm.bind_params(mod, params)))) \
        == {"NCHW", "NCHW8c"}


def test_bound_weights_are_folded_into_blocked_constants():
    mod = dag_model(seed=3, num_ops=3, channels=16, size=6)[0]
    out = BlockedLayout(16)(mod)
    weights = []

    def visit(node):
        if isinstance(node, relax.Call) and _tvm.op_name(node) == "relax.nn.conv2d":
            weights.append(node.args[1])
    relax.analysis.post_order_visit(out["main"], visit)
    assert weights and all(_tvm.is_tensor_constant(w) and len(_tvm.shape_of(w)) == 6
                           for w in weights)


@pytest.mark.parametrize("name,size,block", [("squeezenet", 32, 8), ("inception_v3", 75, 16)])
def test_blocked_models_compute_what_the_originals_do(name, size, block):
    mod, params = models.get(name, image_size=size)
    mod = _tvm.bind_params(mod, params)
    blocked = BlockedLayout(block)(mod)
    assert any(lay == f"NCHW{block}c" for lay in conv_layouts(blocked))
    x = random_inputs(mod)
    ref = run(tvm.compile(mod, "llvm"), x)
    np.testing.assert_allclose(run(tvm.compile(blocked, "llvm"), x), ref, rtol=1e-4,
                               atol=1e-4)


def test_an_rprogram_of_blocked_convolutions_computes_what_the_original_does():
    mod = dag_model(seed=1, num_ops=4, channels=16, size=6, p=0.0)[0]
    blocked = BlockedLayout(16)(mod)
    rewritten = RProgramPass("ios", cost_model=Concurrent())(blocked)
    programs = [f for _, f in rewritten.functions.items()
                if f.attrs is not None and "tvm_ios.rprogram" in f.attrs]
    assert programs and "conv2d_NCHWc" in programs[0].script()
    x = random_inputs(mod)
    np.testing.assert_allclose(run(tvm.compile(rewritten, "llvm"), x),
                               run(tvm.compile(mod, "llvm"), x), rtol=1e-4, atol=1e-4)


def test_layout_names_and_the_database_layout(tmp_path):
    assert parse_layout("NCHW") is None and parse_layout("NCHW16c") == 16
    for bad in ("NHWC", "NCHW1c", "NCHWxc", "nchw16c"):
        with pytest.raises(ValueError, match="NCHW or NCHW<b>c"):
            parse_layout(bad)
    with pytest.raises(ValueError, match="at least 2"):
        blocked_layouts(1)
    kernels = KernelDB(tmp_path, host_target(), create=True)
    assert kernels.layout == "NCHW" and layout_for_kernels(kernels) is None
    assert in_layout(Before, kernels) is Before and in_layout(Before, None) is Before
    kernels.meta["layout"] = "NCHW16c"
    assert kernels.block == 16
    tvm.ir.assert_structural_equal(in_layout(Before, kernels), Expected)
