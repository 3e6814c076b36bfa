"""The small real models shipped inside the `onnx` package (opset 9, initializers listed as
graph inputs, weights made by ConstantOfShape, LRN, batch norms) import, schedule, compile
through the pipeline and match TVM's default build of the same file.

Their weights are all 0.02, so every channel is the same and the softmax output is uniform
(0.001): a wrong concat order or a dropped branch would still match. The checks therefore
also run a copy of each file "of the same kind" whose constant subgraphs make random
weights (``Mul(ConstantOfShape(shape), scale)``, initializers still listed as inputs).
"""
import json
import os

import numpy as np
import pytest
import tvm

from tvm_ios import _tvm
from tvm_ios.cli.main import main
from tvm_ios.models import from_onnx
from tvm_ios.relax_pipeline import pipeline
from tvm_ios.runtime.compare import build, random_inputs, run
from tvm_ios.testing import onnx_random_weights

onnx = pytest.importorskip("onnx")
from onnx import numpy_helper, version_converter
from onnx.reference import ReferenceEvaluator

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")



def _check_pipeline(path, inputs=None):
    """Compile ``path`` through the pipeline and by TVM's default build; same outputs."""
    mod, params = from_onnx(path)
    bound = _tvm.bind_params(mod, params)
    inputs = inputs or random_inputs(bound)
    p = pipeline(engine="rprogram")
    got = run(tvm.compile(bound, "llvm", relax_pipeline=p), inputs)
    want = run(build(bound), inputs)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    assert p.report["stages"] > 0 and "RProgramPass" in p.report["passes"]
    return got


def test_light_squeezenet_random_copy_matches_default_and_reference(tmp_path):
    path = tmp_path / "light_squeezenet_random.onnx"
    onnx.save(onnx_random_weights(onnx.load(os.path.join(LIGHT, "light_squeezenet.onnx"))), path)
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype("float32")
    got = _check_pipeline(path, [x])
    # onnx's evaluator runs opset-9 Softmax with opset-13 semantics: convert the file first
    model = version_converter.convert_version(onnx.load(path), 13)
    want = ReferenceEvaluator(model).run(None, {"data_0": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-6)
    assert np.std(want) > 1e-3 * np.max(want)  # not uniform, unlike the shipped file's


@pytest.mark.slow
@pytest.mark.parametrize("name", ["light_inception_v1", "light_squeezenet", "light_resnet50"])
def test_light_model_and_its_random_copy_through_the_pipeline(name, tmp_path):
    original = os.path.join(LIGHT, f"{name}.onnx")
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype("float32")
    stored = onnx.TensorProto()
    with open(os.path.join(LIGHT, f"{name}_output_0.pb"), "rb") as handle:
        stored.ParseFromString(handle.read())
    got = _check_pipeline(original, [x])
    np.testing.assert_allclose(got.reshape(-1), numpy_helper.to_array(stored).reshape(-1),
                               atol=1e-6)
    random = tmp_path / f"{name}_random.onnx"
    onnx.save(onnx_random_weights(onnx.load(original)), random)
    got = _check_pipeline(random, [x])
    assert np.std(got) > 1e-3 * np.max(got)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["light_inception_v1", "light_squeezenet", "light_resnet50"])
def test_run_rprogram_on_the_file_as_shipped(name, tmp_path):
    """The issue's check, as a user types it."""
    out = tmp_path / "r.json"
    assert main(["run", "--model", os.path.join(LIGHT, f"{name}.onnx"), "--engine",
                 "rprogram", "--repeat", "1", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["max_abs_diff"] < 1e-3
