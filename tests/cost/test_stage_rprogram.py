"""A concurrent stage is measured as it runs: one rProgram on llvm, one persistent kernel on
CUDA (checked without a GPU); sequential engines and single groups stay as they were."""

import numpy as np
import pytest
from tvm import relax

from tvm_ios.bench.artifact import _cuda_sources
from tvm_ios.kernels.gpu.build import kernel_signatures, persistent_kernel
from tvm_ios.cost.stage_timing import build_stage, prepare_stage
from tvm_ios.cost.measured import MeasuredCostModel
from tvm_ios.cost.stage_module import BALANCED_TAG, ENGINE_ATTR, RPROGRAM_TAG, stage_module
from tvm_ios.graph.extract import extract
from tvm_ios.runtime.compare import random_inputs, run


@pytest.fixture(scope="module")
def ext(tiny):
    return extract(tiny["main"])


def _rprograms(mod) -> list[str]:
    return [gv.name_hint for gv, f in mod.functions.items()
            if f.attrs is not None and "tvm_ios.rprogram" in f.attrs]


def _calls(mod, op_name: str) -> int:
    found = []
    relax.analysis.post_order_visit(
        mod["main"], lambda e: found.append(e) if isinstance(e, relax.Call)
        and getattr(e.op, "name", "") == op_name else None)
    return len(found)


def test_concurrent_stage_builds_as_one_rprogram_on_llvm(ext):
    stage = stage_module(ext, [[0], [1], [2, 3]])
    assert stage.key.endswith(RPROGRAM_TAG) and stage.signature.endswith(RPROGRAM_TAG)
    mod = prepare_stage(stage.mod, "llvm")
    assert len(_rprograms(mod)) == 1
    assert _calls(mod, "relax.call_tir") == 1  # the whole stage is one kernel call


def test_rprogram_stage_computes_what_its_groups_compute(ext):
    concurrent = stage_module(ext, [[0], [1], [2, 3]])
    sequential = stage_module(ext, [[0], [1], [2, 3]], engine="sequential")
    x = random_inputs(concurrent.mod)
    a = run(build_stage(concurrent.mod, "llvm"), x)
    b = run(build_stage(sequential.mod, "llvm"), x)
    for u, v in zip(a, b):
        np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-5)


def test_balanced_engine_is_logged_apart_and_computes_the_same(ext):
    groups = [[0], [1], [2, 3]]
    balanced, default = stage_module(ext, groups, engine="balanced"), stage_module(ext, groups)
    assert balanced.signature.endswith(BALANCED_TAG) and balanced.key.endswith(BALANCED_TAG)
    assert balanced.mod.attrs[ENGINE_ATTR] == "balanced" != default.mod.attrs[ENGINE_ATTR]
    assert len(_rprograms(prepare_stage(balanced.mod, "llvm"))) == 1
    x = random_inputs(balanced.mod)
    for u, v in zip(run(build_stage(balanced.mod, "llvm"), x),
                    run(build_stage(default.mod, "llvm"), x)):
        np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-5)


def test_sequential_engine_and_single_groups_are_not_rewritten(ext):
    for stage in (stage_module(ext, [[0], [1]], engine="sequential"),
                  stage_module(ext, [[2, 3]]),
                  stage_module(ext, [[0], [1], [2]], merge=True)):
        assert ENGINE_ATTR not in stage.mod.attrs
        assert not _rprograms(prepare_stage(stage.mod, "llvm"))
        assert not stage.key.endswith(RPROGRAM_TAG)


def test_cuda_concurrent_stage_is_one_persistent_kernel(ext):
    """#12 item 5: the module RPCRunner times for a CUDA stage holds one persistent kernel."""
    stage = stage_module(ext, [[0], [1], [2, 3]])
    target = "nvidia/nvidia-h100"
    mod = prepare_stage(stage.mod, target)
    assert _calls(mod, "relax.call_dps_packed") == 1
    (lib,) = mod.attrs["external_mods"]
    sources = _cuda_sources(build_stage(stage.mod, target))
    ours = [src for src in sources if "rp_offsets" in src]
    assert lib is not None and len(ours) == 1
    # one program: its step-zeroing kernel and its persistent kernel, nothing else of ours
    assert set(kernel_signatures(ours[0])) == set(persistent_kernel(ours[0], "main_ios_stage0"))


def test_measured_model_measures_the_rprogram(ext, measurer):
    model = MeasuredCostModel(extract(ext.func), measurer)
    graph = next(iter(model.extractions.values())).graph
    latency = model.stage_latency(graph, [[0], [1]])
    assert 0 < latency < float("inf")
    (record,) = [r for r in model.log.records if r.key.endswith(RPROGRAM_TAG)]
    assert record.signature == model.signature(graph, [[1], [0]])  # groups are a set
    sequential = MeasuredCostModel(extract(ext.func), measurer, model.log, engine="sequential")
    assert sequential.logged(graph, [[0], [1]]) is None  # a back-to-back figure is another
