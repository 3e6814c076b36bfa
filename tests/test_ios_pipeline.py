"""tvm_ios.pipeline: the "ios" Relax pipeline is registered on `import tvm` and builds runnable code."""
import numpy as np
import tvm
from tvm import relax

from tvm_ios.passes.apply_schedule import schedule_of
from tvm_ios.pipeline import ios_pipeline
from tvm_ios.runtime.compare import build, random_inputs, run


def test_registered_on_import():
    assert "ios" in relax.pipeline.PIPELINE_MAP


def test_compile_with_ios_pipeline_matches_default(inception_like):
    inputs = random_inputs(inception_like)
    ios = run(tvm.compile(inception_like, "llvm", relax_pipeline="ios"), inputs)
    default = run(build(inception_like), inputs)
    np.testing.assert_allclose(ios, default, rtol=1e-5, atol=1e-5)


def test_pipeline_options_reach_the_pass(inception_like):
    with tvm.target.Target("llvm"):
        lowered = ios_pipeline(max_group_size=1, max_num_groups=1)(inception_like)
    schedule = schedule_of(lowered)  # recorded by IOSPass, kept through the default build
    assert schedule.params["max_group_size"] == 1
    assert all(len(s.ops) == 1 for s in schedule.stages)
