"""A real pipeline over two CPU EPs (thread groups) computes what the unpartitioned model does;
online tuners drive it with real measurements; a stage failing at run time is named."""
import os
import threading

import numpy as np
import pytest

from .tiny import tiny_cnn
from tvm_ios import _tvm, models
from tvm_ios.pipelining.eps import parse_eps
from tvm_ios.pipelining.executor import PipelineError, PipelineExecutor
from tvm_ios.pipelining.run import run_search
from tvm_ios.pipelining.space import Config, ConfigSpace
from tvm_ios.pipelining.stages import PipelineMeasure, StagePlan, compile_stages, pipeline_specs
from tvm_ios.runtime.compare import build, run


@pytest.fixture(scope="module")
def plan():
    mod, params = tiny_cnn(size=16)
    return StagePlan.from_model(mod, params)


def _pipeline_matches(plan, config, frames: int, rtol: float):
    """Run ``frames`` frames through the two-EP pipeline of ``config``; check each output
    against the unpartitioned build; returns the compiled stages and the run's result."""
    compiled = compile_stages(plan, config.stages)
    inputs = [[_tvm.tensor(a) for a in plan.inputs(seed)] for seed in range(frames)]
    result = PipelineExecutor(pipeline_specs(compiled, parse_eps("cpu2"), config)).run(inputs)
    reference = build(plan.mod)
    assert len(result.outputs) == frames
    for seed, out in enumerate(result.outputs):
        expected = run(reference, plan.inputs(seed))
        assert np.abs(out[0].numpy() - expected).max() <= rtol * np.abs(expected).max()
    return compiled, result


def test_two_cpu_eps_equal_unpartitioned(plan):
    compiled, result = _pipeline_matches(plan, Config((3, 4), (1, 0)), 5, 1e-6)
    assert [s.name for s in compiled] == ["layers0-2", "layers3-6"]


def test_online_tuners_drive_the_executor(plan):
    eps = parse_eps("cpu2")
    measure = PipelineMeasure(plan, eps, frames=3)
    space = ConfigSpace(plan.num_layers, len(eps))
    result = run_search("shisha", space, measure, [n.flops for n in plan.graph.nodes], eps,
                        alpha=1)
    assert result.throughput > 0 and result.evaluated >= 2
    assert len(measure.cache) <= 2 * result.evaluated  # compiled once per layer range


def test_stage_failing_at_run_time_is_named(plan):
    eps = parse_eps("cpu2")
    config = Config((2, 5), (0, 1))
    compiled = compile_stages(plan, config.stages)
    good = [_tvm.tensor(x) for x in plan.inputs()]
    wrong = [_tvm.tensor(np.zeros((1, 3, 9, 9), "float32"))]
    with pytest.raises(PipelineError, match=r"stage 'layers0-1@cpu0' failed on frame 1"):
        PipelineExecutor(pipeline_specs(compiled, eps, config)).run([good, wrong, good])


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_cpu_eps_are_thread_groups_on_their_cores(plan):
    stage = compile_stages(plan, [plan.num_layers])[0]
    seen = {}

    def probe(ep):
        stage.runner(ep)
        seen[ep.name] = os.sched_getaffinity(0)
    for ep in parse_eps("cpu2"):
        thread = threading.Thread(target=probe, args=(ep,))
        thread.start()
        thread.join()
    assert seen == {"cpu0": {0}, "cpu1": {1}}


def test_online_search_keeps_results_when_a_stage_fails(plan):
    eps = parse_eps("cpu2")
    measure = PipelineMeasure(plan, eps, frames=2)
    calls = []
    real = measure.__call__

    def flaky(config):                         # the second configuration gets a bad frame
        calls.append(config)
        if len(calls) == 2:
            measure.inputs = [_tvm.tensor(np.zeros((1, 3, 9, 9), "float32"))]
        return real(config)
    space = ConfigSpace(plan.num_layers, len(eps))
    result = run_search("shisha", space, flaky, [1.0] * plan.num_layers, eps, alpha=2)
    assert "failed on frame 0" in result.extra["error"] and "layers0-" in result.extra["error"]
    assert result.evaluated == 1 and result.throughput > 0 and result.configuration == calls[0]


def _zoo_pipeline_matches(name, image_size, first):
    mod, params = models.get(name, image_size=image_size)
    plan = StagePlan.from_model(mod, params)
    _pipeline_matches(plan, Config((first, plan.num_layers - first), (0, 1)), 3, 1e-4)


def test_zoo_model_over_two_cpu_eps_equals_unpartitioned():
    _zoo_pipeline_matches("synthnet", 63, 9)


@pytest.mark.slow
def test_resnet50_over_two_cpu_eps_equals_unpartitioned():
    _zoo_pipeline_matches("resnet50", 32, 20)         # residuals cross the cut
