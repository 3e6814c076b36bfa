"""The cost-model protocol helpers: checking a model, pricing a whole schedule."""
import pytest

from tvm_ios.cost.analytical import AnalyticalCostModel
from tvm_ios.cost.base import check_cost_model, schedule_latency
from tvm_ios.graph.opgraph import OpGraph
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
