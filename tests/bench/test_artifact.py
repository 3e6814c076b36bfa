"""Artifacts: reference from the recipes' tensors, sm_90a kernels built here, IOS variant."""
import numpy as np
import pytest
import tvm

from tvm_ios.bench import artifact, tensors
from tvm_ios.bench.artifact import argument_specs, build_artifact
from tvm_ios.bench.manifest import Manifest
from tvm_ios.runtime import compare



def test_argument_specs_split_inputs_and_weights(two_branch):
    TwoBranch, params = two_branch
    inputs, weights = argument_specs(TwoBranch, params)
    assert [s["name"] for s in inputs] == ["x"] and inputs[0]["shape"] == [2, 8, 12, 12]
    assert [(s["name"], s["position"]) for s in weights] == [("w3", 1), ("w1", 2), ("gamma", 3)]
    with pytest.raises(ValueError, match="not arguments of main"):
        argument_specs(TwoBranch, dict(params, extra=np.zeros(1)))


def test_reference_is_the_llvm_output_on_the_recipes(llvm_artifact, two_branch):
    TwoBranch = two_branch[0]
    manifest = Manifest.load(llvm_artifact)
    arrays = {s["name"]: tensors.materialize(s) for s in manifest.inputs + manifest.params}
    exe = compare.build(TwoBranch, "llvm", {s["name"]: arrays[s["name"]]
                                             for s in manifest.params})
    expected = compare.run(exe, [arrays["x"]])
    reference = np.load(llvm_artifact / "reference.npz")["arr_0"]
    np.testing.assert_allclose(reference, expected, rtol=1e-6, atol=1e-6)
    assert manifest.outputs == [{"name": "arr_0", "shape": [2, 12, 12, 12], "dtype": "float32"}]
    assert manifest.kernels is None and manifest.target_kind == "llvm"


def test_cuda_artifact_has_sm90a_fatbin(cuda_artifact):
    manifest = Manifest.load(cuda_artifact)
    manifest.check_files(cuda_artifact)
    assert manifest.target_kind == "cuda" and manifest.arch == "sm_90a"
    assert manifest.target["kind"] == "cuda"
    fatbin = (cuda_artifact / "kernels.fatbin").read_bytes()
    assert fatbin[:4] == b"\x50\xed\x55\xba"  # fatbin magic
    assert b"sm_90a" in fatbin
    assert manifest.kernels["compiler"].startswith("nvcc")
    library = (cuda_artifact / "model.so").read_bytes()
    assert b"__global__" in library  # CUDA source kept in the library for NVRTC/nvcc fallback


def test_ios_variant_records_its_schedule(tmp_path, two_branch):
    TwoBranch, params = two_branch
    manifest = build_artifact(TwoBranch, params, tmp_path / "ios",
                              model="two_branch", batch=2, target="llvm",
                              variant="ios-sequential", ios_options={"max_group_size": 2})
    assert manifest.variant == "ios-sequential"
    assert manifest.schedule is not None and manifest.schedule["stages"]
    assert manifest.flags["ios_options"] == {"max_group_size": 2, "device": "cpu"}
    with pytest.raises(ValueError, match="unknown variant"):
        build_artifact(TwoBranch, params, tmp_path / "bad", model="m", batch=2,
                       variant="fastest")


@pytest.mark.slow
def test_zoo_model_ios_artifact_for_h100(tmp_path):
    """A zoo model with the IOS schedule, cross-compiled for sm_90a (about a minute)."""
    import shutil

    from tvm_ios import models
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    size = models.min_image_size("inception_v3")
    mod, params = models.get("inception_v3", image_size=size)
    manifest = build_artifact(mod, params, tmp_path / "iv3", model="inception_v3", batch=1,
                              target="nvidia/nvidia-h100", variant="ios-sequential",
                              net=models.net("inception_v3", image_size=size))
    manifest.check_files(tmp_path / "iv3")
    assert manifest.arch == "sm_90a" and manifest.schedule["stages"]
    assert (tmp_path / "iv3" / "kernels.fatbin").read_bytes()[:4] == b"\x50\xed\x55\xba"


def test_rprogram_variant_has_one_fatbin_per_cuda_module(tmp_path, two_branch):
    """ios-rprogram for sm_90a: TVM's kernels and the rProgram kernels, each precompiled,
    and the loader callback serves each module its own fatbin."""
    import shutil

    import tvm_ffi

    from tvm_ios.bench import run

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    TwoBranch, params = two_branch
    out = tmp_path / "rp"
    manifest = build_artifact(TwoBranch, params, out, model="two_branch", batch=2,
                              target="nvidia/nvidia-h100", variant="ios-rprogram")
    manifest.check_files(out)
    assert manifest.variant == "ios-rprogram"
    assert manifest.flags["ios_options"] == {"device": "h100"}
    modules = manifest.kernels["modules"]
    assert [m["role"] for m in modules] == ["kernels", "kernels_1"]
    assert manifest.kernels["source_sha256"] == modules[0]["source_sha256"]
    for role in ("kernels", "kernels_1"):
        assert (out / manifest.files[role]["name"]).read_bytes()[:4] == b"\x50\xed\x55\xba"
    library = (out / "model.so").read_bytes()
    assert b"st.release.gpu.global.s32" in library  # the rProgram kernel's source
    previous = tvm_ffi.get_global_func("tvm_callback_cuda_compile")
    try:
        run.install_kernels(manifest, out)
        callback = tvm_ffi.get_global_func("tvm_callback_cuda_compile")
        executable = tvm.compile(_rewritten(TwoBranch), target=tvm.target.Target(
            "nvidia/nvidia-h100"))
        for source, role in zip(artifact.cuda_sources(executable), ("kernels", "kernels_1")):
            assert bytes(callback(source)) == (out / manifest.files[role]["name"]).read_bytes()
    finally:
        tvm_ffi.register_global_func("tvm_callback_cuda_compile", previous, override=True)


def _rewritten(mod):
    from tvm_ios.cost.analytical import AnalyticalCostModel
    from tvm_ios.passes.rprogram_pass import RProgramPass

    return RProgramPass("ios", cost_model=AnalyticalCostModel("h100"),
                        target="nvidia/nvidia-h100")(mod)
