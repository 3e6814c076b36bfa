"""Run a benchmark artifact with TVM's runtime only: check against the reference, then time.

``python -m tvm_ios.cli.bench_run DIR [--json FILE]`` works on a GPU host where only TVM's
runtime is present (no ``libtvm_compiler.so``, e.g. the pack of :mod:`tvm_ios.bench.pack`):
TVM is imported in runtime-only mode, ``libtvm_runtime_cuda.so`` is loaded explicitly, and
the CUDA source in the library is served the fatbin nvcc built with the artifact (NVRTC or
nvcc on the host are only a fallback). The output is compared with the CPU reference; only
when it matches is the artifact timed: warm-up, then ``repeat`` repeats of TVM's time
evaluator (CUDA events on GPUs) rotating over several input tensors; the median is the
figure. Imports only the standard library, numpy, TVM's runtime, ``manifest`` and
``tensors`` of this package and :mod:`tvm_ios.runtime.outputs` (never the compiler parts
of tvm-ios).
"""
from __future__ import annotations

import ctypes
import logging
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ..runtime import vm_checks
from ..runtime.outputs import flatten_outputs
from . import tensors
from .manifest import Manifest, check_arch, check_tvm_version, sha256_bytes

__all__ = ["BenchResult", "CudaRuntimeMissing", "bench_artifact", "load_cuda_runtime",
           "install_kernels", "import_runtime", "check_outputs"]

logger = logging.getLogger(__name__)


class CudaRuntimeMissing(RuntimeError):
    """TVM's CUDA runtime, the NVIDIA driver or a GPU is not available."""


