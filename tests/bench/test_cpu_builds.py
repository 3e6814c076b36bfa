"""The rProgram column's build decides each concurrent stage from both sides measured, then
the stages kept from the whole model timed a few ways."""
import numpy as np
import pytest

from tvm_ios import _tvm
from tvm_ios.bench import cpu_builds
from tvm_ios.cost.stage_timing import MeasureSettings, Measurer
from tvm_ios.cost.model_judge import candidate_sizes
from tvm_ios.runtime.compare import build, random_inputs, run
from tvm_ios.testing import dag_model, dead_taps_model


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


def test_one_veu_builds_the_sequential_graph_unscheduled(forked):
    """With one vEU nothing runs concurrently: no schedule is priced or recorded."""
    decisions = []
    plan, rewrite = cpu_builds.rprogram_plan(forked, None, 1, decisions=decisions)
    assert rewrite is None and decisions == []
    assert _tvm.tvm_ffi.structural_equal(plan, cpu_builds.ios_graph(forked))
    _, two = cpu_builds.rprogram_plan(forked, None, 2, decisions=decisions)
    assert two is not None and decisions


def test_the_column_schedules_as_the_ios_pipeline_does(forked, tmp_path):
    """One cost model for both: the rProgram column runs the schedule ``tvm-ios run`` builds
    from the same log. The log says one concurrent pair, which neither schedule takes
    unlogged, is nearly free: both take it, and agree on every other stage."""
    from tvm_ios.cost.stage_judges import rprogram_schedule
    from tvm_ios.cost.log import LogRecord, MeasureLog
    from tvm_ios.cost.measured import MeasuredCostModel
    from tvm_ios.graph.analysis import ancestors
    from tvm_ios.passes.apply_schedule import schedule_of
    from tvm_ios.relax_pipeline import pipeline

    _tvm.config_threads(2)
    log = MeasureLog(tmp_path / "stages.jsonl")
    model = MeasuredCostModel(forked, None, log, engine="rprogram")
    graph = next(iter(model.extractions.values())).graph

    def both():
        column = schedule_of(rprogram_schedule(
            forked, cpu_builds.stage_cost_model(forked, None, log=log.path)))
        _, report = pipeline(log=log.path).rewrite(forked, _tvm.make_target("llvm"))
        column = [sorted(map(sorted, s.groups)) for s in column.stages]
        assert column == [sorted(map(sorted, s["groups"])) for s in
                          report["schedule"]["stages"]]
        return column

    log.append(LogRecord("op0", model.target, model.device_key, [1e-4], 100.0,
                         signature=model.signature(graph, [[0]])))
    before = both()
    anc = ancestors(graph)
    name = [n.name for n in graph.nodes]
    a, b = next((a, b) for a in range(len(graph)) for b in range(a + 1, len(graph))
                if not (anc[b] >> a) & 1 and not (anc[a] >> b) & 1
                and [[name[a]], [name[b]]] not in before)
    log.append(LogRecord("pair", model.target, model.device_key, [1e-9], 1e-3,
                         signature=model.signature(graph, [[a], [b]])))
    assert [[name[a]], [name[b]]] in both()


def _weight_shapes(info) -> list:
    """The (8, 8, kh, kw) weight buffers of a build's kernels."""
    return sorted(tuple(int(d) for d in p.shape) for f in info["_module"].functions.values()
                  if isinstance(f, _tvm.tirx.PrimFunc) for p in f.params
                  if hasattr(p, "shape") and len(p.shape) == 4 and int(p.shape[0]) == 8)


def test_the_tvm_ios_columns_run_the_trimmed_graph():
    """'tvm-ios sequential (tuned)' (like the stages and rProgram columns) builds the graph
    with its dead taps cut, 'TVM tuned sequential' the graph as given; outputs equal."""
    mod = dead_taps_model()
    ours, theirs = {}, {}
    executable = cpu_builds.build_ios_sequential(mod, None, ours)
    cpu_builds.build_tuned(mod, None, theirs)
    assert _weight_shapes(theirs) == [(8, 8, 1, 7), (8, 8, 7, 1)]
    assert _weight_shapes(ours) == [(8, 8, 1, 5), (8, 8, 5, 1)]
    inputs = random_inputs(mod)
    np.testing.assert_allclose(run(executable, inputs), run(build(mod), inputs),
                               rtol=1e-5, atol=1e-5)


def test_zoo_case_binds_the_weights_and_draws_the_input(monkeypatch):
    """The model's weights bound (its only parameter the input), the input drawn with the
    seed, and the database directory of the model and size for this CPU (opened as given:
    there is none for this size)."""
    monkeypatch.setattr(cpu_builds, "open_kernels", lambda path: path)
    name, size, mod, x, kernels = cpu_builds.zoo_case("squeezenet:32", seed=3)
    assert (name, size, len(mod["main"].params)) == ("squeezenet", 32, 1)
    assert x.shape == (1, 3, 32, 32) and x.dtype == np.float32
    np.testing.assert_array_equal(x, cpu_builds.zoo_case("squeezenet:32", seed=3)[3])
    assert not np.array_equal(x, cpu_builds.zoo_case("squeezenet:32", seed=4)[3])
    assert kernels.name == "squeezenet-32" and kernels.parent.parent.name == "kernels"
