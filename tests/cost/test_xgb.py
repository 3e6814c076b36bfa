"""The XGBoost cost model: features, fit/predict, save/load, held-out accuracy."""
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest

from tvm_ios.bench.provenance import check_results_file
from tvm_ios.cost.log import LogRecord
from tvm_ios.cost.xgb import (FEATURES, XGBCostModel, evaluate, evaluate_by_model,
                                train_and_evaluate)
from tvm_ios.graph.opgraph import OpGraph, OpNode


def _conv(rng):
    c, k, hw = rng.choice([8, 16, 32, 64]), rng.choice([1, 3, 5]), rng.choice([8, 16, 32])
    cin = rng.choice([8, 16, 32])
    flops = 2 * c * hw * hw * cin * k * k
    return {"kind": "conv2d", "flops": flops, "bytes": 4 * (cin * hw * hw + c * cin * k * k
                                                             + c * hw * hw),
            "shape": [1, c, hw, hw], "kernel": [k, k], "channels": c, "in_channels": cin}


def _records(n, seed=0):
    """Stages whose latency is a known, noisy function of their work (back to back)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        groups = [[_conv(rng) for _ in range(rng.randint(1, 2))] for _ in range(rng.randint(1, 3))]
        work = sum(op["flops"] for g in groups for op in g)
        latency = 2.0 + work / 4e3 * rng.uniform(0.9, 1.1)
        out.append(LogRecord(f"k{i}", "llvm", "local:t", [latency * 1e-6], latency,
                             stage={"strategy": "concurrent", "groups": groups}))
    return out


def test_fit_predict_ranks_held_out_stages():
    records = _records(200)
    model = XGBCostModel().fit(records[:160])
    figures = evaluate(model.predict([r.stage for r in records[160:]]),
                       [r.median_us for r in records[160:]])
    assert figures["n"] == 40
    assert figures["spearman"] > 0.9 and figures["mape"] < 0.3


def test_save_and_load_give_the_same_predictions(tmp_path):
    records = _records(60, seed=1)
    model = XGBCostModel().fit(records)
    path = tmp_path / "xgb.json"
    model.save(path)
    loaded = XGBCostModel.load(path)
    stages = [r.stage for r in records[:10]]
    np.testing.assert_allclose(loaded.predict(stages), model.predict(stages), rtol=1e-5)
    assert loaded.trained_on == 60


def test_missing_model_file_and_untrained_model(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        XGBCostModel.load(tmp_path / "nope.json")
    with pytest.raises(RuntimeError, match="fit"):
        XGBCostModel().predict([_records(1)[0].stage])
    with pytest.raises(ValueError, match="usable"):
        XGBCostModel().fit(_records(1))


def test_cost_model_protocol_on_a_graph():
    records = _records(80, seed=2)
    model = XGBCostModel().fit(records)
    attrs = {"kernel": [3, 3], "channels": 16, "in_channels": 16, "input": "x",
             "strides": [1, 1], "padding": [1, 1, 1, 1], "dilation": [1, 1], "groups": 1}
    small = OpNode("a", "conv2d", (1, 16, 8, 8), flops=2 * 16 * 64 * 16 * 9, bytes=10000,
                   attrs=attrs)
    large = OpNode("b", "conv2d", (1, 16, 32, 32), flops=2 * 16 * 1024 * 16 * 9,
                   bytes=100000, attrs=attrs)
    graph = OpGraph([small, large], [])
    assert model.stage_latency(graph, [[1]]) > model.stage_latency(graph, [[0]])
    assert len(model.features([records[0].stage])[0]) == len(FEATURES)
    assert not math.isnan(model.stage_latency(graph, [[0], [1]]))


def _on(records, target):
    for r in records:
        r.target = target
    return records


def test_roofline_features_model_the_records_device():
    h100 = '{"kind":"cuda","arch":"sm_90a"}'
    with pytest.raises(ValueError, match="measured on h100 targets"):
        XGBCostModel("llvm").fit(_on(_records(20), h100))
    model = XGBCostModel("nvidia/nvidia-h100").fit(_on(_records(20), h100))
    assert model.roofline.device.name == "h100"
    figures = train_and_evaluate(_on(_records(40, seed=3), h100))
    assert figures["device"] == "h100" and figures["n"] == 8
    with pytest.raises(ValueError, match="2 device presets"):
        train_and_evaluate(_records(10) + _on(_records(10, seed=4), h100))


def test_evaluate_by_model_trains_on_the_others_and_skips_shared_stages():
    logs = {"a": _records(60, seed=5), "b": _records(50, seed=6), "c": _records(40, seed=7)}
    for name, records in logs.items():
        for i, r in enumerate(records):
            r.signature = f"{name}{i}"
    logs["c"][0].signature = "a0"  # a stage model c shares with model a
    figures = evaluate_by_model(logs)
    assert figures["device"] == "llvm"
    c = figures["models"]["c"]
    assert c["train"] == 110 and c["shared"] == 1 and c["n"] == 39
    assert figures["models"]["a"]["shared"] == 1 and figures["models"]["b"]["shared"] == 0
    assert c["spearman"] > 0.9 and set(c["roofline"]) == {"n", "mape", "spearman"}
    with pytest.raises(ValueError, match="need >= 2"):
        evaluate_by_model({"a": logs["a"]})


#: Real stage measurements (llvm, this project's CI CPU) of five zoo models, written with
#: its provenance by ``benchmarks/xgb_holdout.py`` (command in the file).
REAL_LOGS = Path(__file__).parent / "data" / "stage_logs_llvm.json"


def test_a_held_out_model_on_real_measurements():
    """Fitted on the other four models' measured stages, XGBoost ranks the stages of a model
    it never saw; ResNet-50 and SqueezeNet are held out (their stages share no signature
    with the training logs)."""
    assert check_results_file(REAL_LOGS) == []
    logs = {name: [LogRecord.from_dict(r) for r in records]
            for name, records in json.loads(REAL_LOGS.read_text())["results"]["logs"].items()}
    assert len(logs) == 5 and sum(map(len, logs.values())) > 400
    for held in ("resnet50", "squeezenet"):
        train = [r for name, records in logs.items() if name != held for r in records]
        model = XGBCostModel("llvm").fit(train)
        figures = evaluate(model.predict([r.stage for r in logs[held]]),
                           [r.median_us for r in logs[held]])
        assert figures["spearman"] > 0.8 and figures["mape"] < 0.6, (held, figures)