@dataclass
class BenchResult:
    """Outcome of :func:`bench_artifact`; ``latency_ms`` is None unless ``status == "ok"``."""

    model: str
    batch: int
    variant: str
    device: str
    status: str
    max_abs_err: float
    error_bound: float
    latency_ms: float | None = None
    repeats_ms: list = field(default_factory=list)
    settings: dict = field(default_factory=dict)
    versions: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-serialisable dict."""
        return asdict(self)

    def __str__(self) -> str:
        head = f"{self.model} batch {self.batch} {self.variant} on {self.device}"
        check = f"max abs error {self.max_abs_err:.3g} (bound {self.error_bound:.3g})"
        if self.status != "ok":
            return (f"{head}: REFERENCE MISMATCH, {check}; no latency reported, "
                    "the build computes something else")
        if not self.repeats_ms:
            return f"{head}: matches the reference, {check} (not timed)"
        spread = f"min {min(self.repeats_ms):.4f}, max {max(self.repeats_ms):.4f}"
        return (f"{head}: median {self.latency_ms:.4f} ms over {len(self.repeats_ms)} "
                f"repeats ({spread}); {check}")


def import_runtime():
    """Import TVM, in runtime-only mode unless it is already imported; returns the module."""
    if "tvm" not in sys.modules:
        os.environ.setdefault("TVM_DEVICE_BACKEND_AUTOLOAD", "0")
        os.environ.setdefault("TVM_USE_RUNTIME_LIB", "1")
    import tvm

    return tvm


def load_cuda_runtime(tvm, device_id: int = 0):
    """Load ``libtvm_runtime_cuda.so`` (and a packed ``libcudart`` beside it); return the GPU.

    Raises
    ------
    CudaRuntimeMissing
        With what is missing: the library, the NVIDIA driver, or a visible GPU.
    """
    from tvm.base import _LOADED_LIBS
    from tvm_ffi.libinfo import load_lib_ctypes

    lib_dir = Path(_LOADED_LIBS["tvm_runtime"]._name).resolve().parent
    if "tvm_runtime_cuda" not in _LOADED_LIBS:
        for cudart in sorted(lib_dir.glob("libcudart.so*")):
            ctypes.CDLL(str(cudart), mode=ctypes.RTLD_GLOBAL)
        try:
            _LOADED_LIBS["tvm_runtime_cuda"] = load_lib_ctypes(
                package="tvm", target_name="tvm_runtime_cuda", extra_lib_paths=[lib_dir],
                mode="RTLD_LOCAL")
        except (OSError, RuntimeError) as err:
            raise CudaRuntimeMissing(
                f"cannot load TVM's CUDA runtime libtvm_runtime_cuda.so from {lib_dir}: {err}. "
                "This host needs an NVIDIA driver (libcuda.so.1) for CUDA 13 and libcudart.so.13 "
                "(the pack ships one in tvm/lib)") from err
    device = tvm.cuda(device_id)
    if not device.exist:
        raise CudaRuntimeMissing(f"TVM's CUDA runtime loaded but sees no GPU {device_id} "
                                 "(check CUDA_VISIBLE_DEVICES and nvidia-smi)")
    return device


def install_kernels(manifest: Manifest, directory: Path) -> None:
    """Serve the artifact's precompiled fatbin when the library's CUDA module loads.

    TVM's CUDA module compiles its source through the global ``tvm_callback_cuda_compile``
    when it is loaded; this wraps that callback so that the exact source the artifact was
    built from gets the fatbin nvcc made at build time (one per CUDA module: TVM's kernels,
    and the rProgram kernels of an ``ios-rprogram`` artifact), and any other source falls
    through to TVM's own compiler (NVRTC or nvcc), with a warning.
    """
    if not manifest.kernels:
        return
    import tvm_ffi

    modules = manifest.kernels.get("modules") or [
        {"role": "kernels", "source_sha256": manifest.kernels["source_sha256"]}]
    binaries = {m["source_sha256"]: (directory / manifest.files[m["role"]]["name"]).read_bytes()
                for m in modules}
    previous = tvm_ffi.get_global_func("tvm_callback_cuda_compile", allow_missing=True)

    def compile_callback(code):
        binary = binaries.get(sha256_bytes(str(code).encode()))
        if binary is not None:
            return binary
        logger.warning("CUDA source differs from the artifact's; compiling it on this host")
        if previous is None:
            raise CudaRuntimeMissing("no precompiled kernel matches and no CUDA compiler "
                                     "callback is registered")
        return previous(code)

    tvm_ffi.register_global_func("tvm_callback_cuda_compile", compile_callback, override=True)


def _device_info(tvm, device, kind: str) -> tuple[str, str | None]:
    if kind != "cuda":
        return "cpu", None
    arch = "sm_" + str(device.compute_version).replace(".", "")
    return f"{device.device_name} ({arch}, driver {_driver_version()})", arch


def _driver_version() -> str:
    try:
        value = ctypes.c_int()
        ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(value))
        return f"CUDA {value.value // 1000}.{value.value % 1000 // 10}"
    except OSError:
        return "unknown"


def _runtime_versions(tvm, manifest: Manifest) -> dict:
    """What ran the artifact: TVM version and path, runtime-only mode, compiler loaded."""
    from tvm.base import _LOADED_LIBS

    return {"tvm": tvm.__version__, "tvm_path": str(Path(tvm.__file__).parent),
            "runtime_only": "tvm_compiler" not in _LOADED_LIBS,
            "relax_imported": "tvm.relax" in sys.modules, "numpy": np.__version__,
            "python": sys.version.split()[0], "built_with": manifest.versions}


def _ordered_args(manifest: Manifest, arrays: dict) -> list:
    specs = sorted(manifest.inputs + manifest.params, key=lambda s: s["position"])
    return [arrays[s["name"]] for s in specs]


def check_outputs(manifest: Manifest, directory: Path, outputs) -> tuple[float, float, bool]:
    """Max abs error against the reference, the bound, and whether it holds."""
    reference = np.load(directory / manifest.files["reference"]["name"])
    expected = [reference[f"arr_{i}"] for i in range(len(reference.files))]
    if len(outputs) != len(expected) or any(o.shape != e.shape for o, e in zip(outputs, expected)):
        return float("inf"), 0.0, False
    err = max(float(np.max(np.abs(o.astype(np.float64) - e))) for o, e in zip(outputs, expected))
    scale = max(float(np.max(np.abs(e))) for e in expected)
    bound = manifest.tolerance["atol"] + manifest.tolerance["rtol"] * scale
    return err, bound, bool(np.isfinite(err) and err <= bound)


def _time(vm, tvm, device, manifest, weights, settings) -> list[float]:
    """Per-repeat mean latency (ms), rotating over ``settings['rotate']`` input sets."""
    saved = []
    for k in range(settings["rotate"]):
        arrays = dict(weights)
        for spec in manifest.inputs:
            arrays[spec["name"]] = tvm.runtime.tensor(
                tensors.materialize(spec, seed=spec["seed"] + 1000 + k), device)
        name = f"main_rotating_{k}"
        vm.save_function("main", name, *_ordered_args(manifest, arrays))
        saved.append(vm.time_evaluator(name, device, number=settings["number"], repeat=1,
                                       min_repeat_ms=settings["min_repeat_ms"]))
    for k in range(settings["warmup"]):
        saved[k % len(saved)]()
    return [float(saved[r % len(saved)]().mean * 1e3) for r in range(settings["repeat"])]


def bench_artifact(directory, device_id: int = 0, warmup: int = 10, repeat: int = 50,
                   number: int = 1, min_repeat_ms: int = 10, rotate: int = 4,
                   time_it: bool = True) -> BenchResult:
    """Check an artifact against its reference and time it (see the module docstring);
    with ``time_it`` False only check it (``settings["check_ms"]``: that one call's wall
    time).

    Raises ``ManifestError`` for a malformed artifact, ``ArtifactMismatch`` for one built
    for another TVM version or GPU architecture, ``CudaRuntimeMissing`` without a GPU.
    """
    directory = Path(directory)
    manifest = Manifest.load(directory)
    manifest.check_files(directory)
    tvm = import_runtime()
    check_tvm_version(manifest, tvm.__version__)
    device = load_cuda_runtime(tvm, device_id) if manifest.target_kind == "cuda" else tvm.cpu()
    name, arch = _device_info(tvm, device, manifest.target_kind)
    check_arch(manifest, arch)
    install_kernels(manifest, directory)
    vm_checks.register()  # relax.run.assert_op of the rProgram checks, without the compiler
    from tvm.runtime.vm import VirtualMachine

    vm = VirtualMachine(tvm.runtime.load_module(str(directory / manifest.files["library"]
                                                   ["name"])), device)
    weights = {s["name"]: tvm.runtime.tensor(tensors.materialize(s), device)
               for s in manifest.params}
    arrays = dict(weights, **{s["name"]: tvm.runtime.tensor(tensors.materialize(s), device)
                              for s in manifest.inputs})
    started = time.perf_counter()
    err, bound, ok = check_outputs(manifest, directory, flatten_outputs(vm["main"](
        *_ordered_args(manifest, arrays))))
    settings = {"warmup": warmup, "repeat": repeat, "number": number,
                "min_repeat_ms": min_repeat_ms, "rotate": max(1, rotate),
                "check_ms": (time.perf_counter() - started) * 1e3,
                "checks": manifest.flags.get("checks", True)}
    result = BenchResult(manifest.model, manifest.batch, manifest.variant, name,
                         "ok" if ok else "mismatch", err, bound, settings=settings,
                         versions=_runtime_versions(tvm, manifest))
    if not ok:
        logger.error("%s: output differs from the reference (max abs error %.3g > %.3g)",
                     directory, err, bound)
        return result
    if not time_it:
        return result
    result.repeats_ms = _time(vm, tvm, device, manifest, weights, settings)
    result.latency_ms = statistics.median(result.repeats_ms)
    return result
