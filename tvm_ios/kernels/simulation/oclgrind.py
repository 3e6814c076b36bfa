"""Run a persistent rProgram kernel under the Oclgrind OpenCL simulator and read its verdict.

Oclgrind (Debian ``oclgrind``) interprets OpenCL C work-item by work-item: it reports
out-of-bounds accesses, barriers not reached by a whole work-group and, with
``--data-races``, data races. A kernel runs in a child process (``python
_oclgrind_worker.py`` under the ``oclgrind`` wrapper, pyopencl on the simulator's platform)
with one simulator thread per vEU at least, so that spinning work-groups cannot starve the
ones they wait for (fewer threads end with the bounded-wait error instead).

Races are counted by where their two sides run: Oclgrind also reports every read of
another work-group's output as a race, even where the step array orders it (it does not
model the release/acquire protocol), so only races whose two sides are in one work-group
count as errors; the others are reported separately as ``inter_group_races``. Oclgrind
logs those cross-group races only when a kernel ends, after every race inside a group,
out-of-bounds access and barrier divergence of that launch, so a cap on the messages
(``max_errors``; millions of cross-group reads otherwise make gigabytes of log) loses none
of the reports that count in the first launch; ``capped`` says that the cap was reached.
By default Oclgrind does not even record the cross-group races (a preloaded shim,
:mod:`tvm_ios.kernels.simulation.shim`: de-duplicating them is quadratic and took hours on
large programs); ``errors`` then has no ``inter_group_races`` count.
"""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..gpu.build import kernel_signatures, persistent_kernel
from .shim import race_shim

__all__ = ["oclgrind_missing", "OclgrindRun", "run_kernel", "parse_log", "REQUIRE_ENV"]

logger = logging.getLogger(__name__)

#: Set (e.g. by CI) to make a missing Oclgrind an error rather than a skip.
REQUIRE_ENV = "TVM_IOS_REQUIRE_OCLGRIND"
_WORKER = Path(__file__).with_name("_oclgrind_worker.py")
_GROUP = re.compile(r"Group\((\d+),(\d+),(\d+)\)")


def oclgrind_missing() -> str | None:
    """Why kernels cannot be simulated here (None when Oclgrind and pyopencl are present)."""
    if shutil.which("oclgrind") is None:
        return ("the oclgrind simulator is not installed (apt-get install oclgrind "
                "ocl-icd-libopencl1)")
    try:
        import pyopencl  # noqa: F401, PLC0415
    except ImportError:
        return "pyopencl is not installed (pip install pyopencl)"
    return None


@dataclass
class OclgrindRun:
    """What one simulated run left: outputs and steps per launch, and Oclgrind's reports."""

    outputs: list = field(default_factory=list)  # per launch: name -> array
    steps: list = field(default_factory=list)    # per launch: the step workspace
    errors: dict = field(default_factory=dict)   # kind -> count (see parse_log)
    messages: list = field(default_factory=list)  # the first reports that count as errors
    seconds: float = 0.0          # the whole simulated process, OpenCL build included
    launch_seconds: list = field(default_factory=list)
    num_threads: int = 0
    capped: bool = False  # Oclgrind stopped printing reports at max_errors
    inter_group_recorded: bool = True  # False: the shim dropped cross-group race reports

    @property
    def error_count(self) -> int:
        """Reports that count as errors (everything but races across work-groups)."""
        return sum(v for k, v in self.errors.items() if k != "inter_group_races")


def parse_log(text: str, keep: int = 5) -> tuple[dict, list]:
    """Count Oclgrind's reports by kind: ``local_races`` and ``global_races`` (both sides in
    one work-group), ``inter_group_races``, ``out_of_bounds``, ``barrier_divergence``,
    ``other``; and the first ``keep`` reports that count as errors."""
    counts = dict.fromkeys(("local_races", "global_races", "inter_group_races",
                            "out_of_bounds", "barrier_divergence", "other"), 0)
    kept = []
    for record in re.split(r"\n(?=\S)", text.strip()):
        head = record.split("\n", 1)[0].strip()
        if not head or head.startswith("Oclgrind:"):
            continue
        if "data race" in head:
            groups = set(_GROUP.findall(record))
            if len(groups) > 1:
                counts["inter_group_races"] += 1
                continue
            kind = "local_races" if "local memory" in head else "global_races"
        elif head.startswith("Invalid read") or head.startswith("Invalid write"):
            kind = "out_of_bounds"
        elif "barrier" in record.lower() and "divergence" in head.lower():
            kind = "barrier_divergence"
        else:
            kind = "other"
        counts[kind] += 1
        if len(kept) < keep:
            kept.append(record.strip())
    return counts, kept


