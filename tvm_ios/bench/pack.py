"""Pack TVM's runtime subset, apache-tvm-ffi and benchmark artifacts for an offline GPU host.

The pack is one ``.tar.xz`` (or ``.tar.gz``) with ``site/`` (the ``tvm`` package without
``libtvm_compiler.so`` and without headers and sources, ``tvm_ffi`` unpacked from a wheel
for the host's Python and ``typing_extensions``, the few runtime-only modules of ``tvm_ios``
and the plain-data zoo definitions with their PyTorch emitter, optionally
``libcudart`` and further wheels such as numpy), ``artifacts/`` and ``run.sh``. On the
host: ``tar xJf pack.tar.xz && sh pack/run.sh`` checks then times every artifact, each in
its own process, appending to ``pack/results.jsonl`` (:mod:`tvm_ios.bench.isolated`);
``pack.json`` records the commit the pack was built at. The whole must stay under :data:`LIMIT_BYTES` (64 MiB).
"""
from __future__ import annotations

import glob
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

__all__ = ["LIMIT_BYTES", "RUNTIME_MODULES", "ZOO_MODULES", "FFI_PIN", "PackTooLarge",
           "copy_runtime", "unpack_wheel", "download_wheel", "find_cudart", "build_pack"]

logger = logging.getLogger(__name__)

LIMIT_BYTES = 64 * 1024 * 1024
#: The apache-tvm-ffi release TVM 0.27 is used with (0.1.15 segfaults in save_json).
FFI_PIN = "apache-tvm-ffi==0.1.14.post1"
#: tvm_ios modules the runner needs (relative to the package root); none imports the compiler.
RUNTIME_MODULES = ("__init__.py", "cli/__init__.py", "cli/bench_run.py", "bench/__init__.py",
                   "bench/manifest.py", "bench/tensors.py", "bench/run.py",
                   "bench/torch_baselines.py", "cli/bench_torch.py",
                   "models/torch_emit.py", "runtime/__init__.py", "runtime/outputs.py",
                   "runtime/vm_checks.py", "bench/isolated.py", "bench/provenance.py",
                   "cli/bench_all.py")
#: The zoo's plain-data definitions, for the PyTorch baselines (packed when present).
ZOO_MODULES = ("models/netdef.py", "models/layers.py", "models/shapes.py")
# The zoo package's own __init__ emits Relax (needs the compiler); the pack gets this one.
_MODELS_INIT = '''"""Plain-data model definitions and their PyTorch form (no TVM)."""\n'''
# Parts of the tvm package a runtime-only import never reads.
_TVM_SKIP_DIRS = {"3rdparty", "src", "include", "web", "__pycache__"}
_TVM_SKIP_FILES = {"libtvm_compiler.so"}
_FFI_SKIP_DIRS = {"include", "src", "3rdparty", "cython", "stub", "__pycache__"}
_RUN_SH = """#!/bin/sh
# Check, then time, every artifact of this pack with TVM's runtime only, one process each;
# results appended to results.jsonl as each finishes (a killed run keeps them).
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE" || exit 1  # nothing in the caller's directory may shadow the packed modules
export PYTHONPATH="$HERE/site${PYTHONPATH:+:$PYTHONPATH}"
export TVM_USE_RUNTIME_LIB=1 TVM_DEVICE_BACKEND_AUTOLOAD=0
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi
"${PYTHON:-python3}" -m tvm_ios.cli.bench_all "$HERE"/artifacts/* \
  --results "$HERE/results.jsonl" --timeout-s "${STEP_TIMEOUT_S:-120}" "$@"
status=$?
# PyTorch baselines (eager and CUDA graphs unless TORCH_MODES says) on the host's own
# PyTorch, once per zoo model: its TVM default artifact's net.json and weights.
ZOO=$(ls "$HERE"/artifacts/*default/net.json 2>/dev/null | xargs -r -n1 dirname)
if [ -n "$ZOO" ] && "${PYTHON:-python3}" -c "import torch" 2>/dev/null; then
  timeout "${TORCH_TIMEOUT_S:-300}" "${PYTHON:-python3}" -m tvm_ios.cli.bench_torch $ZOO \\
    --json "$HERE/torch_results.json" --modes ${TORCH_MODES:-eager cuda-graph}
fi
exit $status
"""


