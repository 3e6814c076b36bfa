"""Run many artifacts, each in its own process under a timeout, appending results as they come.

A CUDA fault is sticky for its process, and a stuck program never returns: one artifact
must not take the others' results with it. :func:`run_all` first checks every artifact
against its reference (one process each, ``check`` phase), then times those that matched,
fastest first by their check call's wall time (``time`` phase: checked again, then timed),
so that the most valuable figures come back first. Each finished step appends one JSON
object per line to the results file (JSON lines), the first line being the provenance
(GPU, driver and clocks from ``nvidia-smi`` where present, the commit the pack was built
at, versions), so a run killed half-way keeps every line it wrote. A record's ``status``
is ``ok``, ``mismatch``, ``refused``, ``error`` (the child raised: a launch error, a failed
bounded wait), ``crashed`` (the child died without a result) or ``timeout``.

Standard library only in the parent; the child is :mod:`tvm_ios.bench.run` (TVM's runtime).
"""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

from .provenance import provenance

__all__ = ["MARK", "PHASES", "gpu_info", "read_results", "run_all", "run_child"]

logger = logging.getLogger(__name__)

#: The line prefix a child prints its result after.
MARK = "@@tvm-ios-result "
PHASES = ("check", "time")
_SMI_FIELDS = ("name", "driver_version", "clocks.sm", "clocks.mem", "clocks.max.sm",
               "clocks.max.mem", "power.limit", "memory.total", "compute_cap")


def gpu_info() -> list[dict] | None:
    """One dict per GPU from ``nvidia-smi --query-gpu`` (None where it is absent)."""
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=" + ",".join(_SMI_FIELDS),
                               "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return [dict(zip(_SMI_FIELDS, (v.strip() for v in line.split(","))))
            for line in done.stdout.splitlines() if line.strip()]


def _append(path: Path, record: dict) -> None:
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")
        out.flush()
        os.fsync(out.fileno())


def read_results(path) -> tuple[dict, list[dict]]:
    """The provenance line and the result records of a results file (JSON lines)."""
    lines = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    head = lines[0] if lines and "provenance" in lines[0] else {}
    return head.get("provenance", {}), [r for r in lines if "provenance" not in r]


def _child(directory: str, phase: str, settings: dict, timeout_s: float) -> dict:
    """Run one phase of one artifact in a fresh process; its record."""
    cmd = [sys.executable, "-m", "tvm_ios.bench.isolated", "--child", phase, directory,
           json.dumps(settings)]
    started = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                              check=False)
    except subprocess.TimeoutExpired as err:
        tail = (err.stderr or b"")[-2000:]
        return {"status": "timeout", "error": f"no result within {timeout_s:g} s (killed)",
                "stderr_tail": tail.decode(errors="replace") if isinstance(tail, bytes)
                else tail, "wall_s": round(time.perf_counter() - started, 2)}
    results = [line[len(MARK):] for line in done.stdout.splitlines() if line.startswith(MARK)]
    record = json.loads(results[-1]) if results else {
        "status": "crashed", "error": f"exit status {done.returncode} and no result"}
    if record["status"] not in ("ok",):
        record["stderr_tail"] = done.stderr[-2000:]
    record["wall_s"] = round(time.perf_counter() - started, 2)
    return record


def run_child(phase: str, directory: str, settings: dict) -> int:
    """The child's side: one phase of one artifact, its record printed after :data:`MARK`."""
    from . import run  # TVM's runtime: imported only in the child
    from .manifest import ArtifactMismatch, ManifestError
    from .tensors import RecipeError

    try:
        result = run.bench_artifact(directory, time_it=phase == "time", **settings)
        record = result.to_dict()
    except (ManifestError, ArtifactMismatch, run.CudaRuntimeMissing, RecipeError) as err:
        record = {"status": "refused", "error": f"{type(err).__name__}: {err}"}
    except Exception as err:  # noqa: BLE001  (a launch error, a failed wait: this artifact's)
        record = {"status": "error", "error": f"{type(err).__name__}: {err}"}
    print(MARK + json.dumps(record), flush=True)
    return 0


def _identity(directory) -> dict:
    """Model, batch and variant from the artifact's manifest (plain JSON), so that a record
    whose child died still says what it was."""
    try:
        manifest = json.loads((Path(directory) / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}
    return {k: manifest.get(k) for k in ("model", "batch", "variant")}


def _report(record: dict) -> None:
    latency = record.get("latency_ms")
    figure = f" {latency:.4f} ms" if latency is not None else ""
    logger.warning("%s %s: %s%s%s", record["phase"], record["artifact"], record["status"],
                   figure, f" ({record['error'][:200]})" if record.get("error") else "")


def run_all(artifacts, results, *, timeout_s: float = 120.0, settings: dict | None = None,
            commit: str | None = None) -> list[dict]:
    """Check every artifact, then time those that matched; append each record to
    ``results`` (JSON lines; see the module docstring). Returns the records."""
    results, settings = Path(results), dict(settings or {})
    start = provenance()
    start.update(gpus=gpu_info(), pack_commit=commit, timeout_s=timeout_s, settings=settings)
    _append(results, {"provenance": start})
    records = []

    def step(directory, phase):
        record = dict(_identity(directory), **_child(str(directory), phase, settings,
                                                     timeout_s))
        record.update(artifact=str(directory), phase=phase)
        _append(results, record)
        _report(record)
        records.append(record)
        return record
    checked = [(step(d, "check"), d) for d in artifacts]
    passed = sorted(((r["settings"]["check_ms"], d) for r, d in checked
                     if r["status"] == "ok"), key=lambda pair: pair[0])
    for _, directory in passed:
        step(directory, "time")
    return records


if __name__ == "__main__" and len(sys.argv) == 5 and sys.argv[1] == "--child":
    sys.exit(run_child(sys.argv[2], sys.argv[3], json.loads(sys.argv[4])))
