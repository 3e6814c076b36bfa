"""The rProgram column's build decides each concurrent stage from both sides measured, then
the stages kept from the whole model timed a few ways."""
import numpy as np
import pytest

from tvm_ios import _tvm
from tvm_ios.bench import cpu_builds
from tvm_ios.cost.measure import MeasureSettings, Measurer
from tvm_ios.cost.model_judge import candidate_sizes
from tvm_ios.runtime.compare import build, random_inputs, run
from tvm_ios.testing import dag_model


@pytest.fixture(scope="module")
def forked():
    return dag_model(1, num_ops=8, channels=16, size=14, p=0.5)[0]


def test_measured_rprogram_build_matches_and_every_decision_is_measured(forked):
    _tvm.config_threads(2)
    measurer = Measurer("llvm", settings=MeasureSettings(number=1, repeat=2, warmup=1))
    info = {}
    try:
        executable = cpu_builds.build_rprogram(forked, None, 2, info=info, measurer=measurer)
    finally:
        measurer.close()
    assert info["fallback"] and all(d["measured"] for d in info["fallback"])
    kept = sum(d["kept"] == "concurrent" for d in info["fallback"])
    judged = info["model_judge"]  # the chosen build is the one returned, not built again
    assert info["rprograms"] == judged["kept"] <= kept == judged["ranked"]
    assert judged["measured"] == (kept > 0) and len(judged["figures"]) == (kept > 0) * len(
        candidate_sizes(kept))
    inputs = random_inputs(forked)
    np.testing.assert_allclose(run(executable, inputs), run(build(forked), inputs),
                               rtol=1e-5, atol=1e-5)


def test_without_a_measurer_nothing_is_measured(forked):
    info = {}
    cpu_builds.build_rprogram(forked, None, 2, info=info)
    assert not any(d["measured"] for d in info["fallback"])
