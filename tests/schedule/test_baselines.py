"""Sequential and greedy baselines on hand-checkable DAGs."""
import pytest

from tvm_ios.graph.opgraph import OpGraph
from tvm_ios.schedule.baselines import greedy_schedule, sequential_schedule

GRAPH = OpGraph.from_edges(6, [(0, 1), (0, 2), (0, 3), (1, 4), (2, 4), (3, 5)])


class PerOp:
    def stage_latency(self, graph, groups):
        return float(sum(len(g) for g in groups))

    def merged_latency(self, graph, ops):
        return None


def test_sequential():
    sched = sequential_schedule(GRAPH, PerOp())
    assert [s.ops for s in sched.stages] == [[f"op{i}"] for i in range(6)]
    assert sched.latency_us == 6.0


def test_greedy_runs_all_ready_ops():
    sched = greedy_schedule(GRAPH)
    assert [s.ops for s in sched.stages] == [["op0"], ["op1", "op2", "op3"], ["op4", "op5"]]


def test_greedy_max_streams():
    sched = greedy_schedule(GRAPH, max_streams=2)
    assert [s.ops for s in sched.stages] == [["op0"], ["op1", "op2"], ["op3", "op4"], ["op5"]]
    with pytest.raises(ValueError):
        greedy_schedule(GRAPH, max_streams=0)


def test_greedy_keeps_unschedulable_alone():
    graph = OpGraph.from_edges(3, [])
    graph.nodes[1].schedulable = False
    stages = [s.ops for s in greedy_schedule(graph).stages]
    assert ["op1"] in stages and all(len(s) == 1 or "op1" not in s for s in stages)
