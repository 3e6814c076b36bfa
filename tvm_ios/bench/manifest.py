"""The manifest of a benchmark artifact: what was built, how, and with which versions.

Plain JSON with a versioned schema, validated field by field. This module imports only the
standard library: the runtime-only runner reads it on hosts with no TVM compiler.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

__all__ = ["SCHEMA", "SCHEMA_VERSION", "MANIFEST_NAME", "Manifest", "ManifestError",
           "ArtifactMismatch", "sha256_file", "sha256_bytes", "arch_number", "check_compatible",
           "check_tvm_version", "check_arch"]

SCHEMA = "tvm-ios-bench-artifact"
SCHEMA_VERSION = 1
MANIFEST_NAME = "manifest.json"


class ManifestError(ValueError):
    """A manifest that is missing, malformed, or from another schema version."""


class ArtifactMismatch(RuntimeError):
    """An artifact built for another architecture or TVM version than the running one."""


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file's content."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def arch_number(arch: str) -> int | None:
    """Compute capability as an integer (``"sm_90a"`` -> 90), or None when not a CUDA arch."""
    match = re.fullmatch(r"sm_(\d+)[a-z]?", arch or "")
    return int(match.group(1)) if match else None


# field name -> (type, required); types are checked on load.
_TYPES: dict[str, tuple[type | tuple[type, ...], bool]] = {
    "schema": (str, True), "schema_version": (int, True), "model": (str, True),
    "batch": (int, True), "variant": (str, True), "target": (dict, True),
    "target_kind": (str, True), "arch": (str, True), "versions": (dict, True),
    "created": (str, True), "flags": (dict, True), "schedule": ((dict, type(None)), True),
    "files": (dict, True), "inputs": (list, True), "params": (list, True),
    "outputs": (list, True), "tolerance": (dict, True), "kernels": ((dict, type(None)), True),
}
_VERSION_KEYS = ("tvm", "tvm_ffi", "tvm_ios", "numpy", "python")
_TENSOR_KEYS = ("name", "shape", "dtype")


@dataclass
class Manifest:
    """What a benchmark artifact holds.

    ``inputs`` and ``params`` are tensor recipes (see :mod:`tvm_ios.bench.tensors`): name,
    shape, dtype, seed, distribution and the SHA-256 of the materialised bytes, so that the
    GPU host regenerates them exactly instead of shipping gigabytes of weights. ``files``
    maps roles (``library``, ``reference``, ``kernels``) to file names and their SHA-256.
    """

    model: str
    batch: int
    variant: str
    target: dict
    target_kind: str
    arch: str
    versions: dict
    created: str
    flags: dict = field(default_factory=dict)
    schedule: dict | None = None
    files: dict = field(default_factory=dict)
    inputs: list = field(default_factory=list)
    params: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    tolerance: dict = field(default_factory=lambda: {"atol": 1e-3, "rtol": 1e-3})
    kernels: dict | None = None
    schema: str = SCHEMA
    schema_version: int = SCHEMA_VERSION

    def to_json(self) -> dict:
        """A JSON-serialisable dict."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict, where: str = "manifest") -> "Manifest":
        """Validate ``data`` and build a Manifest; errors name the field and ``where``."""
        if not isinstance(data, dict):
            raise ManifestError(f"{where}: expected a JSON object, got {type(data).__name__}")
        if data.get("schema") != SCHEMA:
            raise ManifestError(f"{where}: field 'schema' is {data.get('schema')!r}, "
                                f"expected {SCHEMA!r}")
        if data.get("schema_version") != SCHEMA_VERSION:
            raise ManifestError(f"{where}: field 'schema_version' is "
                                f"{data.get('schema_version')!r}; this runner reads version "
                                f"{SCHEMA_VERSION} (rebuild the artifact)")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ManifestError(f"{where}: unknown field(s) {unknown}")
        for name, (types, required) in _TYPES.items():
            if name not in data:
                if required:
                    raise ManifestError(f"{where}: missing field {name!r}")
                continue
            if not isinstance(data[name], types) or isinstance(data[name], bool):
                raise ManifestError(f"{where}: field {name!r} has type "
                                    f"{type(data[name]).__name__}")
        manifest = cls(**data)
        manifest.validate(where)
        return manifest

    def validate(self, where: str = "manifest") -> None:
        """Check the values beyond their types; raise ManifestError naming the field."""
        if self.batch < 1:
            raise ManifestError(f"{where}: field 'batch' must be >= 1, got {self.batch}")
        for key in _VERSION_KEYS:
            if not isinstance(self.versions.get(key), str):
                raise ManifestError(f"{where}: field 'versions.{key}' missing or not a string")
        if self.target_kind == "cuda" and arch_number(self.arch) is None:
            raise ManifestError(f"{where}: field 'arch' is {self.arch!r}, expected sm_NN")
        for role in ("library", "reference"):
            entry = self.files.get(role)
            if not isinstance(entry, dict) or not {"name", "sha256"} <= set(entry):
                raise ManifestError(f"{where}: field 'files.{role}' needs 'name' and 'sha256'")
        for group in ("inputs", "params", "outputs"):
            for i, spec in enumerate(getattr(self, group)):
                missing = [k for k in _TENSOR_KEYS if k not in spec]
                if missing:
                    raise ManifestError(f"{where}: field '{group}[{i}]' lacks {missing}")
        if not self.inputs:
            raise ManifestError(f"{where}: field 'inputs' is empty")
        for key in ("atol", "rtol"):
            if not isinstance(self.tolerance.get(key), (int, float)):
                raise ManifestError(f"{where}: field 'tolerance.{key}' missing or not a number")

    def save(self, directory: str | Path) -> Path:
        """Write ``manifest.json`` into ``directory``; returns its path."""
        path = Path(directory) / MANIFEST_NAME
        path.write_text(json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n")
        return path

    @classmethod
    def load(cls, directory: str | Path) -> "Manifest":
        """Read and validate ``DIR/manifest.json``."""
        path = Path(directory) / MANIFEST_NAME
        if not path.is_file():
            raise ManifestError(f"{path}: no manifest (is {directory} a benchmark artifact "
                                "made by `tvm-ios build`?)")
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as err:
            raise ManifestError(f"{path}: not valid JSON: {err}") from err
        return cls.from_json(data, where=str(path))

    def check_files(self, directory: str | Path) -> None:
        """Check that every listed file exists and has the recorded SHA-256."""
        for role, entry in self.files.items():
            path = Path(directory) / entry["name"]
            if not path.is_file():
                raise ManifestError(f"{path}: file for 'files.{role}' is missing")
            if sha256_file(path) != entry["sha256"]:
                raise ManifestError(f"{path}: SHA-256 differs from 'files.{role}.sha256' "
                                    "(file changed or truncated since the build)")


def check_compatible(manifest: Manifest, tvm_version: str, device_arch: str | None) -> None:
    """Refuse an artifact built for another TVM version or GPU architecture.

    Parameters
    ----------
    manifest : Manifest
        The artifact's manifest.
    tvm_version : str
        The running TVM's version.
    device_arch : str or None
        The device's architecture (``sm_90``), None for a CPU artifact.
    """
    check_tvm_version(manifest, tvm_version)
    check_arch(manifest, device_arch)


def check_tvm_version(manifest: Manifest, tvm_version: str) -> None:
    """Refuse an artifact built with another TVM version, naming both."""
    built = manifest.versions["tvm"]
    if built != tvm_version:
        raise ArtifactMismatch(f"artifact {manifest.model!r} was built with TVM {built}, "
                               f"this runtime is TVM {tvm_version}; rebuild it with "
                               f"TVM {tvm_version} or run it with TVM {built}")


def check_arch(manifest: Manifest, device_arch: str | None) -> None:
    """Refuse a CUDA artifact built for another GPU architecture, naming both."""
    if manifest.target_kind != "cuda":
        return
    want, have = arch_number(manifest.arch), arch_number(device_arch or "")
    if want != have:
        raise ArtifactMismatch(f"artifact {manifest.model!r} was built for {manifest.arch}, "
                               f"this GPU is {device_arch}; rebuild it with a target for "
                               f"{device_arch}")
