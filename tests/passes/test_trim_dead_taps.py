"""TrimDeadTaps: taps that read only padding are cut; checked by hand, as IR and by running."""
import numpy as np
import pytest
import tvm
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R

from tvm_ios import _tvm
from tvm_ios.tuning.kernel_db import KernelDB, host_target
from tvm_ios.tuning.search import tune_kernels
from tvm_ios.passes.trim_dead_taps import TrimDeadTaps, live_taps, trim_for_kernels
from tvm_ios.runtime.compare import compare_modules


@pytest.mark.parametrize("n, before, kernel, stride, dilation, out, expected", [
    (1, 1, 3, 1, 1, 1, (1, 1)),  # 1x3 on a 1-wide map: only the centre tap
    (3, 3, 7, 1, 1, 3, (1, 5)),  # 1x7 on a 3-wide map: the outer two taps read padding
    (5, 1, 3, 1, 1, 5, (0, 2)),  # every tap reads input somewhere
    (2, 2, 5, 2, 1, 2, (0, 3)),  # stride 2: o=0 reads with taps 2..3, o=1 with taps 0..1
    (1, 2, 3, 1, 2, 1, (1, 1)),  # dilation 2: taps at -2, 0, 2
    (2, 0, 3, 1, 1, 0, None),    # no output position: no live tap
])
def test_live_taps_by_hand(n, before, kernel, stride, dilation, out, expected):
    assert live_taps(n, before, kernel, stride, dilation, out) == expected


@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor((1, 8, 1, 1), "float32"), w: R.Tensor((4, 8, 1, 3), "float32")):
        with R.dataflow():
            y = R.nn.conv2d(x, w, padding=[0, 1, 0, 1])
            R.output(y)
        return y


@I.ir_module
class Expected:
    @R.function
    def main(x: R.Tensor((1, 8, 1, 1), "float32"), w: R.Tensor((4, 8, 1, 3), "float32")):
        with R.dataflow():
            lv = R.strided_slice(w, axes=[3], begin=[1], end=[2])
            y = R.nn.conv2d(x, lv, padding=[0, 0, 0, 0], out_dtype="float32")
            R.output(y)
        return y


def test_before_expected():
    tvm.ir.assert_structural_equal(TrimDeadTaps(fold=False, bound_only=False)(Before), Expected)
    tvm.ir.assert_structural_equal(TrimDeadTaps()(Before), Before)  # w is passed in: left


def _conv_module(in_shape, weight_shape, **attrs):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType(in_shape, "float32"))
    w = relax.Var("w", relax.TensorType(weight_shape, "float32"))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.relu(bb.emit(relax.op.nn.conv2d(x, w, **attrs))))
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    return bb.get()


def _weights(mod) -> list:
    found = []
    relax.analysis.post_order_visit(mod["main"], lambda e: found.append(
        _tvm.shape_of(e)) if _tvm.is_tensor_constant(e) else None)
    return found


@pytest.mark.parametrize("in_shape, weight_shape, attrs, kept", [
    ((1, 6, 1, 1), (5, 6, 3, 3), dict(padding=[1, 1, 1, 1]), (5, 6, 1, 1)),
    ((1, 6, 3, 3), (5, 6, 1, 7), dict(padding=[0, 3, 0, 3]), (5, 6, 1, 5)),
    ((1, 6, 3, 3), (5, 6, 7, 1), dict(padding=[3, 0, 3, 0]), (5, 6, 5, 1)),
    ((1, 6, 2, 3), (5, 6, 5, 5), dict(padding=[2, 1, 3, 2], strides=[2, 1]), (5, 6, 4, 4)),
    ((1, 6, 2, 2), (6, 1, 5, 5), dict(padding=[2, 2, 2, 2], groups=6), (6, 1, 3, 3)),
    ((1, 6, 1, 1), (5, 6, 3, 3), dict(padding=[2, 2, 2, 2], dilation=[2, 2]), (5, 6, 1, 1)),
])
def test_trimmed_builds_compute_the_same(in_shape, weight_shape, attrs, kept):
    rng = np.random.default_rng(0)
    mod = _conv_module(in_shape, weight_shape, **attrs)
    params = {"w": rng.standard_normal(weight_shape).astype("float32")}
    bound = _tvm.bind_params(mod, params)
    trimmed = TrimDeadTaps()(bound)
    assert _weights(trimmed) == [kept]  # the dead taps' weights are gone from the build
    result = compare_modules(bound, trimmed)
    assert result.max_abs_diff <= 1e-5 * max(1.0, result.max_abs_value)


