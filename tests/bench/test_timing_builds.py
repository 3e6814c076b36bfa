"""Timing builds carry no per-call checks; correctness builds keep them; the manifest says which."""
from tvm import relax

from tvm_ios import _tvm
from tvm_ios.bench.artifact import _apply_variant, build_artifact
from tvm_ios.bench.manifest import Manifest
from tvm_ios.testing import dag_model

H100 = "nvidia/nvidia-h100"


def _asserts(mod) -> int:
    return sum(getattr(getattr(b.value, "op", None), "name", "") == "relax.assert_op"
               for block in mod["main"].body.blocks for b in block.bindings)


def test_timing_rprogram_build_has_no_assert_op():
    mod, _ = dag_model(3, num_ops=8, channels=16, size=14, p=0.35)
    target = _tvm.make_target(H100)
    checked, _ = _apply_variant(mod, "ios-rprogram", target, {"device": "h100"})
    timing, _ = _apply_variant(mod, "ios-rprogram", target, {"device": "h100"}, checks=False)
    assert _asserts(checked) >= 1
    assert _asserts(timing) == 0
    assert isinstance(timing["main"].body.blocks[-1], relax.DataflowBlock)


def test_manifest_records_the_checks(two_branch, tmp_path):
    mod, params = two_branch
    for checks in (True, False):
        out = tmp_path / f"checks-{checks}"
        build_artifact(mod, params, out, model="two_branch", batch=2, variant="ios-rprogram",
                       checks=checks)
        assert Manifest.load(out).flags["checks"] is checks
