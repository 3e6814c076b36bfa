"""Tests of the ONNX import path (a tiny conv + relu + concat model built with onnx.helper)."""
from __future__ import annotations

import builtins

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tvm_ios import _tvm
from tvm_ios.models import from_onnx, reference


def _tiny_model(path, rng):
    w1 = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b1 = rng.standard_normal(4).astype(np.float32)
    w2 = rng.standard_normal((2, 3, 1, 1)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["x", "w2"], ["c2"]),
             helper.make_node("Concat", ["r1", "c2"], ["y"], axis=1)]
    graph = helper.make_graph(
        nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 6, 8, 8])],
        initializer=[numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
                     numpy_helper.from_array(w2, "w2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return w1, b1, w2


def test_import_and_run(tmp_path):
    rng = np.random.default_rng(0)
    w1, b1, w2 = _tiny_model(tmp_path / "tiny.onnx", rng)
    mod, params = from_onnx(tmp_path / "tiny.onnx", shape_dict={"x": (2, 3, 8, 8)})
    func = mod["main"]
    assert int(func.attrs["num_input"]) == 1 and "params" not in func.attrs
    assert [p.name for p in func.params] == ["x", "w1", "b1", "w2"]
    np.testing.assert_array_equal(params["w1"], w1)
    exe = _tvm.compile_module(_tvm.bind_params(mod, params), "llvm")
    data = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    got = _tvm.virtual_machine(exe)["main"](_tvm.tensor(data)).numpy()
    want = np.concatenate([np.maximum(reference.conv2d(data, w1, b1, padding=(1, 1)), 0),
                           reference.conv2d(data, w2, None)], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        from_onnx(tmp_path / "absent.onnx")


def test_missing_onnx_package(tmp_path, monkeypatch):
    path = tmp_path / "tiny.onnx"
    _tiny_model(path, np.random.default_rng(0))
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "onnx" or name.startswith("onnx."):
            raise ImportError("No module named 'onnx'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(ImportError, match="pip install onnx"):
        from_onnx(path)
