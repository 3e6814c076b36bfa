"""The cost-model protocol helpers: checking a model, pricing a whole schedule."""
import pytest

from tvm_ios.cost.analytical import AnalyticalCostModel
from tvm_ios.cost.pricing import check_cost_model, schedule_latency
from tvm_ios.graph.opgraph import OpGraph, OpNode
from tvm_ios.schedule.baselines import sequential_schedule
from tvm_ios.schedule.ios import ios_schedule
from tvm_ios.testing import MergeFriendly


def _diamond():
    return OpGraph.from_edges(4, [(0, 1), (0, 2), (1, 3), (2, 3)])


def test_schedule_latency_is_what_the_scheduler_priced():
    graph, model = _diamond(), MergeFriendly()
    schedule = ios_schedule(graph, model)
    assert schedule_latency(model, graph, schedule) == pytest.approx(schedule.latency_us)
    assert schedule_latency(model, graph, sequential_schedule(graph)) == pytest.approx(
        sum(model.stage_latency(graph, [[i]]) for i in range(4)))


def test_a_non_model_is_refused():
    assert check_cost_model(AnalyticalCostModel("llvm"))
    with pytest.raises(TypeError, match="is not a cost model"):
        check_cost_model(object())


class _NoMerge:
    """Prices stages like MergeFriendly but can merge nothing."""

    def __init__(self):
        self.inner = MergeFriendly()

    def stage_latency(self, graph, groups):
        return self.inner.stage_latency(graph, groups)

    def merged_latency(self, graph, ops):
        return None


def test_none_from_merged_latency_means_cannot_merge():
    attrs = {"input": "x", "kernel": [3, 3], "strides": [1, 1], "padding": [1, 1, 1, 1],
             "dilation": [1, 1], "groups": 1, "channels": 8, "in_channels": 8}
    graph = OpGraph([OpNode(f"c{i}", "conv2d", (1, 8, 8, 8), attrs=attrs) for i in range(3)],
                    [])
    merged = ios_schedule(graph, MergeFriendly())
    assert [s.strategy for s in merged.stages] == ["merge"]
    # The scheduler prices such stages as concurrent groups instead ...
    plain = ios_schedule(graph, _NoMerge())
    assert all(s.strategy == "concurrent" for s in plain.stages)
    assert schedule_latency(_NoMerge(), graph, plain) == pytest.approx(plain.latency_us)
    # ... and a schedule that merges cannot be priced by a model that cannot merge.
    with pytest.raises(ValueError, match=r"stages\[0\] merges .* cannot merge"):
        schedule_latency(_NoMerge(), graph, merged)


def test_the_protocol_is_the_schedulers():
    from tvm_ios.schedule import cost_protocol

    assert check_cost_model is cost_protocol.check_cost_model
