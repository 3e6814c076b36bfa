"""Provenance of a results file: which command, code, machine and versions produced it.

Every file under ``benchmarks/results/`` is written by the script that measured it through
:func:`write_results`, as ``{"provenance": {...}, "results": ...}``. The provenance holds the
command line (``command``, ``script``), the git commit and whether the tree had uncommitted
changes (``commit``, ``dirty``, ``dirty_paths``), the CPU model and cores, the host, the
date (UTC, ISO 8601), the environment variables set that change how the measured code runs
(``environment``: thread counts, allocator tunables such as ``GLIBC_TUNABLES``), the
versions of Python, TVM, tvm-ffi, numpy, tvm-ios and of the optional packages the process
imported (torch, onnxruntime, xgboost, scipy, onnx), and the
SHA-256 of the results as written, so a hand edit shows (:func:`check_results_file`).

Standard library only, and TVM's version is read without importing TVM when it is not
imported already, so the runtime-only side of :mod:`tvm_ios.bench` can use it too.
"""
from __future__ import annotations

import datetime
import hashlib
import importlib.metadata
import json
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

__all__ = ["provenance", "measured_environment", "MEASURED_ENV", "write_results",
           "write_model_rows", "check_results_file", "results_digest", "REQUIRED",
           "REQUIRED_VERSIONS", "REPO_ROOT"]

#: The repository checkout this module lives in (``benchmarks/`` and ``.git`` are there).
REPO_ROOT = Path(__file__).resolve().parents[2]
#: Fields every provenance has.
REQUIRED = ("command", "script", "commit", "dirty", "cpu", "cores", "host", "platform", "date",
            "versions", "results_sha256")
#: Versions every provenance has.
REQUIRED_VERSIONS = ("python", "tvm", "tvm_ffi", "numpy", "tvm_ios")
#: Import name -> distribution names, for the versions of packages a script imported.
_OPTIONAL = {"torch": ("torch",), "onnxruntime": ("onnxruntime",), "onnx": ("onnx",),
             "xgboost": ("xgboost", "xgboost-cpu"), "scipy": ("scipy",)}


def _version(module: str, distributions: tuple[str, ...]) -> str | None:
    loaded = sys.modules.get(module)
    if loaded is not None and isinstance(getattr(loaded, "__version__", None), str):
        return loaded.__version__
    for name in distributions:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def versions() -> dict:
    """Versions of Python and the packages the figures depend on (imported optional ones)."""
    from .. import __version__ as tvm_ios_version

    out = {"python": platform.python_version(),
           "tvm": _version("tvm", ("apache-tvm",)),
           "tvm_ffi": _version("tvm_ffi", ("apache-tvm-ffi",)),
           "numpy": _version("numpy", ("numpy",)), "tvm_ios": tvm_ios_version}
    for module, distributions in _OPTIONAL.items():
        if module in sys.modules:
            out[module] = _version(module, distributions)
    return out


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, ``platform.processor()`` else)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _llvm_cpu() -> str | None:
    """The CPU as LLVM names it (``znver5``): ``cpu`` alone does not tell EPYC generations
    apart, and tuned kernels are for one of them."""
    try:
        from .. import _tvm

        return _tvm.llvm_system_cpu()
    except Exception:  # noqa: BLE001  (provenance must not fail a run)
        return None


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True,
                              text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _script(argv: list[str]) -> str:
    """The script that ran, relative to the repository root when it lies inside it."""
    path = Path(argv[0]).resolve() if argv and argv[0] not in ("", "-c") else None
    if path is None:
        return "<interactive>"
    try:
        return path.relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return str(path)


#: Environment variables that change a measurement without changing its command line.
MEASURED_ENV = ("GLIBC_TUNABLES", "LD_PRELOAD", "TVM_NUM_THREADS", "TVM_BIND_THREADS",
                "TVM_THREAD_POOL_SPIN_COUNT", "TVM_EXCLUDE_WORKER0", "OMP_NUM_THREADS",
                "MKL_NUM_THREADS", "THP_MEM_ALLOC_ENABLE")


