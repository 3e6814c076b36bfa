"""The whole plan: figures, bad hardware (LB too small), the per-layer fallback."""
import pytest

from tvm_ios import models
from tvm_ios.graphturbo.hwspec import HardwareSpec
from tvm_ios.graphturbo.layers import GraphTurboError, layer_graph
from tvm_ios.graphturbo.plan import Plan, plan_graph


@pytest.fixture(scope="module")
def squeeze():
    mod, _ = models.get("squeezenet", batch_size=2, image_size=32)
    return layer_graph(mod["main"], name="squeezenet")


def tiny(lb_bytes):
    return HardwareSpec("tiny", 1, 8, lb_bytes, 1 << 20, 100.0, 8000.0)


def test_plan_figures_beside_the_per_layer_baseline(squeeze):
    plan = plan_graph(squeeze, tiny(4096))
    f = plan.figures
    assert f["per_layer"]["dram"] == len(squeeze.graph) and f["per_layer"]["lb"] == 0
    assert f["graphturbo"]["dram"] < f["per_layer"]["dram"]
    assert f["graphturbo"]["offcore_bytes"] < f["per_layer"]["offcore_bytes"]
    assert sum(len(sg["layers"]) for sg in plan.sgs) == len(squeeze.graph)
    assert any(sg["factor"] > 1 for sg in plan.sgs)
    assert f["peak_lb"] <= f["lb_capacity"]
    assert plan.chosen in ("bfs", "dfs") and sorted(plan.order) == list(range(f["instances"]))


def test_plan_round_trips_through_json(squeeze):
    plan = plan_graph(squeeze, tiny(4096), order="bfs")
    again = Plan.from_json(plan.to_json())
    assert again.to_json() == plan.to_json() and again.chosen == "bfs"
    assert "sg0" in str(again)


def test_local_buffer_smaller_than_one_layer_is_a_clear_error(squeeze):
    with pytest.raises(GraphTurboError, match=r"cannot be split to fit the local buffer of tiny"):
        plan_graph(squeeze, tiny(64))


def test_fallback_keeps_oversized_layers_per_layer_in_dram(squeeze):
    plan = plan_graph(squeeze, tiny(512), oversize="fallback")
    fallback = [sg for sg in plan.sgs if sg["fallback"]]
    assert fallback and all(sg["factor"] == 1 for sg in fallback)
    assert plan.figures["graphturbo"]["dram"] > 1


def test_bad_order_is_named(squeeze):
    with pytest.raises(ValueError, match="order must be auto, bfs or dfs"):
        plan_graph(squeeze, tiny(4096), order="random")
