"""IOSPass on every zoo model: merges and stage reordering are numerically exact on llvm."""
import pytest
import tvm

from tvm_ios import models
from tvm_ios.graph.extract import op_graph
from tvm_ios.passes.apply_schedule import schedule_of
from tvm_ios.passes.ios_pass import IOSPass
from tvm_ios.runtime.compare import compare_modules
from tvm_ios.testing import MergeFriendly

# Reduced input sizes: the structure (what IOS schedules) is the published one.
TEST_SIZES = {"inception_v3": 75, "squeezenet": 32, "nasnet_a": 32, "randwire": 32,
              "resnext29": 8, "resnet50": 32, "mobilenet_v2": 32, "yolov3": 32,
              "synthnet": 63}
# Models with convolutions of one input, stride, epilogue and output size: merge candidates.
# NASNet and RandWire share inputs only between separable convs (IOS cannot merge those);
# ResNet's and ResNeXt's shortcut conv has no ReLU, unlike the block's first conv.
MERGEABLE = {"inception_v3", "squeezenet"}


def test_every_zoo_model_is_checked():
    assert set(TEST_SIZES) == set(models.names())


# NASNet-A and RandWire (a minute each here) run in the slow tier; the fast tier checks them
# through test_dedup_ops (NASNet-A) and the zoo's reduced builds (tests/models/test_zoo.py).
SLOW = {"nasnet_a", "randwire"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n
                                  for n in sorted(TEST_SIZES)])
def test_zoo_model_rewrite_is_exact(name):
    mod, params = models.get(name, image_size=TEST_SIZES[name])
    after = tvm.transform.Sequential([IOSPass(MergeFriendly())])(mod)
    schedule = schedule_of(after)
    merges = [s for s in schedule.stages if s.strategy == "merge"]
    assert bool(merges) == (name in MERGEABLE)
    result = compare_modules(mod, after, params)
    assert result.max_abs_diff <= 1e-4 * max(1.0, result.max_abs_value), result


def test_analytical_schedule_reorders_inception(inception_like):
    after = IOSPass(max_group_size=3, max_num_groups=8)(inception_like)
    schedule = schedule_of(after)
    assert any(len(s.groups) > 1 for s in schedule.stages)
    before_order = [n.name for n in op_graph(inception_like).nodes]
    assert schedule.ops != before_order  # b -> d runs before c: bindings really moved
    assert [n.name for n in op_graph(after).nodes] == schedule.ops
    assert compare_modules(inception_like, after).max_abs_diff <= 1e-5


def test_options_checked():
    with pytest.raises(ValueError, match="r and s must be >= 1"):
        IOSPass(max_group_size=0)
    with pytest.raises(ValueError, match="no function"):
        IOSPass(func_name="nope")(models.get("squeezenet", image_size=17)[0])
