"""Manifest validation and the version/architecture check."""
import json

import pytest

from tvm_ios.bench.manifest import (MANIFEST_NAME, ArtifactMismatch, Manifest, ManifestError,
                                    arch_number, check_compatible)


def _data(artifact):
    return json.loads((artifact / MANIFEST_NAME).read_text())


def test_built_manifest_validates_and_round_trips(llvm_artifact):
    manifest = Manifest.load(llvm_artifact)
    manifest.check_files(llvm_artifact)
    assert manifest.model == "two_branch" and manifest.batch == 2
    assert Manifest.from_json(manifest.to_json()) == manifest
    assert {"tvm", "tvm_ffi", "tvm_ios", "numpy", "python"} <= set(manifest.versions)


@pytest.mark.parametrize("field, value, message", [
    ("schema_version", 99, "schema_version"),
    ("batch", "two", "'batch'"),
    ("batch", 0, "'batch' must be >= 1"),
    ("inputs", [], "'inputs' is empty"),
    ("files", {"library": {"name": "model.so"}}, "files.library"),
    ("tolerance", {"atol": 1e-4}, "tolerance.rtol"),
])
def test_bad_field_is_named(llvm_artifact, field, value, message):
    data = _data(llvm_artifact)
    data[field] = value
    with pytest.raises(ManifestError, match=message.replace("(", r"\(")):
        Manifest.from_json(data)


def test_missing_and_unknown_fields(llvm_artifact):
    data = _data(llvm_artifact)
    del data["versions"]
    with pytest.raises(ManifestError, match="missing field 'versions'"):
        Manifest.from_json(data)
    data = dict(_data(llvm_artifact), colour="blue")
    with pytest.raises(ManifestError, match="unknown field"):
        Manifest.from_json(data)


def test_missing_manifest_and_bad_json(tmp_path):
    with pytest.raises(ManifestError, match="no manifest"):
        Manifest.load(tmp_path)
    (tmp_path / MANIFEST_NAME).write_text("{not json")
    with pytest.raises(ManifestError, match="not valid JSON"):
        Manifest.load(tmp_path)


def test_changed_file_is_detected(artifact_copy):
    manifest = Manifest.load(artifact_copy)
    with open(artifact_copy / "model.so", "ab") as handle:
        handle.write(b"\0")
    with pytest.raises(ManifestError, match="SHA-256 differs"):
        manifest.check_files(artifact_copy)


def test_arch_number():
    assert arch_number("sm_90a") == 90 and arch_number("sm_80") == 80
    assert arch_number("") is None and arch_number("gfx90a") is None


def test_other_tvm_version_is_refused_naming_both(llvm_artifact):
    manifest = Manifest.load(llvm_artifact)
    manifest.versions["tvm"] = "0.26.0"
    with pytest.raises(ArtifactMismatch, match=r"TVM 0\.26\.0.*TVM 0\.27"):
        check_compatible(manifest, "0.27.0.post1", None)


def test_other_gpu_architecture_is_refused_naming_both(cuda_artifact):
    manifest = Manifest.load(cuda_artifact)
    assert manifest.arch == "sm_90a"
    check_compatible(manifest, manifest.versions["tvm"], "sm_90")
    with pytest.raises(ArtifactMismatch, match="built for sm_90a, this GPU is sm_80"):
        check_compatible(manifest, manifest.versions["tvm"], "sm_80")
