"""RProgramPass on llvm: rewritten modules match the original build on random inputs."""
import os

os.environ.setdefault("TVM_NUM_THREADS", "4")  # before TVM creates its pool: 2+ vEUs

import pytest  # noqa: E402
import tvm

from tvm_ios.cost.analytical import AnalyticalCostModel
from tvm_ios.kernels.simulator import simulate
from tvm_ios.kernels.vdevice import pool_threads
from tvm_ios.passes.ios_pass import IOSPass
from tvm_ios.passes.rprogram_pass import RProgramPass
from tvm_ios.runtime.compare import build, compare_modules, random_inputs, run
from tvm_ios.testing import dag_model


def _calls_to(mod, prefix):
    return [gv.name_hint for gv in mod.get_global_vars() if gv.name_hint.startswith(prefix)]


@pytest.mark.parametrize("seed", range(2))
def test_ios_policy_matches_original(seed):
    mod, params = dag_model(seed, num_ops=10, p=0.2)
    rewrite = RProgramPass("ios", cost_model=AnalyticalCostModel("h100"))
    before = mod.clone()
    new = rewrite(mod)
    assert rewrite.programs and _calls_to(new, "main_ios_stage")
    assert not _calls_to(mod, "main_ios_stage")  # the caller's module is left as it was
    tvm.ir.assert_structural_equal(mod, before)
    for program in rewrite.programs:
        simulate(program)
    result = compare_modules(mod, new, params)
    assert result.max_abs_diff <= 1e-5 * max(1.0, result.max_abs_value)


@pytest.mark.parametrize("seed", range(2))
def test_wavefront_policy_with_barriers_matches_original(seed):
    mod, params = dag_model(seed, num_ops=10, p=0.3, max_fanin=1)
    rewrite = RProgramPass("wavefront")
    new = rewrite(mod)
    assert rewrite.programs
    if pool_threads() > 1:
        assert any(p.num_barriers for p in rewrite.programs)
    result = compare_modules(mod, new, params)
    assert result.max_abs_diff <= 1e-5 * max(1.0, result.max_abs_value)


@pytest.mark.parametrize("policy", ["wavefront", "ios"])
def test_joins_run_as_glue_rtasks(policy):
    mod, params = dag_model(3, num_ops=10, p=0.35)
    rewrite = RProgramPass(policy, cost_model=AnalyticalCostModel("h100"))
    new = rewrite(mod)
    ops = [op for p in rewrite.programs for op in p.ops]
    if policy == "wavefront":
        assert any(op.endswith("_glue") for op in ops)
    result = compare_modules(mod, new, params)
    assert result.max_abs_diff <= 1e-5 * max(1.0, result.max_abs_value)


def test_after_iospass_with_merged_convolutions():
    mod, params = dag_model(1, num_ops=8)
    scheduled = IOSPass(AnalyticalCostModel("h100"))(mod)
    new = RProgramPass("ios", cost_model=AnalyticalCostModel("h100"))(scheduled)
    result = compare_modules(mod, new, params)
    assert result.max_abs_diff <= 1e-5 * max(1.0, result.max_abs_value)


def test_bad_policy_and_function_are_named():
    with pytest.raises(ValueError, match="policy must be one of"):
        RProgramPass("greedy")
    mod, _ = dag_model(0, num_ops=3)
    with pytest.raises(ValueError, match="no function 'nope'"):
        RProgramPass(func_name="nope")(mod)


def test_kernel_prologue_and_barriers_in_tir():
    mod, _ = dag_model(1, num_ops=10, p=0.3, max_fanin=1)
    rewrite = RProgramPass("wavefront")
    new = rewrite(mod)
    funcs = [f for gv, f in new.functions.items() if gv.name_hint.startswith("main_wave")]
    assert funcs
    text = funcs[0].script()
    assert "T.parallel" in text and "rprogram_steps" in text
    if any(p.num_barriers for p in rewrite.programs):
        assert "llvm.x86.sse2.mfence" in text and "volatile_scope" in text
        assert tvm.compile(new, "llvm") is not None


def test_kernel_refuses_a_thread_pool_smaller_than_its_veus():
    mod, params = dag_model(1, num_ops=10, p=0.3, max_fanin=1)
    rewrite = RProgramPass("wavefront")
    new = rewrite(mod)
    veus = max(p.num_veus for p in rewrite.programs)
    if veus < 2:
        pytest.skip("thread pool has one worker here: nothing to refuse")
    exe = build(new, "llvm", params)
    config = tvm.get_global_func("runtime.config_threadpool")
    before = pool_threads()
    config(0, 1)
    try:
        with pytest.raises(Exception, match=f"needs {veus} resident vEUs"):
            run(exe, random_inputs(mod))
    finally:
        config(0, before)
    assert pool_threads() == before


@pytest.mark.slow
@pytest.mark.parametrize("name,size", [("squeezenet", 64), ("inception_v3", 75),
                                       ("randwire", 32), ("nasnet_a", 32)])
@pytest.mark.parametrize("policy", ["ios", "wavefront"])
def test_zoo_models_match_on_llvm(name, size, policy):
    from tvm_ios import models

    mod, params = models.get(name, image_size=size)
    rewrite = RProgramPass(policy, cost_model=AnalyticalCostModel("h100"))
    new = rewrite(mod)
    assert rewrite.programs
    result = compare_modules(mod, new, params)
    assert result.max_abs_diff <= 1e-4 * max(1.0, result.max_abs_value)


def test_squeezenet_matches_on_llvm():
    from tvm_ios import models

    mod, params = models.get("squeezenet", image_size=32)
    rewrite = RProgramPass("ios", cost_model=AnalyticalCostModel("h100"))
    new = rewrite(mod)
    assert len(rewrite.programs) >= 4  # the fire modules' expand1x1 | expand3x3 stages
    result = compare_modules(mod, new, params)
    assert result.max_abs_diff <= 1e-4 * max(1.0, result.max_abs_value)