def measured_environment() -> dict:
    """The variables of :data:`MEASURED_ENV` (and ``MALLOC_*``) set in this process."""
    return {k: v for k, v in sorted(os.environ.items())
            if k in MEASURED_ENV or k.startswith("MALLOC_")}


def provenance(argv: list[str] | None = None) -> dict:
    """What is producing a result: command (``argv``, default ``sys.argv``), commit and tree
    state, machine, versions and date, now (no digest). Call it when a run starts."""
    argv = list(sys.argv if argv is None else argv)
    script = _script(argv)
    status = _git("status", "--porcelain")
    dirty = [line[3:] for line in (status or "").splitlines() if line.strip()]
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 0
    return {"command": shlex.join(["python", script, *argv[1:]]), "script": script,
            "commit": (_git("rev-parse", "HEAD") or "").strip() or None,
            "dirty": bool(dirty) if status is not None else None, "dirty_paths": dirty[:20],
            "cpu": cpu_model(), "llvm_cpu": _llvm_cpu(), "cores": cores,
            "host": platform.node(),
            "platform": platform.platform(),
            "environment": measured_environment(), "date": _now(), "versions": versions()}


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def results_digest(results) -> str:
    """SHA-256 of the results' canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(results, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()


def write_results(path: str | Path, results, started: dict | None = None,
                  indent: int | None = 1) -> Path:
    """Write ``{"provenance": ..., "results": results}`` to ``path``; returns the path.

    ``started`` is :func:`provenance` taken when the run began (a script calls it first
    thing, so the commit and tree state are those of the code that ran, and ``date`` its
    start); without it the provenance is taken now. Versions are read at writing time (they
    include what the run imported lazily) and ``finished`` is added. ``results`` must be
    JSON-serialisable; the provenance records its digest. ``indent=None`` writes one line.
    """
    # as it will read back: keys become strings (``{10: .., 2: ..}`` sorts another way then)
    results = json.loads(json.dumps(results, allow_nan=True))
    record = dict(started) if started is not None else provenance()
    record["versions"] = versions()
    record["finished"] = _now()
    record["results_sha256"] = results_digest(results)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"provenance": record, "results": results}, indent=indent) + "\n")
    return path


def write_model_rows(path: str | Path, specs, measure, report, started: dict | None = None
                     ) -> Path:
    """Measure one row per model and write them (:func:`write_results`); returns the path.

    ``measure(spec)`` gives each spec's row, ``report(row)`` is called as each row ends (a
    script prints it); the results are ``{"load_before", "models", "load_after"}``, the load
    averages taken around the whole run (the machine may be shared).
    """
    results = {"load_before": os.getloadavg(), "models": []}
    for spec in specs:
        row = measure(spec)
        report(row)
        results["models"].append(row)
    results["load_after"] = os.getloadavg()
    return write_results(path, results, started)


def check_results_file(path: str | Path) -> list[str]:
    """What is wrong with a results file (empty when nothing is): missing provenance fields
    or versions, a script that does not exist, keys beside ``provenance`` and ``results``,
    results that differ from what the script wrote (digest)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        return [f"{path}: not readable JSON ({err})"]
    if not isinstance(data, dict) or set(data) != {"provenance", "results"}:
        keys = sorted(data) if isinstance(data, dict) else type(data).__name__
        return [f"{path}: top level must be exactly 'provenance' and 'results', got {keys}"]
    record, problems = data["provenance"], []
    problems += [f"{path}: provenance lacks {k!r}" for k in REQUIRED if record.get(k) in
                 (None, "")]
    problems += [f"{path}: provenance.versions lacks {k!r}" for k in REQUIRED_VERSIONS
                 if not (record.get("versions") or {}).get(k)]
    script = str(record.get("script", ""))
    if not script.startswith("benchmarks/") or not (REPO_ROOT / script).is_file():
        problems.append(f"{path}: its script {script!r} is not a file under benchmarks/")
    elif script not in str(record.get("command", "")):
        problems.append(f"{path}: command {record.get('command')!r} does not run {script}")
    if record.get("results_sha256") and record["results_sha256"] != results_digest(
            data["results"]):
        problems.append(f"{path}: results differ from what {script} wrote (digest mismatch: "
                        "edited by hand?)")
    return problems