class PackTooLarge(RuntimeError):
    """The pack would exceed the size limit."""


def _copy_tree(src: Path, dst: Path, skip_dirs: set, skip_files: set = frozenset()) -> None:
    for root, dirs, files in os.walk(src):
        dirs[:] = [d for d in dirs if d not in skip_dirs]
        rel = Path(root).relative_to(src)
        for name in files:
            if name in skip_files or name.endswith(".pyc"):
                continue
            (dst / rel).mkdir(parents=True, exist_ok=True)
            shutil.copy2(Path(root) / name, dst / rel / name)


def copy_runtime(site: str | Path, tvm_dir: str | Path | None = None) -> Path:
    """Copy the runtime subset of the ``tvm`` package (no compiler library) into ``site``."""
    if tvm_dir is None:
        import importlib.util

        tvm_dir = Path(importlib.util.find_spec("tvm").origin).parent
    dst = Path(site) / "tvm"
    _copy_tree(Path(tvm_dir), dst, _TVM_SKIP_DIRS, _TVM_SKIP_FILES)
    return dst


def unpack_wheel(wheel: str | Path, site: str | Path, skip_dirs: set = frozenset()) -> None:
    """Unpack a wheel's packages into ``site`` (dist-info kept; top-level dirs in
    ``skip_dirs`` below each package skipped)."""
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            parts = Path(member.filename).parts
            if len(parts) > 1 and parts[1] in skip_dirs:
                continue
            archive.extract(member, site)
            mode = member.external_attr >> 16
            if mode:
                os.chmod(Path(site) / member.filename, mode)


def download_wheel(requirement: str, python: str, dest: str | Path) -> Path:
    """Download (with pip) one binary wheel of ``requirement`` for CPython ``python``
    ("3.12") on manylinux x86-64 into ``dest``; returns its path."""
    tag = python.replace(".", "")
    platforms = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
    cmd = [sys.executable, "-m", "pip", "download", requirement, "--no-deps",
           "--only-binary=:all:", "--python-version", python, "--implementation", "cp",
           "--abi", f"cp{tag}", "-d", str(dest)]
    for platform in platforms:
        cmd += ["--platform", platform]
    subprocess.run(cmd, check=True)
    name = re.split(r"[<>=!~ ]", requirement)[0].replace("-", "_")
    found = glob.glob(f"{dest}/{name}-*cp{tag}*.whl")
    if len(found) != 1:
        raise FileNotFoundError(f"pip download of {requirement} for Python {python} left "
                                f"{found or 'no wheel'} in {dest}")
    return Path(found[0])


def find_cudart() -> Path | None:
    """``libcudart.so.13`` of this machine's CUDA toolkit (beside nvcc), if any."""
    nvcc = shutil.which("nvcc")
    roots = [Path(nvcc).resolve().parent.parent] if nvcc else []
    for root in roots + [Path("/usr/local/cuda")]:
        for sub in ("lib64", "lib", "targets/x86_64-linux/lib"):
            found = sorted((root / sub).glob("libcudart.so.13*"))
            if found:
                return found[0]
    return None


def _copy_ffi(site: Path, ffi_wheel: str | Path | None) -> None:
    if ffi_wheel is not None:
        unpack_wheel(ffi_wheel, site, _FFI_SKIP_DIRS)
        return
    from .._tvm import tvm_ffi

    _copy_tree(Path(tvm_ffi.__file__).parent, site / "tvm_ffi", _FFI_SKIP_DIRS)