def run_kernel(source: str, program: str, arrays: dict, outputs: list[str],
               num_groups: int, local_size: int, zero_threads: int, *,
               num_threads: int | None = None, launches: int = 2, data_races: bool = True,
               timeout: float = 3600.0, local_mem: int = 1 << 20,
               max_errors: int = 1000, record_inter_group: bool = False) -> OclgrindRun:
    """Run the persistent kernel of ``source`` (after its zero kernel) under Oclgrind.

    The first launch runs with race detection (when ``data_races``); later launches run in
    a second simulator process without it (the same kernel on the steps the first left,
    which is what they check) at less than half the cost.

    Parameters
    ----------
    program : str
        The rProgram's name (its kernels' prefix).
    arrays : dict
        Initial array of every parameter of its persistent kernel, by name.
    zero_threads : int
        Work-items of the zero kernel (its one work-group).
    num_threads : int, optional
        Simulator threads (default: one per work-group).
    record_inter_group : bool
        Let Oclgrind record races across work-groups (never errors here; quadratic in
        their number). By default the shim drops them where it can be built.
    """
    missing = oclgrind_missing()
    if missing:
        raise RuntimeError(f"cannot simulate OpenCL kernels: {missing}")
    zero, main = persistent_kernel(source, program)
    spec = {"zero_kernel": zero, "main_kernel": main,
            "params": kernel_signatures(source)[main], "outputs": outputs,
            "local_size": local_size, "num_groups": num_groups, "zero_threads": zero_threads}
    shim = None if record_inter_group or not data_races else race_shim()
    options = dict(threads=num_threads or num_groups, timeout=timeout, local_mem=local_mem,
                   max_errors=max_errors, max_wg=max(local_size, 1024))
    run = OclgrindRun(num_threads=options["threads"],
                      inter_group_recorded=data_races and shim is None)
    first = _simulate(source, arrays, dict(spec, zero_first=True, launches=1), data_races,
                      preload=shim, **options)
    results = [(first, data_races)]
    if launches > 1:
        again = dict(arrays, rp_steps=first[0]["launch0/rp_steps"])
        again.update({name: np.zeros_like(arrays[name]) for name in outputs})
        results.append((_simulate(source, again, dict(spec, zero_first=False,
                                                      launches=launches - 1), False,
                                  **options), False))
    for (result, log, seconds), _ in results:
        counts, kept = parse_log(log)
        for key, value in counts.items():
            run.errors[key] = run.errors.get(key, 0) + value
        run.messages += kept[:max(0, 5 - len(run.messages))]
        run.capped = run.capped or "suppressing further errors" in log
        run.seconds += seconds
        if shim and counts["inter_group_races"]:  # e.g. an Oclgrind that inlines the call
            logger.warning("the race shim did not take effect: Oclgrind still reported "
                           "races across work-groups")
            run.inter_group_recorded = True
        k = 0
        while f"launch{k}/rp_steps" in result:
            run.outputs.append({name: result[f"launch{k}/{name}"] for name in outputs})
            run.steps.append(result[f"launch{k}/rp_steps"])
            run.launch_seconds.append(round(float(result[f"launch{k}/seconds"]), 2))
            k += 1
    if not run.inter_group_recorded:
        run.errors.pop("inter_group_races", None)
    return run


def _simulate(source, arrays, spec, data_races, *, threads, timeout, local_mem, max_errors,
              max_wg, preload=None) -> tuple[dict, str, float]:
    """One simulator process: (results by ``launch<k>/<name>``, Oclgrind's log, seconds)."""
    with tempfile.TemporaryDirectory(prefix="tvm_ios_oclgrind_") as tmp:
        root = Path(tmp)
        (root / "kernel.cl").write_text(source)
        np.savez(root / "inputs.npz", **{p: arrays[p] for p in spec["params"]})
        (root / "spec.json").write_text(json.dumps(dict(spec, source="kernel.cl")))
        cmd = ["oclgrind", "--num-threads", str(threads), "--log", str(root / "oclgrind.log"),
               "--local-mem-size", str(local_mem), "--max-wgsize", str(max_wg),
               "--max-errors", str(max_errors)]
        cmd += ["--data-races"] if data_races else []
        cmd += [sys.executable, str(_WORKER), str(root)]
        env = {**os.environ, "PYOPENCL_NO_CACHE": "1"}
        if preload:  # the oclgrind wrapper appends its runtime to LD_PRELOAD
            env["LD_PRELOAD"] = ":".join(filter(None, [preload, env.get("LD_PRELOAD")]))
        start = time.time()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        seconds = time.time() - start
        log = (root / "oclgrind.log").read_text() if (root / "oclgrind.log").exists() else ""
        if proc.returncode != 0 or not (root / "result.npz").exists():
            raise RuntimeError(f"the simulated run failed ({proc.returncode}): "
                               f"{(proc.stderr or log)[-2000:]}")
        return dict(np.load(root / "result.npz")), log, seconds
