"""ONNX files as old exporters wrote them: initializers listed as inputs, weights computed by
constant subgraphs, opset 9, LRN. They import, fold, schedule and compile; outputs match
the ONNX reference evaluator and TVM's default build."""
import numpy as np
import pytest
import tvm

from tvm_ios.graph.extract import extract
from tvm_ios.models import from_onnx
from tvm_ios.models.onnx_prepare import fold_constants, prepare, strip_initializer_inputs
from tvm_ios.relax_pipeline import pipeline
from tvm_ios.runtime.compare import build, run
from tvm_ios.testing import onnx_inception_like

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

X = np.random.default_rng(1).standard_normal((1, 8, 14, 14)).astype("float32")


def test_prepare_strips_listed_initializers_and_folds_weights(tmp_path):
    model = onnx.load(onnx_inception_like(tmp_path / "m.onnx"))
    assert model.ir_version == 3 and len(model.graph.input) > 1
    ready = prepare(model)
    assert [i.name for i in ready.graph.input] == ["x"] and ready.ir_version >= 4
    ops = {n.op_type for n in ready.graph.node}
    assert not ops & {"ConstantOfShape", "Mul"} and "LRN" in ops
    values = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    folded = {i.name: numpy_helper.to_array(i) for i in ready.graph.initializer}
    np.testing.assert_allclose(folded["stem_w"], 0.02 * values["stem_w_scale"], rtol=1e-6)
    assert "stem_w_scale" not in folded and "stem_w_shape" not in folded
    assert len(model.graph.input) == 1 + len(model.graph.initializer)  # the input untouched


def test_fold_keeps_random_and_runtime_nodes():
    shape = numpy_helper.from_array(np.asarray([2, 3], "int64"), "shape")
    nodes = [helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(
                 np.full((2, 3), 2.0, "float32"))),
             helper.make_node("RandomNormal", [], ["noise"], shape=[2, 3]),
             helper.make_node("ConstantOfShape", ["shape"], ["ones"],
                              value=helper.make_tensor("value", TensorProto.FLOAT, [1], [1.0])),
             helper.make_node("Add", ["c", "ones"], ["w"]),
             helper.make_node("Mul", ["x", "w"], ["y0"]),
             helper.make_node("Add", ["y0", "noise"], ["y"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [shape])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    assert fold_constants(model) == 3  # Constant, ConstantOfShape, Add; not RandomNormal
    assert [n.op_type for n in model.graph.node] == ["RandomNormal", "Mul", "Add"]
    (w,) = [numpy_helper.to_array(i) for i in model.graph.initializer]
    np.testing.assert_array_equal(w, np.full((2, 3), 3.0))
    assert strip_initializer_inputs(model) == 0


@pytest.mark.parametrize("opset,legacy", [(9, True), (11, True), (13, False)])
def test_import_matches_reference_evaluator(tmp_path, opset, legacy):
    # no LRN: onnx's reference evaluator gets it wrong (next test checks it against the spec)
    path = onnx_inception_like(tmp_path / "m.onnx", opset=opset, legacy=legacy, lrn=False)
    want = ReferenceEvaluator(onnx.load(path)).run(None, {"x": X})[0]
    mod, params = from_onnx(path)
    assert set(params) == {f"{n}_{k}" for n in ("stem", "a", "b1", "b2", "c", "d", "e", "fc")
                           for k in ("w", "b")}  # once each, folded, no shape tensors
    got = run(build(mod, "llvm", params), [X])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def _lrn_spec(x, size, alpha, beta, bias):
    """LRN as the ONNX operator spec writes it (sum of squares over a channel window)."""
    square_sum = np.zeros_like(x)
    for c in range(x.shape[1]):
        lo, hi = max(0, c - (size - 1) // 2), min(x.shape[1] - 1, c + size // 2)
        square_sum[:, c] = (x[:, lo:hi + 1] ** 2).sum(axis=1)
    return x / (bias + alpha / size * square_sum) ** beta


def test_lrn_follows_the_spec(tmp_path):
    node = helper.make_node("LRN", ["x"], ["y"], size=3, alpha=0.9, beta=0.75, bias=1.5)
    info = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 8, 5, 5]) for n in "xy"]
    model = helper.make_model(helper.make_graph([node], "lrn", info[:1], info[1:]),
                              opset_imports=[helper.make_opsetid("", 9)])
    onnx.save(model, tmp_path / "lrn.onnx")
    x = 3 * np.random.default_rng(0).standard_normal((1, 8, 5, 5)).astype("float32")
    mod, params = from_onnx(tmp_path / "lrn.onnx")
    np.testing.assert_allclose(run(build(mod, "llvm", params), [x]),
                               _lrn_spec(x, 3, 0.9, 0.75, 1.5), rtol=1e-5, atol=1e-6)


def test_unknown_ops_are_units_and_the_pipeline_compiles(tmp_path):
    mod, params = from_onnx(onnx_inception_like(tmp_path / "m.onnx"))
    graph = extract(mod["main"]).graph
    unknown = {n.kind for n in graph.nodes if not n.schedulable}
    assert unknown and unknown <= {"relax.nn.avg_pool3d", "relax.power"}  # LRN's ops
    p = pipeline(engine="rprogram")
    got = run(tvm.compile(_bound(mod, params), "llvm", relax_pipeline=p), [X])
    np.testing.assert_allclose(got, run(build(mod, "llvm", params), [X]), rtol=1e-5,
                               atol=1e-6)
    assert p.report["rprograms"] > 0
    assert any(len(s["groups"]) > 1 for s in p.report["schedule"]["stages"])


def _bound(mod, params):
    from tvm_ios import _tvm

    return _tvm.bind_params(mod, params)


def test_unreadable_file_says_so(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x03garbage")
    with pytest.raises(ValueError, match="not a readable ONNX model"):
        from_onnx(bad)
