"""Never slower than sequential: a concurrent stage stays only if it prices faster."""
import logging

from tvm_ios.cost.fallback import sequential_fallback
from tvm_ios.graph.opgraph import OpGraph, OpNode
from tvm_ios.schedule.schedule import Schedule, Stage

#   a -> b, a -> c, (b, c) -> d: b and c may run together
GRAPH = OpGraph([OpNode("a"), OpNode("b"), OpNode("c"), OpNode("d")],
                [(0, 1), (0, 2), (1, 3), (2, 3)])
SCHEDULE = Schedule([Stage([["a"]]), Stage([["c"], ["b"]]), Stage([["d"]])])


class Costs:
    """Each op alone costs 10 us; b and c together cost ``together``."""

    def __init__(self, together):
        self.together = together

    def stage_latency(self, graph, groups):
        return self.together if len(groups) > 1 else 10.0 * sum(len(g) for g in groups)


def test_faster_concurrent_stage_is_kept():
    decisions = []
    out = sequential_fallback(GRAPH, SCHEDULE, Costs(together=15.0), decisions)
    assert [s.groups for s in out.stages] == [s.groups for s in SCHEDULE.stages]
    assert out.stats["fallback"] == "1 concurrent kept, 0 made sequential"
    (decision,) = decisions
    assert decision["kept"] == "concurrent" and decision["sequential_us"] == 20.0


def test_slower_concurrent_stage_becomes_sequential_in_graph_order(caplog):
    with caplog.at_level(logging.INFO, logger="tvm_ios.cost.fallback"):
        out = sequential_fallback(GRAPH, SCHEDULE, Costs(together=25.0))
    assert [s.groups for s in out.stages] == [[["a"]], [["b"]], [["c"]], [["d"]]]
    assert out.stats["fallback"] == "0 concurrent kept, 1 made sequential"
    assert "concurrent 25.0 us, sequential 20.0 us: kept sequential" in caplog.text
    assert SCHEDULE.stages[1].groups == [["c"], ["b"]]  # the input schedule is left alone
