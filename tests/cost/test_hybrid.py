"""The hybrid policy: predictions everywhere, real measurements only for stages that can win."""
import pytest

from tvm_ios.cost.analytical import AnalyticalCostModel
from tvm_ios.cost.hybrid import HybridCostModel, hybrid_schedule
from tvm_ios.cost.log import MeasureLog
from tvm_ios.cost.measured import MeasuredCostModel


@pytest.mark.slow  # a builder pool per round
def test_hybrid_measures_the_schedule_it_picks_and_little_else(tmp_path, measurer, make_model):
    mod = make_model(channels=8, size=8, blocks=1)[0]
    model = MeasuredCostModel(mod, measurer, tmp_path / "hybrid.jsonl")
    graph = next(iter(model.extractions.values())).graph
    keys = {model.stage(graph, [list(g) for g in groups], merge).key
            for groups, merge in model.candidates(graph)}
    schedule = hybrid_schedule(graph, model, AnalyticalCostModel("llvm"), max_rounds=3)
    logged = MeasureLog(tmp_path / "hybrid.jsonl")
    assert 0 < len(logged) < len(keys)
    assert model.counts["measured"] == len(logged) and model.counts["predicted"] > 0
    for stage in schedule.stages:  # the chosen stages' figures are measured ones
        groups = [[graph.index[n] for n in g] for g in stage.groups]
        key = model.stage(graph, groups, stage.strategy == "merge").key
        record = logged.lookup(key, model.target, model.device_key)
        if schedule.stats["hybrid_rounds"] < 3:
            assert record is not None and record.median_us == stage.latency_us


def test_hybrid_cost_model_prefers_the_log_and_scales_predictions(tmp_path, tiny):
    model = MeasuredCostModel(tiny, None, tmp_path / "empty.jsonl")
    graph = next(iter(model.extractions.values())).graph
    roofline = AnalyticalCostModel("llvm")
    hybrid = HybridCostModel(model, roofline)
    assert hybrid.stage_latency(graph, [[0]]) == roofline.stage_latency(graph, [[0]])
    hybrid.scale = 3.0
    assert hybrid.stage_latency(graph, [[0]]) == 3.0 * roofline.stage_latency(graph, [[0]])
    assert hybrid.merged_latency(graph, [0, 4]) is None  # a conv and a pool do not merge
    assert model.counts["predicted"] == 2 and model.counts["measured"] == 0
