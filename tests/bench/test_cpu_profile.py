"""Where the time goes: per-kernel times of a real TVM build (``bench/cpu_profile.py``)."""
import numpy as np
import pytest
from tvm import relax

from tvm_ios.bench.cpu_builds import build_tuned
from tvm_ios.bench.cpu_profile import node_rows, kernel_profile, onnx_profile
from tvm_ios.testing import dag_model


def _call_tirs(mod) -> int:
    calls = []
    relax.analysis.post_order_visit(mod["main"], lambda e: calls.append(e) if isinstance(
        e, relax.Call) and getattr(e.op, "name", "") == "relax.call_tir" else None)
    return len(calls)


def test_every_call_of_main_is_profiled_cold_largest_first():
    model = dag_model(seed=1, num_ops=3, channels=8, size=8, p=0.5)[0]
    info: dict = {}
    build_tuned(model, None, info)
    rows = kernel_profile(info["_module"], info["_executable"], 1, top=50, number=3)
    assert sum(r["calls"] for r in rows) == _call_tirs(info["_module"])
    assert all(r["us"] > 0 and r["cold"] and not r["rprogram"] for r in rows)
    assert [r["total_us"] for r in rows] == sorted((r["total_us"] for r in rows), reverse=True)
    warm = kernel_profile(info["_module"], info["_executable"], 1, top=50, number=3, cold=False)
    assert {r["kernel"] for r in warm} == {r["kernel"] for r in rows}
    assert not any(r["cold"] for r in warm)


def test_onnx_runtime_nodes_are_profiled_per_run():
    pytest.importorskip("onnxruntime", reason="onnxruntime is not installed (pip install "
                                              "'tvm-ios[bench]')")
    onnx = pytest.importorskip("onnx", reason="onnx is not installed (pip install "
                                              "'tvm-ios[bench]')")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["h"], name="first"),
         helper.make_node("Sigmoid", ["h"], ["y"], name="second")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    rows = onnx_profile(onnx.ModelProto.SerializeToString(model), 1,
                        np.ones((1, 64), "float32"), runs=3)
    assert {r["op"] for r in rows} == {"first (Relu)", "second (Sigmoid)"}
    assert all(r["calls"] == 1 and r["total_us"] >= 0 and r["runs"] == 3 for r in rows)


def test_the_warm_up_run_is_left_out_of_the_onnx_runtime_profile():
    """Two runs of one node: 900 us (the warm-up, packing weights) then 10 us."""
    def run(ts, dur):
        return {"cat": "Session", "name": "model_run", "ts": ts, "dur": dur}

    def node(ts, dur):
        return {"cat": "Node", "name": "conv_kernel_time", "ts": ts, "dur": dur,
                "args": {"op_name": "Conv"}}
    events = [run(0, 1000), node(10, 900), run(2000, 100), node(2010, 10)]
    assert node_rows(events, 1, 15) == [{"op": "conv (Conv)", "calls": 1, "total_us": 10.0,
                                          "runs": 1}]
