"""Every call of a real Relax VM, timed in its order (``runtime/instrument.py``)."""
import pytest

from tvm_ios import _tvm
from tvm_ios.bench import cpu_builds
from tvm_ios.bench.cpu_profile import _calls
from tvm_ios.kernels.prepack import rprogram_stages
from tvm_ios.passes.apply_schedule import schedule_of
from tvm_ios.runtime.compare import random_inputs
from tvm_ios.runtime.instrument import CallClock, TracedRun, compiled_kernels
from tvm_ios.testing import dag_model


@pytest.fixture(scope="module")
def concurrent():
    """A forked DAG with its concurrent stages as rPrograms of two vEUs."""
    model = dag_model(1, num_ops=8, channels=16, size=14, p=0.5)[0]
    _tvm.config_threads(2)
    info: dict = {}
    cpu_builds.build_rprogram(model, None, 2, info=info)
    assert info["rprograms"] > 0
    return model, info["_module"], info["_executable"]


def test_a_trace_is_every_call_in_order(concurrent):
    model, mod, executable = concurrent
    stages = rprogram_stages(mod)
    run = TracedRun(executable, random_inputs(model), stages)
    kernels = compiled_kernels(mod)
    first, second = run.trace(), run.trace()
    assert [n for n, _ in first] == [n for n, _ in second]
    traced = [n for n, _ in first if n in kernels]
    # each kernel as often as main calls it, the rPrograms among them; builtins besides
    assert {n: traced.count(n) for n in set(traced)} == _calls(mod)
    assert set(stages) <= set(traced) and len(first) > len(traced)
    assert all(s > 0 for _, s in first)
    assert run.stages == stages


def test_the_hook_is_removed_after_a_trace(concurrent, monkeypatch):
    model, _, executable = concurrent
    run = TracedRun(executable, random_inputs(model))
    hooks, real = [], _tvm.set_vm_instrument

    def spy(vm, instrument):
        hooks.append(instrument)
        real(vm, instrument)

    monkeypatch.setattr(_tvm, "set_vm_instrument", spy)
    run.trace()
    assert isinstance(hooks[0], CallClock) and hooks[-1] is None and len(hooks) == 2


def test_rprogram_kernels_name_the_ops_of_their_stage(concurrent):
    model, mod, _ = concurrent
    recorded, _, _ = cpu_builds.rprogram_plan(model, None, 2)
    wanted = {frozenset(s.ops) for s in schedule_of(recorded).stages
              if s.strategy == "concurrent" and len(s.groups) > 1}
    stages = list(rprogram_stages(mod).values())
    # each stage's ops in one rProgram (with the glue ops its regions took in), no op twice
    assert sorted(sum(w <= s for s in stages) for w in wanted) == [1] * len(wanted)
    assert len(stages) == len(wanted) and sum(map(len, stages)) == len(set().union(*stages))
