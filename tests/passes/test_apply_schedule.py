"""ApplySchedule: reordering and merging follow the schedule, exactly and numerically."""
import json

import numpy as np
import pytest
import tvm
from tvm.script import ir as I
from tvm.script import relax as R

from tvm_ios.graph.extract import op_graph
from tvm_ios.graph.opgraph import OpGraph
from tvm_ios.passes.apply_schedule import ApplySchedule, schedule_of
from tvm_ios.runtime.compare import compare_modules
from tvm_ios.schedule.baselines import sequential_schedule
from tvm_ios.schedule.schedule import Schedule, ScheduleError, Stage


@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor((1, 2, 4, 4), "float32"), w1: R.Tensor((3, 2, 1, 1), "float32"),
             w2: R.Tensor((5, 2, 3, 3), "float32")):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            c1 = R.nn.conv2d(x, w1)
            r1 = R.nn.relu(c1)
            c2 = R.nn.conv2d(x, w2, padding=[1, 1, 1, 1])
            r2 = R.nn.relu(c2)
            out = R.concat((r1, r2), axis=1)
            R.output(out)
        return out


@I.ir_module
class ExpectedMerged:
    @R.function
    def main(x: R.Tensor((1, 2, 4, 4), "float32"), w1: R.Tensor((3, 2, 1, 1), "float32"),
             w2: R.Tensor((5, 2, 3, 3), "float32")):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            wp = R.nn.pad(w1, [0, 0, 0, 0, 1, 1, 1, 1])
            w = R.concat((wp, w2), axis=0)
            m = R.nn.conv2d(x, w, padding=[1, 1, 1, 1], out_dtype="float32")
            mr = R.nn.relu(m)
            parts = R.split(mr, [3], axis=1)
            r1 = parts[0]
            r2 = parts[1]
            out = R.concat((r1, r2), axis=1)
            R.output(out)
        return out


def _merge_schedule(mod):
    graph = op_graph(mod)
    names = [n.name for n in graph.nodes]
    return Schedule([Stage([[names[0]], [names[1]]], "merge")],
                    graph={"name": "main", "fingerprint": graph.fingerprint()})


def test_merge_matches_expected_ir():
    after = ApplySchedule(_merge_schedule(Before))(Before)
    after = after.without_attr("tvm_ios.schedules")
    tvm.ir.assert_structural_equal(after, ExpectedMerged)


def test_merge_is_numerically_exact():
    rng = np.random.default_rng(1)
    params = {"w1": rng.standard_normal((3, 2, 1, 1)).astype("float32"),
              "w2": rng.standard_normal((5, 2, 3, 3)).astype("float32")}
    after = ApplySchedule(_merge_schedule(Before))(Before)
    result = compare_modules(Before, after, params)
    assert result.max_abs_diff <= 1e-5 * max(1.0, result.max_abs_value)


def test_reorder_follows_stages(inception_like):
    graph = op_graph(inception_like)
    order = ["stem_relu", "c_relu", "pool", "b_relu", "a_relu", "d_relu", "e_relu"]
    sched = Schedule([Stage([[name]]) for name in order],
                     graph={"fingerprint": graph.fingerprint()})
    after = ApplySchedule(sched)(inception_like)
    units = [n.name for n in op_graph(after).nodes]
    assert units == order
    assert compare_modules(inception_like, after).max_abs_diff == 0.0
    assert schedule_of(after).ops == order


def test_schedule_recorded_and_read_back(inception_like):
    graph = op_graph(inception_like)
    sched = sequential_schedule(graph)
    after = ApplySchedule(sched.to_json())(inception_like)
    assert schedule_of(after).to_dict() == sched.to_dict()
    assert schedule_of(inception_like) is None


def test_stale_schedule_raises_naming_field(inception_like, tmp_path):
    sched = sequential_schedule(OpGraph.from_edges(3, [(0, 1), (1, 2)]))
    path = tmp_path / "s.json"
    path.write_text(sched.to_json())
    with pytest.raises(ScheduleError, match="graph.fingerprint"):
        ApplySchedule(str(path))(inception_like)


def test_stale_schedule_falls_back_to_sequential(inception_like, caplog):
    sched = sequential_schedule(OpGraph.from_edges(3, [(0, 1), (1, 2)]))
    after = ApplySchedule(sched, fallback=True)(inception_like)
    recorded = schedule_of(after)
    assert recorded.params["scheduler"] == "sequential"
    assert "fingerprint" in recorded.params["fallback_reason"]
    assert "falling back" in caplog.text


def test_dependency_violation_rejected(inception_like):
    order = ["d_relu", "stem_relu", "a_relu", "b_relu", "c_relu", "pool", "e_relu"]
    sched = Schedule([Stage([[n]]) for n in order], graph={})
    with pytest.raises(ScheduleError, match=r"stages\[0\].*'d_relu' reads"):
        ApplySchedule(sched)(inception_like)


def test_bad_merge_rejected(inception_like):
    sched = Schedule([Stage([["stem_relu"]]), Stage([["a_relu"], ["pool"]], "merge")]
                     + [Stage([[n]]) for n in ["b_relu", "c_relu", "d_relu", "e_relu"]])
    with pytest.raises(ScheduleError, match="cannot be merged"):
        ApplySchedule(sched)(inception_like)


def test_missing_schedule_file():
    with pytest.raises(ScheduleError, match="does not exist"):
        ApplySchedule("/nonexistent/schedule.json")


def test_malformed_schedule_file(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"schema": "tvm-ios/schedule", "version": 1,
                                "stages": [{"groups": "a"}]}))
    with pytest.raises(ScheduleError, match=r"stages\[0\].groups"):
        ApplySchedule(str(path))
