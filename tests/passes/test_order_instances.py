"""OrderInstances: the instances' bindings follow the plan's chosen order."""
import pytest

from tvm_ios import models
from tvm_ios.graphturbo.hwspec import HardwareSpec
from tvm_ios.passes.graphturbo_attr import load
from tvm_ios.passes.instance_emitter import instance_runs
from tvm_ios.passes.order_instances import OrderInstances
from tvm_ios.passes.split_instances import SplitInstances
from tvm_ios.runtime.compare import compare_modules



@pytest.mark.parametrize("order", ["bfs", "dfs"])
def test_bindings_follow_the_plan_order(order):
    hw = HardwareSpec("tiny", 1, 8, 4096, 1 << 20, 100.0, 8000.0)
    mod, params = models.get("squeezenet", batch_size=1, image_size=32)
    split = SplitInstances(hw, order=order)(mod)
    plan = load(split, "main")["plan"]
    tags = {i["id"]: (i["sg"], i["k"]) for i in plan["split"]["instances"]}
    expected = [tags[i] for i in plan["order"]]
    assert instance_runs(split["main"]) == sorted(expected)
    ordered = OrderInstances()(split)
    assert instance_runs(ordered["main"]) == expected
    assert load(ordered, "main")["emitted"] == order
    assert compare_modules(mod, ordered, params).max_abs_diff < 1e-4


def test_needs_a_plan():
    mod, _ = models.get("squeezenet", batch_size=1, image_size=32)
    with pytest.raises(ValueError, match="run SplitInstances first"):
        OrderInstances()(mod)
