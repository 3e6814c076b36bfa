"""ios-graphturbo runs GraphTurbo's instances in GraphTurbo's order (issue 61, item 3): the
IOS step schedules within it, so the instances of the final module, read in binding order,
are the plan's order, one contiguous run each, and the build still matches TVM's."""
import numpy as np
import pytest
import tvm
from tvm import relax

from tvm_ios import models
from tvm_ios.graphturbo.hwspec import HardwareSpec
from tvm_ios.passes.graphturbo_attr import load
from tvm_ios.passes.instance_emitter import instance_runs
from tvm_ios.relax_pipeline import VARIANTS, pipeline
from tvm_ios.runtime.compare import build, random_inputs, run

#: A local buffer of 19 KB: MobileNet-v2 at 32 px splits into 45 instances (the cpu
#: preset's 1 MiB holds the whole model as one).
SMALL_LB = HardwareSpec("small-lb", 2, 1, 19 * 1024, 1 << 20, 20.0, 50.0)



def plan_order(mod) -> list[tuple[int, int]]:
    """GraphTurbo's order of instances, as its plan (the report) records it."""
    plan = load(mod, "main")["plan"]
    tags = {i["id"]: (i["sg"], i["k"]) for i in plan["split"]["instances"]}
    return [tags[i] for i in plan["order"]]


@pytest.fixture(scope="module")
def mobilenet():
    """MobileNet-v2 at 32 px, its weights bound (the build's one input is the image)."""
    mod, params = models.get("mobilenet_v2", batch_size=1, image_size=32)
    return relax.transform.BindParams("main", params)(mod)


@pytest.mark.parametrize("engine", ["rprogram", "stages"])
def test_final_module_runs_graphturbos_order(mobilenet, engine):
    options = {**VARIANTS["ios-graphturbo"], "engine": engine, "graphturbo": SMALL_LB}
    p = pipeline(**options)
    with tvm.target.Target("llvm"):
        final, report = p.rewrite(mobilenet, tvm.target.Target("llvm"))
    order = plan_order(final)
    assert len(order) == 45
    assert instance_runs(final["main"]) == order
    assert report["schedule"]["params"]["ordered"] == len(order)


def test_ordered_build_matches_default(mobilenet):
    p = pipeline(**{**VARIANTS["ios-graphturbo"], "graphturbo": SMALL_LB})
    executable = tvm.compile(mobilenet, "llvm", relax_pipeline=p)
    inputs = random_inputs(mobilenet)
    got, want = run(executable, inputs), run(build(mobilenet), inputs)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
