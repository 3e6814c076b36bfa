"""Layer-time sources: modelled roofline per EP, measured TVM builds per layer and EP (logged)."""
import json

import numpy as np

from .tiny import tiny_cnn
from tvm_ios.graph.opgraph import OpGraph
from tvm_ios.pipelining.eps import parse_eps
from tvm_ios.pipelining.layer_times import LayerTimes, measured_times, modelled_times


def test_modelled_fep_faster_than_sep():
    mod, params = tiny_cnn(size=32)
    graph = OpGraph.from_relax(mod)
    eps = parse_eps("c2")                            # fep0, fep1, sep0, sep1
    times = modelled_times(graph, eps)
    assert times.seconds.shape == (7, 4) and times.source == "modelled"
    assert np.all(times.seconds[:, 0] < times.seconds[:, 2])
    assert np.allclose(times.seconds[:, 0], times.seconds[:, 1])
    again = LayerTimes.from_json(times.to_json())
    assert np.allclose(again.seconds, times.seconds) and again.layers == times.layers


def test_measured_per_layer_and_ep_is_logged(tmp_path):
    mod, params = tiny_cnn(size=16)
    log = tmp_path / "layers.jsonl"
    eps = parse_eps("cpu2")
    times = measured_times(mod, params, eps, str(log), repeat=2)
    assert times.source == "measured" and times.seconds.shape == (7, 2)
    assert np.all(times.seconds > 0)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(lines) == 14 and {l["ep"] for l in lines} == {"cpu0", "cpu1"}
    assert lines[0]["layer"] == times.layers[0]
