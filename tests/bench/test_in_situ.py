"""Kernels timed inside the model (``bench/in_situ.py``): real builds, one run's calls
recorded through the Relax VM's instrument hook and replayed, every kernel call of ``main``
accounted for."""
import numpy as np
import pytest
import tvm
from tvm import relax

from tvm_ios import _tvm
from tvm_ios.bench import cpu_builds
from tvm_ios.bench.cpu_profile import call_counts
from tvm_ios.bench.in_situ import (compare_in_situ, in_situ_profile, kernel_names,
                                   recorded_calls, replay, rprogram_gain)
from tvm_ios.runtime.compare import random_inputs
from tvm_ios.testing import dag_model


@pytest.fixture(scope="module")
def builds():
    """A forked DAG built in turn (TVM's kernels) and with its concurrent stages as
    rPrograms on two vEUs."""
    model = dag_model(1, num_ops=8, channels=16, size=14, p=0.5)[0]
    _tvm.config_threads(2)
    in_turn, concurrent = {}, {}
    cpu_builds.build_tuned(model, None, in_turn)
    cpu_builds.build_rprogram(model, None, 2, info=concurrent)
    assert concurrent["rprograms"] > 0
    return model, {label: (info["_module"], info["_executable"])
                   for label, info in (("in turn", in_turn), ("concurrent", concurrent))}


def test_every_kernel_call_is_timed_inside_the_model(builds):
    model, compiled = builds
    out = compare_in_situ(compiled, random_inputs(model), 2, rounds=3)
    for label, (mod, _) in compiled.items():
        row = out[label]
        assert row["calls"] == sum(call_counts(mod).values())
        assert sum(r["calls"] for r in row["kernels"]) == row["calls"]
        assert all(r["total_us"] > 0 for r in row["kernels"])
        assert 0 < row["kernels_us"] <= row["replayed_us"]
        assert row["model_us"] > 0
    concurrent, in_turn = out["concurrent"], out["in turn"]
    assert concurrent["rprograms"] == len(kernel_names(compiled["concurrent"][0])[1]) > 0
    assert concurrent["rprograms_us"] > 0 and concurrent["other_kernels_us"] > 0
    assert in_turn["rprograms"] == 0 and in_turn["rprograms_us"] == 0
    assert {r["rprogram"] for r in concurrent["kernels"]} == {True, False}


def _conv_then_pool():
    """A 64-channel 3x3 convolution on 32x32 (75 MFLOP), then a 2x2 max pool of its
    output: two kernels, the first some hundred times the work of the second."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 64, 32, 32), "float32"))
    w = relax.const(np.random.default_rng(0).standard_normal((64, 64, 3, 3)).astype("float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.conv2d(x, w, padding=1))
            out = bb.emit_output(relax.op.nn.max_pool2d(y, pool_size=2, strides=2))
        bb.emit_func_output(out)
    return bb.get()


def test_each_kernel_gets_its_own_time():
    """The convolution takes the time: a hook that timed the gaps between calls instead of
    the calls does not put it first by far (checked)."""
    mod = relax.transform.LegalizeOps()(_conv_then_pool())
    mod = relax.transform.FuseOps()(relax.transform.AnnotateTIROpPattern()(mod))
    mod = relax.transform.FuseTIR()(mod)
    executable = tvm.compile(mod, target="llvm")
    row = in_situ_profile(mod, executable, [np.ones((1, 64, 32, 32), "float32")], 1, rounds=5)
    names = [r["kernel"] for r in row["kernels"]]
    assert len(names) == 2 and "conv2d" in names[0] and "pool" in names[1]
    assert row["kernels"][0]["total_us"] > 20 * row["kernels"][1]["total_us"]


def test_the_replay_runs_the_models_kernels_on_its_buffers(builds):
    """Replayed calls compute the model's output again, into the buffer the run returned:
    zeroed after the run, it holds the output once more after the replay."""
    model, compiled = builds
    _, executable = compiled["concurrent"]
    vm = _tvm.virtual_machine(executable, _tvm.cpu())
    args = [_tvm.tensor(x, _tvm.cpu()) for x in random_inputs(model)]
    expected = vm["main"](*args).numpy()
    calls = recorded_calls(vm, args)
    kernels = kernel_names(compiled["concurrent"][0])[0]
    # the output buffer of the last kernel call
    out = [call_args for name, _, call_args in calls if name in kernels][-1][-1]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)
    out.copyfrom(np.zeros(out.shape, "float32"))
    wall, seconds, counts = replay(calls)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)
    assert sum(counts.values()) == len(calls) and 0 < sum(seconds.values()) <= wall


def test_the_gain_of_the_rprograms_inside_the_model():
    concurrent = {"rprograms_us": 300.0, "other_kernels_us": 500.0, "model_us": 900.0}
    in_turn = {"kernels_us": 900.0, "model_us": 1000.0}
    assert rprogram_gain(concurrent, in_turn) == {
        "rprograms_us": 300.0, "stages_in_turn_us": 400.0, "gain_us": 100.0,
        "model_gain_us": 100.0}
