"""The measured cost model: the DP on real measurements, logged once, reused across models."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import tvm

from tvm_ios.cost.pricing import check_cost_model
from tvm_ios.cost.hybrid import measured_schedule
from tvm_ios.cost.log import MeasureLog
from tvm_ios.cost.stage_timing import MeasureError
from tvm_ios.cost.measured import MeasuredCostModel
from tvm_ios.schedule.ios import ios_schedule


def _graph(model):
    return next(iter(model.extractions.values())).graph


def test_measured_once_reused_across_runs_and_models(tmp_path, measurer, tiny, make_model):
    log = tmp_path / "stages.jsonl"
    first = MeasuredCostModel(tiny, measurer, log)
    check_cost_model(first)
    graph = _graph(first)
    small = {"max_group_size": 1, "max_num_groups": 3}  # fewer candidates: a faster test
    candidates = first.candidates(graph, **small)
    keys = {first.stage(graph, [list(g) for g in groups], merge).key
            for groups, merge in candidates}
    assert len({first.signature(graph, g, m) for g, m in candidates}) == len(keys)
    schedule = measured_schedule(graph, first, **small)
    assert first.counts["measured"] == len(keys) == len(MeasureLog(log))
    assert schedule.latency_us > 0 and all(s.latency_us > 0 for s in schedule.stages)

    again = MeasuredCostModel(tiny, measurer, log)  # a new process would do the same
    rerun = ios_schedule(graph, again, **small)
    assert rerun.to_dict()["stages"] == schedule.to_dict()["stages"]
    assert again.counts["measured"] == 0 and again.counts["cached"] > 0
    assert not again.modules  # found by signature: no stage module was even built

    bigger = make_model(channels=8, size=8, blocks=3, head=True)[0]  # same blocks, a new head
    other = MeasuredCostModel(bigger, measurer, log)
    measured_schedule(_graph(other), other, **small)
    assert other.counts["measured"] == 1  # only the head conv is new
    assert len(MeasureLog(log)) == len(keys) + 1


def test_log_only_model_refuses_to_guess(tmp_path, tiny):
    model = MeasuredCostModel(tiny, None, tmp_path / "none.jsonl")
    with pytest.raises(MeasureError, match="not in the log"):
        model.stage_latency(_graph(model), [[0]])


def test_unregistered_graph_is_named(tmp_path, tiny, make_model):
    model = MeasuredCostModel(tiny, None, tmp_path / "none.jsonl")
    other = MeasuredCostModel(make_model(channels=16)[0], None, None)
    with pytest.raises(ValueError, match="was not registered"):
        model.stage_latency(_graph(other), [[0]])


CHILD = textwrap.dedent("""
    import sys, tvm
    from tvm_ios.cost.stage_timing import MeasureSettings, Measurer
    from tvm_ios.cost.measured import MeasuredCostModel
    from tvm_ios.cost.hybrid import measured_schedule
    mod = tvm.ir.load_json(open(sys.argv[1]).read())
    settings = MeasureSettings(number=1, repeat=2, build_workers=1, batch_size=1)
    model = MeasuredCostModel(mod, Measurer("llvm", settings=settings), sys.argv[2])
    measured_schedule(next(iter(model.extractions.values())).graph, model)
""")


def test_killing_a_run_loses_nothing_logged(tmp_path, tiny):
    module_file, log = tmp_path / "mod.json", tmp_path / "killed.jsonl"
    module_file.write_text(tvm.ir.save_json(tiny))
    env = dict(os.environ, PYTHONPATH=os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", ""))
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(module_file), str(log)], env=env,
                             start_new_session=True, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 240
        while not (log.exists() and log.read_text().count("\n") >= 1):
            assert child.poll() is None and time.time() < deadline, "child never logged"
            time.sleep(0.2)
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    pieces = log.read_text().split("\n")
    complete = [json.loads(line) for line in pieces[:-1]]  # every ended line is whole
    reread = MeasureLog(log)
    assert len(reread) >= len(complete) >= 1
    resumed = MeasuredCostModel(tiny, None, log)
    graph = _graph(resumed)
    found = {s.key for s in (resumed.stage(graph, [list(g) for g in groups], merge)
                             for groups, merge in resumed.candidates(graph))
             if resumed.lookup(s) is not None}
    assert {r["key"] for r in complete} <= found  # a rerun would not measure them again


def test_records_older_than_signatures_are_still_found(tmp_path, measurer, tiny):
    log = tmp_path / "old.jsonl"
    first = MeasuredCostModel(tiny, measurer, log)
    graph = _graph(first)
    first.stage_latency(graph, [[0]])
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    for line in lines:
        del line["signature"]  # as the log format had it before signatures
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    old = MeasuredCostModel(tiny, None, log)
    assert old.logged(graph, [[0]]) == lines[0]["median_us"]
    assert old.counts["measured"] == 0


def test_a_stage_is_one_stage_whatever_order_its_groups_are_listed_in(tmp_path, tiny):
    model = MeasuredCostModel(tiny, None, None)
    graph = _graph(model)
    assert model.signature(graph, [[2, 0], [1]]) == model.signature(graph, [[1], [0, 2]])
    assert model.stage(graph, [[1], [0, 2]]) is model.stage(graph, [[0, 2], [1]])
    assert model.signature(graph, [[0, 2], [1]]) != model.signature(graph, [[0, 1], [2]])
