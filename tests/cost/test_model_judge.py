"""The whole-model judge: the kept concurrent stages, judged again by the model's own time."""
import time

import pytest

from tvm_ios.cost.log import MeasureLog
from tvm_ios.cost.model_judge import (ModelJudge, candidate_sizes, judge_module, keep_only,
                                      ranked_stages)
from tvm_ios.graph.opgraph import OpGraph, OpNode
from tvm_ios.schedule.schedule import Schedule, Stage

#   a -> (b, c) -> d -> (e, f) -> g: two diamonds, each with a stage of two groups
GRAPH = OpGraph([OpNode(n) for n in "abcdefg"],
                [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (3, 5), (4, 6), (5, 6)])
SCHEDULE = Schedule([Stage([["a"]]), Stage([["c"], ["b"]], latency_us=8.0), Stage([["d"]]),
                     Stage([["e"], ["f"]], latency_us=6.0), Stage([["g"]])])
#   the stage judges kept both: b/c saves 2 us, e/f saves 5 us
DECISIONS = [
    {"ops": ["c", "b"], "concurrent_us": 8.0, "sequential_us": 10.0, "kept": "concurrent"},
    {"ops": ["e", "f"], "concurrent_us": 6.0, "sequential_us": 11.0, "kept": "concurrent"},
    {"ops": ["x", "y"], "concurrent_us": 9.0, "sequential_us": 7.0, "kept": "sequential"},
]


def test_ranked_by_judged_gain_sequential_ones_left_out():
    assert ranked_stages(DECISIONS) == [("e", "f"), ("c", "b")]


@pytest.mark.parametrize("n, most, sizes", [(0, 5, [0]), (1, 5, [1, 0]), (2, 5, [2, 1, 0]),
                                            (11, 5, [11, 5, 2, 1, 0]),
                                            (17, 5, [17, 8, 4, 2, 0]), (17, 2, [17, 0])])
def test_candidates_halve_down_to_none(n, most, sizes):
    assert candidate_sizes(n, most) == sizes


def test_keep_only_runs_the_other_stages_op_by_op_in_graph_order():
    out = keep_only(GRAPH, SCHEDULE, {("e", "f")})
    assert [s.groups for s in out.stages] == [[["a"]], [["b"]], [["c"]], [["d"]],
                                              [["e"], ["f"]], [["g"]]]
    assert [s.latency_us for s in out.stages[1:3]] == [4.0, 4.0]
    assert SCHEDULE.stages[1].groups == [["c"], ["b"]]  # the input is left alone


def _slow(us):
    def run():
        end = time.perf_counter() + us * 1e-6
        while time.perf_counter() < end:
            pass
    return run


def _concurrent(schedule):
    return {tuple(s.ops) for s in schedule.stages if len(s.groups) > 1}


def _judge(path):
    # medians of 15 calls: one of 4 (2 x 2) flipped a 500 against a 900 us build when a
    # busy-wait was preempted beside the parallel test suite (CI, 2 cores)
    return ModelJudge(path, "llvm", "local:test", "-kx-t2", rounds=5, calls=3)


@pytest.mark.parametrize("times, kept", [
    # whole-model us by how many stages stay concurrent (1: e/f, the larger judged gain)
    ({0: 900, 1: 500, 2: 1500}, {("e", "f")}),
    ({0: 900, 1: 1200, 2: 1500}, set()),
    ({0: 900, 1: 800, 2: 400}, {("e", "f"), ("c", "b")}),
])
def test_the_fastest_whole_model_wins_and_is_logged(tmp_path, times, kept):
    built = []

    def build(schedule):
        built.append(schedule)
        return _slow(times[len(_concurrent(schedule))])

    out, verdict = _judge(tmp_path / "log.jsonl").judge(GRAPH, SCHEDULE, DECISIONS, build)
    assert _concurrent(out) == kept and verdict.kept == len(kept) and verdict.measured
    assert len(built) == 3 and out.stats["model_judge"] == str(verdict)
    log = MeasureLog(tmp_path / "log.jsonl")
    records = log.records
    assert sorted(r.stage["kept"] for r in records) == [0, 1, 2]
    # not taken for stage records of before signatures (which make every lookup build)
    assert not log.unsigned
    assert all(r.stage["strategy"] == "model" and len(r.run_secs) == 15 for r in records)
    # a later build decides from the log alone: nothing built, the same verdict
    again, logged = _judge(tmp_path / "log.jsonl").judge(GRAPH, SCHEDULE, DECISIONS, None)
    assert _concurrent(again) == kept and not logged.measured and logged.kept == len(kept)


def test_without_every_candidate_logged_the_schedule_stays(tmp_path):
    out, verdict = _judge(tmp_path / "none.jsonl").judge(GRAPH, SCHEDULE, DECISIONS, None)
    assert out is SCHEDULE and verdict.kept == 2 and not verdict.figures
    assert "not judged" in str(verdict)


def test_logged_figures_belong_to_their_kernels_and_threads(tmp_path):
    log = tmp_path / "log.jsonl"
    _judge(log).judge(GRAPH, SCHEDULE, DECISIONS, lambda s: _slow(100))
    other = ModelJudge(log, "llvm", "local:test", "-kx-t1")
    assert other.judge(GRAPH, SCHEDULE, DECISIONS, None)[1].figures == {}


def test_judge_module_builds_runs_and_keeps_outputs(tiny, tmp_path):
    """Real builds: the tiny model's kept stages as rPrograms of 2 vEUs, each candidate
    compiled and timed; the chosen module still computes what the original does."""
    import numpy as np

    from tvm_ios import _tvm
    from tvm_ios.cost.analytical import AnalyticalCostModel
    from tvm_ios.cost.stage_judges import rprogram_schedule
    from tvm_ios.passes.apply_schedule import schedule_of
    from tvm_ios.passes.rprogram_pass import RProgramPass
    from tvm_ios.runtime.compare import random_inputs, run

    decisions = []
    recorded = rprogram_schedule(tiny, AnalyticalCostModel("v100"), decisions=decisions,
                                 max_group_size=2)
    assert any(d["kept"] == "concurrent" for d in decisions)
    lowered = []

    def lower(mod):
        lowered.append(mod)
        return _tvm.compile_module(RProgramPass("ios", num_veus=2)(mod), "llvm")

    judged, verdict, exe = judge_module(recorded, decisions, lower, log=tmp_path / "l.jsonl",
                                        threads=2)
    assert verdict.measured and len(lowered) == len(verdict.figures) >= 2
    assert len(_concurrent(schedule_of(judged))) == verdict.kept
    inputs = random_inputs(tiny)
    reference = run(_tvm.compile_module(tiny, "llvm"), inputs)
    np.testing.assert_allclose(run(exe, inputs), reference, rtol=1e-4, atol=1e-4)
