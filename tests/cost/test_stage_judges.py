"""Never slower than sequential: a concurrent stage stays only if it prices faster."""
import logging

from tvm_ios.cost.stage_judges import sequential_fallback
from tvm_ios.cost.stage_module import RPROGRAM_TAG
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
    with caplog.at_level(logging.INFO, logger="tvm_ios.cost.stage_judges"):
        out = sequential_fallback(GRAPH, SCHEDULE, Costs(together=25.0))
    assert [s.groups for s in out.stages] == [[["a"]], [["b"]], [["c"]], [["d"]]]
    assert out.stats["fallback"] == "0 concurrent kept, 1 made sequential"
    assert "concurrent 25.0 us, sequential 20.0 us: kept sequential" in caplog.text
    assert SCHEDULE.stages[1].groups == [["c"], ["b"]]  # the input schedule is left alone


class Fixed:
    """A judge pricing every stage of two or more groups at ``us``."""

    def __init__(self, us):
        self.us = us

    def stage_latency(self, graph, groups):
        assert len(groups) > 1, "a judge prices the whole stage, not its ops one by one"
        return self.us


def test_judges_decide_from_the_stage_run_both_ways():
    # the single-op stages sum to 20 us, so the old rule would keep a 15 us rProgram;
    # run back to back in one module the ops take 12 us: sequential wins
    decisions = []
    out = sequential_fallback(GRAPH, SCHEDULE, Costs(together=15.0), decisions,
                              judges=(Fixed(15.0), Fixed(12.0)))
    assert [s.groups for s in out.stages] == [[["a"]], [["b"]], [["c"]], [["d"]]]
    (decision,) = decisions
    assert decision == {"ops": ["c", "b"], "groups": [["c"], ["b"]], "concurrent_us": 15.0,
                        "sequential_us": 12.0, "kept": "sequential", "measured": True}
    assert [s.latency_us for s in out.stages[1:3]] == [6.0, 6.0]  # 12 us split like 10 : 10


def test_judges_keep_a_stage_measured_faster_concurrently():
    out = sequential_fallback(GRAPH, SCHEDULE, Costs(together=25.0),
                              judges=(Fixed(11.0), Fixed(12.0)))
    assert [s.groups for s in out.stages] == [s.groups for s in SCHEDULE.stages]


def test_measured_judges_time_both_sides_into_the_log(tiny, measurer, tmp_path):
    from tvm_ios.cost.analytical import AnalyticalCostModel
    from tvm_ios.cost.stage_judges import rprogram_schedule, stage_judges
    from tvm_ios.cost.log import MeasureLog
    from tvm_ios.passes.apply_schedule import schedule_of

    log = tmp_path / "stages.jsonl"
    decisions = []
    out = rprogram_schedule(tiny, AnalyticalCostModel("v100"), decisions=decisions,
                            judges=stage_judges(tiny, log, measurer), max_group_size=2)
    assert decisions and all(d["measured"] for d in decisions)
    records = MeasureLog(log).records
    tags = {r.signature.endswith(RPROGRAM_TAG) for r in records}
    assert tags == {True, False}  # each stage as one rProgram and back to back
    assert 2 <= len(records) <= 2 * len(decisions)  # identical blocks share signatures
    concurrent = [s for s in schedule_of(out).stages if len(s.groups) > 1]
    assert len(concurrent) == sum(d["kept"] == "concurrent" for d in decisions)


def test_logged_only_judges_leave_unlogged_stages_to_the_cost_model(tiny, tmp_path):
    from tvm_ios.cost.stage_judges import stage_judges
    from tvm_ios.cost.analytical import AnalyticalCostModel
    from tvm_ios.cost.stage_judges import rprogram_schedule

    decisions = []
    rprogram_schedule(tiny, AnalyticalCostModel("v100"), decisions=decisions,
                      judges=stage_judges(tiny, tmp_path / "empty.jsonl"), max_group_size=2)
    assert decisions and not any(d["measured"] for d in decisions)  # nothing built/measured