def test_inception_v3_reads_fewer_weight_bytes():
    from tvm_ios import models
    mod, params = models.get("inception_v3", image_size=75, calibrate=False)
    bound = _tvm.bind_params(mod, params)
    trimmed = TrimDeadTaps()(bound)

    def nbytes(m):
        seen = []
        relax.analysis.post_order_visit(m["main"], lambda e: seen.append(
            _tvm.constant_nbytes(e)) if _tvm.is_tensor_constant(e) else None)
        return sum(seen)
    assert nbytes(trimmed) < 0.75 * nbytes(bound)  # 95 MB -> 69 MB at 75 px
    result = compare_modules(bound, trimmed)
    assert result.max_abs_diff <= 1e-4 * max(1.0, result.max_abs_value)


def test_a_database_without_the_trimmed_kernels_keeps_the_graph(tmp_path, caplog):
    mod = _conv_module((1, 8, 3, 3), (8, 8, 1, 7), padding=[0, 3, 0, 3])
    rng = np.random.default_rng(1)
    bound = _tvm.bind_params(mod, {"w": rng.standard_normal((8, 8, 1, 7)).astype("float32")})
    assert isinstance(trim_for_kernels(bound), TrimDeadTaps)  # no database: cut
    kernels = KernelDB(tmp_path, host_target(), create=True)
    tune_kernels(bound, kernels, variants=("parallel",), trials=2, cover=2, min_repeat_ms=1)
    assert trim_for_kernels(bound, kernels) is None  # its 1x5 kernel would run untuned
    assert "lacks tuned kernels for the trimmed convolutions" in caplog.text
    assert isinstance(trim_for_kernels(bound, kernels, cover=4), TrimDeadTaps)  # tuned then
    tune_kernels(TrimDeadTaps()(bound), kernels, variants=("parallel",), trials=0, cover=2,
                 min_repeat_ms=1)
    assert isinstance(trim_for_kernels(bound, kernels), TrimDeadTaps)


def test_live_convolution_left_alone():
    mod = _conv_module((1, 8, 5, 5), (4, 8, 3, 3), padding=[1, 1, 1, 1])
    weight = np.ones((4, 8, 3, 3), "float32")
    bound = _tvm.bind_params(mod, {"w": weight})
    tvm.ir.assert_structural_equal(TrimDeadTaps()(bound), bound)  # every tap reads input


def test_a_blocked_database_is_checked_in_its_layout(tmp_path, caplog):
    from tvm_ios.passes.blocked_layout import in_layout

    mod = _conv_module((1, 8, 3, 3), (8, 8, 1, 7), padding=[0, 3, 0, 3])
    rng = np.random.default_rng(1)
    bound = _tvm.bind_params(mod, {"w": rng.standard_normal((8, 8, 1, 7)).astype("float32")})
    kernels = KernelDB(tmp_path, host_target(), create=True)
    kernels.meta["layout"] = "NCHW8c"  # its kernels: the blocked untrimmed convolution only
    tune_kernels(in_layout(bound, kernels), kernels, variants=("parallel",), trials=2, cover=2,
                 min_repeat_ms=1)
    assert trim_for_kernels(bound, kernels) is None  # the trimmed one would run untuned
    assert "lacks tuned kernels for the trimmed convolutions" in caplog.text
