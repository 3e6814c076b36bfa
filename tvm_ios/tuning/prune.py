"""Pruning a kernel database to the records its builds can use: each workload's few best.

A database keeps every candidate its searches and retimings measured (Inception V3's packed
variant on the Zen 3: 2,208 records for 59 workloads), but a build asks each kernel's best
record only (:func:`~.db_records.best_lines`, ``keep=1``). :func:`prune` rewrites each variant
to the records that rank by the timing of its latest run (:func:`~.db_records.ranked_lines`)
and, of those, each workload's ``keep`` best, drops the workloads no record is left for
(renumbering the records' workload indices), and replaces the variant's run history by one
entry saying what was pruned. The database's :attr:`~.kernel_db.KernelDB.fingerprint`, under
which the stages measured with its kernels are logged, is kept: the best records are the same,
so are the stage figures. :func:`best_records` is what a build would take from each workload;
:func:`prune` returns it from before and after, and refuses to write when they differ.
"""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from .records import (FILES, best_lines, clean_lines, line_timings, preferred, ranked_lines,
                         runs_of)
from .kernel_db import VARIANTS

__all__ = ["PruneReport", "best_records", "prune", "tuned_before"]

logger = logging.getLogger(__name__)


class PruneReport(dict):
    """Per variant: ``records_before``, ``records``, ``workloads_before``, ``workloads``."""


def _ranked(lines: list[str], history, variant: str) -> list[str]:
    timings = line_timings(history, variant, len(lines))
    kept = ranked_lines(lines, timings, preferred(history, variant))
    return lines if kept is None else kept


def best_records(folder: Path, history, variant: str) -> dict:
    """What a build takes from a variant's ``folder``: workload (its structural hash) ->
    the best record's trace and run times, as JSON text."""
    workloads = [json.loads(line)[0] for line in clean_lines(folder / FILES[0])[0]]
    lines = _ranked(clean_lines(folder / FILES[1])[0], history, variant)
    best = best_lines(lines, 1)
    out = {}
    for line in lines if best is None else best:
        index, record = json.loads(line)[:2]
        out[workloads[index]] = json.dumps(record[:2])
    return out


def tuned_before(runs: list) -> dict:
    """What the runs a pruning replaces had cost: ``runs_before``, ``trials_before`` (records
    measured) and ``wall_s_before`` (what a tuning hint estimates from)."""
    trials = sum(int(r.get("trials", r.get("timed", 0)) or 0) for r in runs)
    trials += sum(int(r.get("pruned", {}).get("trials_before", 0)) for r in runs)
    wall = sum(float(r.get("wall_s", 0) or 0) for r in runs)
    wall += sum(float(r.get("pruned", {}).get("wall_s_before", 0)) for r in runs)
    return {"runs_before": len(runs), "trials_before": trials, "wall_s_before": round(wall, 1)}


def _renumbered(workload_lines: list[str], record_lines: list[str]):
    used = sorted({json.loads(line)[0] for line in record_lines})
    index = {old: new for new, old in enumerate(used)}
    records = []
    for line in record_lines:
        item = json.loads(line)
        item[0] = index[item[0]]
        records.append(json.dumps(item, separators=(",", ":")))
    return [workload_lines[i] for i in used], records


def _prune_variant(kernels, variant: str, keep: int) -> dict | None:
    folder = kernels.path / variant
    kernels.unpack(variant)
    if not (folder / FILES[1]).is_file():
        return None
    history = kernels.meta.get("tuning", [])
    workload_lines = clean_lines(folder / FILES[0])[0]
    record_lines = clean_lines(folder / FILES[1])[0]
    before = best_records(folder, history, variant)
    ranked = _ranked(record_lines, history, variant)
    kept = best_lines(ranked, keep) or ranked
    workloads, records = _renumbered(workload_lines, kept)
    prefer = preferred(history, variant)
    entry = {"variant": variant, "records": len(records), "cache": prefer,
             "pruned": {"keep": keep, "records_before": len(record_lines),
                        **tuned_before(runs_of(history, variant)),
                        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}}
    after = _check_after(folder, workloads, records, entry, before)
    for name, lines in zip(FILES, (workloads, records)):
        (folder / name).write_text("".join(line + "\n" for line in lines))
    kernels.meta["tuning"] = [e for e in history if e.get("variant") != variant] + [entry]
    return {"records_before": len(record_lines), "records": len(records),
            "workloads_before": len(workload_lines), "workloads": len(workloads),
            "best_kept": len(after)}


def _check_after(folder: Path, workloads, records, entry, before: dict) -> dict:
    """The best records of the pruned lines, checked equal to ``before`` (else ValueError)."""
    names = [json.loads(line)[0] for line in workloads]
    after = {}
    for line in best_lines(records, 1) or records:
        index, record = json.loads(line)[:2]
        after[names[index]] = json.dumps(record[:2])
    if after != before:
        lost = sorted(set(before) ^ set(after) | {k for k in before if before[k] != after.get(k)})
        raise ValueError(f"pruning {folder} would change the best record of "
                         f"{len(lost)} workload(s) (first: {lost[0]}); nothing written")
    return after


def prune(kernels, keep: int = 3) -> PruneReport:
    """Prune every variant of ``kernels`` (a :class:`~.kernel_db.KernelDB`) to each
    workload's ``keep`` best ranking records, keeping its fingerprint; then re-pack it.

    Parameters
    ----------
    kernels : KernelDB
        The database (opened from its directory).
    keep : int
        Records kept per workload (at least 1: the best, what a build uses; more leave
        candidates for ``tune-kernels --retime``).

    Returns
    -------
    PruneReport
        Per pruned variant, the record and workload counts before and after.
    """
    if keep < 1:
        raise ValueError(f"keep must be at least 1, got {keep}")
    fingerprint = kernels.fingerprint
    report = PruneReport()
    for variant in VARIANTS:
        counts = _prune_variant(kernels, variant, keep)
        if counts is not None:
            report[variant] = counts
            logger.info("%s %s: %d -> %d records, %d -> %d workloads", kernels.path, variant,
                        counts["records_before"], counts["records"],
                        counts["workloads_before"], counts["workloads"])
    kernels.keep_fingerprint(fingerprint)
    kernels.save_meta()
    kernels.close()
    kernels.pack()
    return report
