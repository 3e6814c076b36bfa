"""The kernel guard of the rewrites: each graph rewritten and looked up once."""
import gc

import pytest
import tvm

from tvm_ios.kernels import tuned_build
from tvm_ios.tuning.kernel_db import KernelDB, host_target
from tvm_ios.tuning.search import tune_kernels
from tvm_ios.passes import kernel_guard
from tvm_ios.passes.dedup_ops import DedupOps, dedup_for_kernels
from tvm_ios.passes.trim_dead_taps import TrimDeadTaps, trim_for_kernels
from tvm_ios.testing import dead_taps_model, repeated_calls_model


@pytest.fixture
def looked_up(monkeypatch):
    """The graphs the guard looks up in a database, in turn."""
    graphs = []
    apply = tuned_build.apply_kernels

    def counted(mod, kernels):
        graphs.append(mod)
        return apply(mod, kernels)
    monkeypatch.setattr(tuned_build, "apply_kernels", counted)
    return graphs


def test_a_decided_rewrite_returns_its_run_again_and_runs_on_another_module():
    for rewrite, mod, other in [(DedupOps(), repeated_calls_model(), repeated_calls_model(1)),
                                (TrimDeadTaps(), dead_taps_model(), dead_taps_model(1))]:
        out = rewrite(mod)
        assert not out.same_as(mod)  # rewritten
        assert rewrite(mod).same_as(out)  # not rewritten a second time
        again = rewrite(other)
        assert not again.same_as(out) and not again.same_as(other)
        tvm.ir.assert_structural_equal(type(rewrite)()(other), again)


def test_the_pipeline_steps_look_each_graph_up_once(tmp_path, looked_up):
    kernels = KernelDB(tmp_path, host_target(), create=True)  # nothing tuned: both kept
    mod = repeated_calls_model(size=1)  # repeated calls, and 3x3 taps reading only padding
    dedup = dedup_for_kernels(mod, kernels)
    deduped = dedup(mod)
    trim = trim_for_kernels(deduped, kernels)
    assert isinstance(dedup, DedupOps) and isinstance(trim, TrimDeadTaps)
    assert trim(deduped).same_as(trim(deduped))
    assert len(looked_up) == 3  # the original, the deduplicated, the trimmed graph
    del dedup, trim, deduped
    looked_up.clear()
    gc.collect()
    assert kernel_guard._last_lookup[0][0]() is None  # the cache keeps no graph alive


def test_records_tuned_since_a_lookup_are_seen(tmp_path, looked_up):
    kernels = KernelDB(tmp_path, host_target(), create=True)
    graph = dead_taps_model()
    untuned = kernel_guard._untuned(graph, kernels)
    assert untuned and kernel_guard._untuned(graph, kernels) == untuned  # cached
    assert len(looked_up) == 1
    tune_kernels(graph, kernels, variants=("parallel",), trials=0, cover=2, min_repeat_ms=1)
    assert len(kernel_guard._untuned(graph, kernels)) < len(untuned)  # looked up again
    assert len(looked_up) == 2
