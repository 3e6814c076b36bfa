"""The CPU table's columns: same outputs from PyTorch, ONNX Runtime and TVM, stated threads."""
import numpy as np
import pytest

from tvm_ios import models
from tvm_ios.bench import cpu_baselines as cb
from tvm_ios.bench import cpu_builds

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install "
                                            "'tvm-ios[bench]')")


@pytest.fixture(scope="module")
def squeezenet():
    net = models.net("squeezenet", image_size=32)
    mod, params = models.get("squeezenet", image_size=32)
    x = np.random.default_rng(0).standard_normal(net.input_node.shape).astype("float32")
    return net, mod, params, x


def test_torch_and_tvm_columns_agree_at_the_stated_threads(squeezenet):
    from tvm_ios import _tvm

    net, mod, params, x = squeezenet
    run = cb.torch_runner(net, params, threads=1)
    assert torch.get_num_threads() == 1
    reference = cb.to_numpy(cb.tvm_runner(cpu_builds.build_default(
        _tvm.bind_params(mod, params)), 1)(x))
    assert cb.max_abs_diff(run(x), reference) < 1e-4
    median, samples = cb.time_runner(run, x, repeat=3, warmup=1)
    assert len(samples) == 3 and median > 0


def test_onnx_runtime_columns_agree(squeezenet):
    pytest.importorskip("onnxruntime", reason="onnxruntime is not installed (pip install "
                                              "'tvm-ios[bench]')")
    net, _, params, x = squeezenet
    model = cb.export_onnx(net, params, x)
    expected = cb.to_numpy(cb.torch_runner(net, params, 1)(x))
    for parallel in (False, True):
        out = cb.onnx_runner(model, threads=2, parallel=parallel)(x)
        assert cb.max_abs_diff(out, expected) < 1e-4


def test_a_wrong_output_is_caught(squeezenet):
    net, _, params, x = squeezenet
    out = cb.torch_runner(net, params, 1)(x)
    with pytest.raises(AssertionError, match="shape"):
        cb.max_abs_diff(out, np.zeros((1, 3)))
    assert cb.max_abs_diff(out, cb.to_numpy(out) + 0.5) == pytest.approx(0.5, abs=1e-6)