def _copy_pure_dependencies(site: Path) -> None:
    """Pure-Python modules tvm_ffi imports (``typing_extensions``), from this Python."""
    import typing_extensions

    shutil.copy2(typing_extensions.__file__, site / "typing_extensions.py")


def _copy_tvm_ios(site: Path) -> None:
    root = Path(__file__).resolve().parent.parent
    for rel in RUNTIME_MODULES + ZOO_MODULES:
        if rel in ZOO_MODULES and not (root / rel).is_file():
            logger.warning("%s is missing: the pack cannot run PyTorch baselines", rel)
            continue
        (site / "tvm_ios" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, site / "tvm_ios" / rel)
    (site / "tvm_ios" / "models" / "__init__.py").write_text(_MODELS_INIT)


def _pack_info(artifacts) -> dict:
    """What the pack was built from: the commit (and tree state) and the artifacts."""
    from .provenance import provenance

    made = provenance()
    return {"commit": made["commit"], "dirty": made["dirty"], "date": made["date"],
            "versions": made["versions"], "artifacts": [Path(a).name for a in artifacts]}


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def build_pack(output: str | Path, artifacts: list, *, ffi_wheel=None, extra_wheels=(),
               cudart: str | Path | None = None, tvm_dir=None,
               limit: int = LIMIT_BYTES, info: dict | None = None) -> dict:
    """Write the pack ``output`` (``.tar.xz`` or ``.tar.gz``); returns its size and content
    summary. xz keeps the GPU pack in its limit: the rProgram tables and CUDA sources repeat
    within and across artifacts (Inception V3's wavefront artifact: 17.7 MB gzipped, 1.0 MB
    in xz).

    Parameters
    ----------
    output : str or Path
        The archive to write.
    artifacts : list of paths
        Artifact directories (``tvm-ios build -o``), stored under their own names.
    ffi_wheel : path, optional
        An ``apache-tvm-ffi`` wheel for the host's Python (e.g. cp312); without it, this
        Python's installed ``tvm_ffi`` is packed (right only for the same Python version).
    extra_wheels : paths
        Further wheels to unpack into ``site`` (e.g. numpy for the host's Python).
    cudart : path, optional
        A ``libcudart.so.13`` to ship in ``site/tvm/lib``.
    limit : int
        Refuse (``PackTooLarge``) when the archive is larger.
    info : dict, optional
        Further entries of ``pack.json`` (e.g. each artifact's build time).
    """
    output = Path(output)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "pack"
        site = root / "site"
        copy_runtime(site, tvm_dir)
        _copy_ffi(site, ffi_wheel)
        for wheel in extra_wheels:
            unpack_wheel(wheel, site)
        _copy_tvm_ios(site)
        _copy_pure_dependencies(site)
        if cudart is not None:
            shutil.copy2(cudart, site / "tvm" / "lib" / Path(cudart).name)
        for artifact in artifacts:
            shutil.copytree(artifact, root / "artifacts" / Path(artifact).name)
        (root / "pack.json").write_text(json.dumps(dict(_pack_info(artifacts), **(info or {})), indent=1))
        (root / "run.sh").write_text(_RUN_SH)
        (root / "run.sh").chmod(0o755)
        summary = {"site_bytes": _size(site), "artifact_bytes": _size(root / "artifacts")}
        output.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(output, "w:xz" if output.name.endswith(".xz") else "w:gz") as archive:
            archive.add(root, arcname="pack")
    summary["archive_bytes"] = output.stat().st_size
    if summary["archive_bytes"] > limit:
        output.unlink()
        raise PackTooLarge(f"pack would be {summary['archive_bytes'] / 2**20:.1f} MiB, over "
                           f"{limit / 2**20:.0f} MiB (runtime {summary['site_bytes'] / 2**20:.1f}"
                           f" MiB, artifacts {summary['artifact_bytes'] / 2**20:.1f} MiB "
                           "unpacked); pack fewer artifacts")
    logger.info("pack %s: %.1f MiB", output, summary["archive_bytes"] / 2**20)
    return summary
