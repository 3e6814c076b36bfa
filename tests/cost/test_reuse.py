"""Stage figures keyed by what their build compiles: a database that grows keeps the figures
of stages whose kernels it did not change, and a stage whose kernels changed is measured."""
import shutil

import pytest

from tvm_ios.cost.log import MeasureLog
from tvm_ios.cost.stage_timing import MeasureError, Measurer
from tvm_ios.cost.measured import MeasuredCostModel
from tvm_ios.cost.reuse import build_digest
from tvm_ios.tuning.kernel_db import KernelDB, host_target
from tvm_ios.tuning.search import tune_kernels
from tvm_ios.testing import dag_model

from conftest import FAST

STAGES = ([[0]], [[0], [1]])  # an op alone, and two ops as one rProgram


@pytest.fixture(scope="module")
def tiny():
    """Two independent 3x3 convolutions of one input (one workload), then their sum."""
    return dag_model(seed=1, num_ops=2, channels=8, size=8, p=0.0)[0]


@pytest.fixture(scope="module")
def host_measurer():
    m = Measurer(host_target(), settings=FAST)
    yield m
    m.close()


@pytest.fixture(scope="module")
def measured(tiny, host_measurer, tmp_path_factory):
    """``tiny``'s convolution tuned (parallel and serial variants), two stages measured."""
    root = tmp_path_factory.mktemp("reuse")
    kernels = KernelDB(root / "kdb", host_target(), create=True)
    tune_kernels(tiny, kernels, variants=("parallel", "serial"), trials=2, cover=1,
                 min_repeat_ms=1)
    log = root / "stages.jsonl"
    model = MeasuredCostModel(tiny, host_measurer, log, kernels=kernels)
    graph = next(iter(model.extractions.values())).graph
    figures = [model.stage_latency(graph, groups) for groups in STAGES]
    return root, kernels, log, figures


def _grown(root, name):
    """A copy of the database with records of another model's kernel added."""
    shutil.copytree(root / "kdb", root / name)
    other = dag_model(seed=3, num_ops=1, channels=12, size=6, p=0.0)[0]
    grown = KernelDB(root / name)
    tune_kernels(other, grown, variants=("parallel",), trials=2, cover=1, min_repeat_ms=1)
    return KernelDB(root / name)


def test_measurements_log_their_build(measured):
    _, _, log, figures = measured
    records = MeasureLog(log).records
    assert len(records) == len(STAGES) and all(f > 0 for f in figures)
    assert all(len(r.build) == 16 for r in records)
    assert len({r.build for r in records}) == len(STAGES)


def test_a_grown_database_keeps_the_figures_of_unchanged_builds(measured, host_measurer, tiny):
    root, kernels, log, figures = measured
    grown = _grown(root, "grown")
    assert grown.fingerprint != kernels.fingerprint  # the cheap signatures all changed
    shutil.copy(log, root / "grown.jsonl")
    again = MeasuredCostModel(tiny, None, root / "grown.jsonl", target=host_measurer.target,
                              device_key=host_measurer.device_key, kernels=grown)
    graph = next(iter(again.extractions.values())).graph
    assert [again.stage_latency(graph, groups) for groups in STAGES] == figures  # no measurer
    assert again.counts["reused"] == len(STAGES)
    copied = MeasureLog(root / "grown.jsonl").records[len(STAGES):]
    assert [r.timestamp for r in copied] == [r.timestamp for r in MeasureLog(log).records]
    assert all(grown.fingerprint in r.signature for r in copied)
    cheap = MeasuredCostModel(tiny, None, root / "grown.jsonl", target=host_measurer.target,
                              device_key=host_measurer.device_key, kernels=grown)
    assert [cheap.logged(graph, groups) for groups in STAGES] == figures
    assert not cheap.modules  # found by the copies' signatures: nothing prepared


def test_a_stage_whose_kernels_changed_is_measured_again(measured, host_measurer, tiny):
    root, _, log, _ = measured
    untuned = KernelDB(root / "untuned", host_target(), create=True)  # none of tiny's kernels
    other = dag_model(seed=3, num_ops=1, channels=12, size=6, p=0.0)[0]
    tune_kernels(other, untuned, variants=("parallel",), trials=2, cover=1, min_repeat_ms=1)
    model = MeasuredCostModel(tiny, None, log, target=host_measurer.target,
                              device_key=host_measurer.device_key, kernels=untuned)
    graph = next(iter(model.extractions.values())).graph
    with pytest.raises(MeasureError, match="not in the log"):
        model.stage_latency(graph, STAGES[0])


def test_build_digest_follows_the_applied_kernels(measured, tiny, host_measurer):
    _, kernels, _, _ = measured
    tuned = MeasuredCostModel(tiny, None, None, target=host_measurer.target, kernels=kernels)
    graph = next(iter(tuned.extractions.values())).graph
    stage = tuned.stage(graph, STAGES[0])
    assert build_digest(stage.mod, host_measurer.target) == tuned.build(stage)
    plain = stage.mod.without_attr("tvm_ios.kernels")  # the same stage, built untuned
    assert build_digest(plain, host_measurer.target) != tuned.build(stage)
