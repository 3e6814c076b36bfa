"""Schedule JSON: round trip, validation errors naming the field, staleness, printing."""
import json

import pytest

from tvm_ios.graph.opgraph import OpGraph
from tvm_ios.schedule.baselines import sequential_schedule
from tvm_ios.schedule.schedule import Schedule, ScheduleError, Stage

GRAPH = OpGraph.from_edges(3, [(0, 1), (0, 2)])


def _doc(**changes):
    doc = sequential_schedule(GRAPH).to_dict()
    doc.update(changes)
    return doc


def test_roundtrip_and_str():
    sched = Schedule([Stage([["op0"]]), Stage([["op1"], ["op2"]], "concurrent", 2.5)],
                     graph={"name": "g"}, params={"scheduler": "x"}, stats={"states": 3})
    again = Schedule.from_json(sched.to_json())
    assert again == sched and again.latency_us == 2.5
    text = str(sched)
    assert "op1 | op2" in text and "2 stages" in text


@pytest.mark.parametrize("doc,field", [
    (_doc(schema="other"), "'schema'"),
    (_doc(version=99), "'version'"),
    (_doc(stages=[]), "'stages'"),
    (_doc(stages=[{"groups": [["op0"]], "strategy": "fast"}]), r"'stages\[0\].strategy'"),
    (_doc(stages=[{"groups": [[1]]}]), r"'stages\[0\].groups'"),
    (_doc(stages=[{"groups": [["op0"]], "latency_us": -1}]), r"'stages\[0\].latency_us'"),
    (_doc(params=[]), "'params'"),
])
def test_malformed_documents_name_the_field(doc, field):
    with pytest.raises(ScheduleError, match=field):
        Schedule.from_json(json.dumps(doc))


def test_not_json():
    with pytest.raises(ScheduleError, match="does not parse"):
        Schedule.from_json("{nope")


def test_stale_and_incomplete():
    sched = sequential_schedule(GRAPH)
    sched.check_graph(GRAPH)
    other = OpGraph.from_edges(3, [(0, 1), (1, 2)])
    with pytest.raises(ScheduleError, match="graph.fingerprint"):
        sched.check_graph(other)
    partial = Schedule([Stage([["op0"]])])
    with pytest.raises(ScheduleError, match="missing"):
        partial.check_graph(GRAPH)
    unknown = Schedule([Stage([["zz"]])])
    with pytest.raises(ScheduleError, match="not in the graph"):
        unknown.check_graph(GRAPH)
