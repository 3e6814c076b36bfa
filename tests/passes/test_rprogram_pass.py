"""RProgramPass on llvm: rewritten modules match the original build on random inputs."""
import pytest
import tvm

from tvm_ios import _tvm
from tvm_ios.cost.analytical import AnalyticalCostModel
from tvm_ios.kernels.bounded_wait import BoundedWaitError
from tvm_ios.kernels.rprogram import RTask
from tvm_ios.kernels.interpreter import simulate
from tvm_ios.kernels.vdevice import pool_threads
from tvm_ios.passes.ios_pass import IOSPass
from tvm_ios.passes.rprogram_pass import RProgramPass
from tvm_ios.runtime.compare import build, compare_modules, random_inputs, run
from tvm_ios.testing import dag_model


pytestmark = pytest.mark.usefixtures("two_workers")  # (tests/conftest.py)


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
    assert rewrite.programs and pool_threads() == 2
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
    assert any(p.num_barriers for p in rewrite.programs)
    assert "llvm.x86.sse2.mfence" in text and "volatile_scope" in text
    assert tvm.compile(new, "llvm") is not None


def test_kernel_refuses_a_thread_pool_smaller_than_its_veus():
    mod, params = dag_model(1, num_ops=10, p=0.3, max_fanin=1)
    rewrite = RProgramPass("wavefront")
    new = rewrite(mod)
    veus = max(p.num_veus for p in rewrite.programs)
    assert veus >= 2
    exe = build(new, "llvm", params)
    _tvm.config_threads(1)
    with pytest.raises(Exception, match=f"needs {veus} resident vEUs"):
        run(exe, random_inputs(mod))


def _with_wait(monkeypatch, waits):
    """Make the pass plan programs whose vEU 1, after all its rTasks, waits for ``waits``
    (vEU, step): nothing waits for vEU 1 then, so only its own wait can fail."""
    import tvm_ios.passes.rprogram_pass as rprogram_pass

    plan = rprogram_pass.plan_regions

    def planned(*args, **kwargs):
        schedule, items = plan(*args, **kwargs)
        for item in items:
            if item[0] == "region" and item[2].num_veus > 1:
                item[2].prog[1].append(RTask(kind="barrier", waits=waits))
        return schedule, items
    monkeypatch.setattr(rprogram_pass, "plan_regions", planned)


def test_a_wait_that_is_never_met_ends_with_the_bounded_wait_error(monkeypatch):
    mod, params = dag_model(1, num_ops=10, p=0.3, max_fanin=1)
    _with_wait(monkeypatch, ((0, 99),))  # vEU 0 never reaches step 99
    rewrite = RProgramPass("wavefront", wait_bound=2_000_000)
    exe = build(rewrite(mod), "llvm", params)
    name = next(p.name for p in rewrite.programs if p.num_veus > 1)
    with pytest.raises(BoundedWaitError, match=rf"rProgram {name}: vEU 1 waited past its "
                                               r"bound \(2000000 polls\) for vEU 0 to reach "
                                               r"step 99"):
        run(exe, random_inputs(mod))


def test_programs_keep_their_own_step_workspace():
    """Each program's steps are allocated by its own PrimFunc (a per-call workspace), not
    passed in, so programs of equal vEU counts cannot share them; running twice matches."""
    mod, params = dag_model(3, num_ops=10, p=0.35)
    rewrite = RProgramPass("wavefront", max_ops=3)
    new = rewrite(mod)
    funcs = {gv.name_hint: f for gv, f in new.functions.items()
             if gv.name_hint.startswith("main_wave")}
    counts = [p.num_veus for p in rewrite.programs]
    assert len(funcs) >= 2 and len(set(counts)) < len(counts)  # equal vEU counts
    for func in funcs.values():
        assert "rprogram_steps" not in [p.name for p in func.params]
        assert "rprogram_steps = T.alloc_buffer(" in func.script() or \
            "rprogram_steps = T.sblock_alloc_buffer(" in func.script()
    exe = build(new, "llvm", params)
    inputs = random_inputs(mod)
    first, second = run(exe, inputs), run(exe, inputs)
    for a, b in zip(first if isinstance(first, list) else [first],
                    second if isinstance(second, list) else [second]):
        assert (a == b).all()
    result = compare_modules(mod, new, params)
    assert result.max_abs_diff <= 1e-5 * max(1.0, result.max_abs_value)


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


def test_a_pass_that_builds_no_program_leaves_the_bindings_as_they_were():
    """Nothing to run on vEUs (every stage one group): the bindings keep their order, which
    decides how the build fuses and so which tuned kernels it finds (ResNeXt-29 lost 3 of
    19 to a reordering and ran 10x slower)."""
    from tvm_ios.graph.extract import extract
    from tvm_ios.passes.apply_schedule import record_schedule
    from tvm_ios.schedule.baselines import sequential_schedule

    mod, _ = dag_model(1, num_ops=8, p=0.4)
    graph = extract(mod["main"]).graph
    schedule = sequential_schedule(graph)
    order, done = [], 0  # another topological order: the latest ready op first
    while len(order) < len(graph):
        ready = [i for i in range(len(graph)) if not done >> i & 1
                 and graph.pred[i] & done == graph.pred[i]]
        order.append(ready[-1])
        done |= 1 << ready[-1]
    assert order != sorted(order)
    schedule.stages = [schedule.stages[i] for i in order]
    recorded = record_schedule(mod, "main", schedule)
    rewrite = RProgramPass("ios")
    new = rewrite(recorded)
    assert not rewrite.programs
    tvm.ir.assert_structural_equal(new["main"].body, mod["main"].body)
