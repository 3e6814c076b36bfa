"""GroupSubgraphs records Algorithm 2's sub-graphs and leaves the IR alone."""
import pytest
import tvm

from tvm_ios import models
from tvm_ios.passes.graphturbo_attr import load
from tvm_ios.passes.group_subgraphs import GroupSubgraphs


def test_groups_are_recorded_and_ir_is_unchanged():
    mod, _ = models.get("mobilenet_v2", batch_size=1, image_size=32)
    after = GroupSubgraphs("dsa")(mod)
    tvm.ir.assert_structural_equal(after["main"], mod["main"])
    record = load(after, "main")
    assert record["hw"]["name"] == "dsa"
    names = [n for group in record["groups"] for n in group]
    assert len(names) == len(set(names)) and len(record["groups"]) < len(names)
    assert record["grouping"]["rounds"] >= 1


def test_unknown_hardware_is_named():
    with pytest.raises(ValueError, match="unknown GraphTurbo hardware"):
        GroupSubgraphs("tpu9")
