"""The hybrid policy: predictions everywhere, real measurements only for stages that can win."""
import pytest

from tvm_ios.cost.analytical import AnalyticalCostModel
from tvm_ios.cost.hybrid import HybridCostModel, hybrid_schedule
from tvm_ios.cost.log import MeasureLog
from tvm_ios.cost.measured import MeasuredCostModel
from tvm_ios.schedule.merge import merge_plan


def test_hybrid_measures_the_schedule_it_picks_and_little_else(tmp_path, measurer, make_model):
    mod = make_model(channels=8, size=8, blocks=1)[0]
    model = MeasuredCostModel(mod, measurer, tmp_path / "hybrid.jsonl")
    graph = next(iter(model.extractions.values())).graph
    signatures = {model.signature(graph, groups, merge)
                  for groups, merge in model.candidates(graph)}
    schedule = hybrid_schedule(graph, model, AnalyticalCostModel("llvm"), margin=0.1)
    logged = MeasureLog(tmp_path / "hybrid.jsonl")
    assert 0 < len(logged) < len(signatures)
    assert model.counts["measured"] == len(logged) and model.counts["predicted"] > 0
    assert schedule.stats["predicted_stages"] == 0  # converged: every stage it picked is real
    for stage in schedule.stages:  # the chosen stages' figures are the logged ones
        groups = [[graph.index[n] for n in g] for g in stage.groups]
        signature = model.signature(graph, groups, stage.strategy == "merge")
        record = logged.lookup_signature(signature, model.target, model.device_key)
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
    hopeful = HybridCostModel(model, roofline, optimism=0.9)  # unmeasured: assumed 10% faster
    assert hopeful.stage_latency(graph, [[0]]) == pytest.approx(
        0.9 * roofline.stage_latency(graph, [[0]]))


def test_a_learned_predictor_stands_in_with_its_roofline_until_the_log_can_train_it(
        tmp_path, measurer, tiny):
    from tvm_ios.cost.hybrid import MIN_RECORDS, _ready
    from tvm_ios.cost.xgb import XGBCostModel

    model = MeasuredCostModel(tiny, measurer, tmp_path / "grow.jsonl")
    graph = next(iter(model.extractions.values())).graph
    xgb = XGBCostModel("llvm")
    assert _ready(xgb, model, retrain=True) is xgb.roofline and not xgb.fitted
    model.prefetch(graph, model.candidates(graph, max_group_size=1, max_num_groups=2))
    assert len(model.log) >= MIN_RECORDS
    assert _ready(xgb, model, retrain=True) is xgb and xgb.trained_on == len(model.log)
    roofline = AnalyticalCostModel("llvm")
    assert _ready(roofline, model, retrain=True) is roofline


def test_a_predictor_that_cannot_merge_makes_the_hybrid_say_so(tmp_path, tiny):
    class NoMerge(AnalyticalCostModel):
        def merged_latency(self, graph, ops):
            return None

    model = MeasuredCostModel(tiny, None, tmp_path / "empty.jsonl")
    graph = next(iter(model.extractions.values())).graph
    hybrid = HybridCostModel(model, NoMerge("llvm"))
    mergeable = next((a, b) for a in range(len(graph)) for b in range(a + 1, len(graph))
                     if merge_plan(graph, [a, b]) is not None)
    assert AnalyticalCostModel("llvm").merged_latency(graph, list(mergeable)) is not None
    assert hybrid.merged_latency(graph, list(mergeable)) is None


def test_with_tuned_kernels_only_a_logged_merge_is_priced(tmp_path, tiny):
    """A merged operator is a kernel the database does not hold: predicted, it would be
    priced as a tuned one and run untuned, so without a figure of its own it cannot merge."""
    from tvm_ios.cost.log import LogRecord

    model = MeasuredCostModel(tiny, None, tmp_path / "log.jsonl")
    graph = next(iter(model.extractions.values())).graph
    a, b = next((a, b) for a in range(len(graph)) for b in range(a + 1, len(graph))
                if merge_plan(graph, [a, b]) is not None)
    tuned = HybridCostModel(model, AnalyticalCostModel("llvm"), predict_merges=False)
    assert HybridCostModel(model, AnalyticalCostModel("llvm")).merged_latency(
        graph, [a, b]) is not None
    assert tuned.merged_latency(graph, [a, b]) is None
    assert tuned.stage_latency(graph, [[a], [b]]) > 0  # concurrent stages are still predicted
    model.log.append(LogRecord("merged", model.target, model.device_key, [5e-6], 5.0,
                               signature=model.signature(graph, [[a], [b]], True)))
    assert tuned.merged_latency(graph, [a, b]) == 5.0


def test_with_tuned_kernels_and_no_stage_log_no_merge_is_priced(tmp_path, tiny):
    """The pipeline's and the benchmark's cost model with a database that keeps no stage
    log: the roofline, merges left out (without a database it prices them)."""
    from tvm_ios.cost.hybrid import logged_cost_model
    from tvm_ios.tuning.kernel_db import KernelDB, host_target
    from tvm_ios.relax_pipeline.steps import cost_model_for

    kernels = KernelDB(tmp_path / "kdb", host_target(), create=True)
    graph = next(iter(MeasuredCostModel(tiny, None, tmp_path / "log.jsonl")
                      .extractions.values())).graph
    a, b = next((a, b) for a in range(len(graph)) for b in range(a + 1, len(graph))
                if merge_plan(graph, [a, b]) is not None)
    roofline = AnalyticalCostModel("llvm")
    assert logged_cost_model(tiny, None, roofline, "llvm") is roofline
    for tuned in (logged_cost_model(tiny, tmp_path / "none.jsonl", roofline, "llvm", kernels),
                  cost_model_for("llvm", "sequential", mod=tiny, kernels=kernels)):
        assert tuned.merged_latency(graph, [a, b]) is None
        assert tuned.stage_latency(graph, [[a], [b]]) == roofline.stage_latency(graph, [[a], [b]])
    assert cost_model_for("llvm", "sequential", mod=tiny).merged_latency(graph, [a, b]) > 0
