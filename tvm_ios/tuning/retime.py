"""Timing a database's best candidates again, without a search.

A tuning record's time is only as good as the runner that took it: the parallel kernels of
databases tuned before :func:`~.tuning._runner` set the runner's thread pool were timed on
one thread (TVM's default on a 2-core VM), so the record that wins in them is the best
*serial* run of a parallel kernel. :func:`retime_kernels` takes the ``top_k`` records of
every workload, builds each candidate again from its trace and times it with the runner the
tuner now uses (the target's cores); the new records are appended (the database stays
append-only), and being faster than their one-thread selves, they rank first. Likewise for
records timed warm, before the tuner timed cold: the candidates are the best of all the
workload's records, and once timed cold, the cold records are the ones that rank
(:mod:`.record_timing`), so every workload's best is chosen by cold times again.
"""
from __future__ import annotations

import logging
import os
import shutil
import time
from dataclasses import dataclass
from typing import Callable

from .. import _tvm
from .kernel_db import KernelDB
from .search import InProcessBuilder, _cores, _runner, cache_state, resolved

__all__ = ["RetimeReport", "retime_kernels"]

logger = logging.getLogger(__name__)
ms = _tvm.ms


@dataclass
class RetimeReport:
    """What :func:`retime_kernels` did to one variant."""

    variant: str
    workloads: int
    timed: int  # candidates timed again (new records)
    failed: int  # candidates that did not build or run
    changed: int  # workloads whose best candidate is now another one
    wall_s: float


def _candidate(record, target):
    """``(BuilderInput, ArgInfo list)`` of a record: its trace applied to its workload."""
    sch = _tvm.s_tir.Schedule(record.workload.mod)
    record.trace.apply_to_schedule(sch, remove_postproc=False)
    args = list(record.args_info) if record.args_info is not None else \
        ms.arg_info.ArgInfo.from_prim_func(sch.mod["main"])
    return ms.builder.BuilderInput(sch.mod, target), args


def _time(records, target, builder, runner):
    """Run seconds (or None) of each record's candidate, timed now."""
    built = [_candidate(r, target) for r in records]
    results = builder.build([b for b, _ in built])
    inputs = [ms.runner.RunnerInput(res.artifact_path, "cpu", args)
              for res, (_, args) in zip(results, built) if res.error_msg is None]
    futures = iter(runner.run(inputs))
    secs = []
    for res in results:
        if res.error_msg is not None:
            logger.warning("candidate does not build again: %s", res.error_msg[:200])
            secs.append(None)
            continue
        out = next(futures).result()
        shutil.rmtree(os.path.dirname(res.artifact_path), ignore_errors=True)  # as tuning does
        if out.error_msg is not None:
            logger.warning("candidate does not run: %s", out.error_msg[:200])
        secs.append(None if out.error_msg is not None else
                    [float(s) for s in out.run_secs])
    return secs


def retime_kernels(kernels: KernelDB, variant: str = "parallel", top_k: int = 8,
                   rpc: tuple | None = None, progress: Callable | None = None,
                   source: KernelDB | None = None, **settings) -> RetimeReport:
    """Time the ``top_k`` best records of each workload of ``variant`` again.

    With ``source`` (another CPU's database, say) its best records are built for
    ``kernels``' target, timed here and appended to ``kernels``: a database of this CPU,
    every time in it measured here, seeded with the candidates that won there; a search
    (:func:`~.tuning.tune_kernels`) goes on from them.

    Parameters
    ----------
    kernels : KernelDB
        The database; the new records are appended to it.
    variant : {"parallel", "serial", "packed"}
        Which kernel set. Timed by a pool of the target's cores, as
        :func:`~.tuning.tune_kernels` times every variant (a serial kernel has no parallel
        loop: the pool's size does not change its time).
    top_k : int
        Candidates per workload.
    source : KernelDB, optional
        Take the candidates from this database (its ``variant`` kernels), not ``kernels``.
    rpc : (host, port, key), optional
        Time on RPC servers of a tracker instead of here.
    progress : callable, optional
        ``progress(variant, done, total)`` after each workload.
    """
    target = kernels.target_for(variant)
    settings = resolved(settings, kernels, variant)
    before = _best_traces(kernels, variant) if kernels.has(variant) else {}
    db = kernels.database(variant, writable=True)
    origin = source.database(variant, keep=top_k) if source is not None else db
    runner = _runner(rpc, settings, _cores(kernels))
    builder, workloads = InProcessBuilder(), _workloads(origin)
    start, timed, failed = time.perf_counter(), 0, 0
    for done, workload in enumerate(workloads, 1):
        records = list(origin.get_top_k(workload, top_k))
        if records:
            here = db.commit_workload(workload.mod) if source is not None else workload
            for record, secs in zip(records, _time(records, target, builder, runner)):
                if secs is None:
                    failed += 1
                    continue
                db.commit_tuning_record(ms.database.TuningRecord(
                    record.trace, here, secs, target, record.args_info))
                timed += 1
        if progress is not None:
            progress(variant, done, len(workloads))
    wall = time.perf_counter() - start
    entry = {"variant": variant, "retimed_top_k": top_k, "workloads": len(workloads),
             **({"from": source.name} if source is not None else {}),
             "cache": cache_state(settings), "timed": timed, "failed": failed,
             "records": kernels.num_records(variant), "wall_s": round(wall, 1),
             "rpc": bool(rpc), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    kernels.meta.setdefault("tuning", []).append(entry)  # (the history ranks the records)
    after = _best_traces(kernels, variant)
    entry["changed"] = sum(before.get(key) != trace for key, trace in after.items())
    kernels.save_meta()
    return RetimeReport(variant, len(workloads), timed, failed, entry["changed"], wall)


def _best_traces(kernels: KernelDB, variant: str) -> dict:
    """Workload key -> the trace of its best record, as builds rank them (the records of
    the timing of the variant's latest run, :mod:`.record_timing`)."""
    db = kernels.database(variant)
    return {_tvm.structural_hash(w.mod): str(top[0].trace) for w in _workloads(db)
            for top in [db.get_top_k(w, 1)] if top}


def _workloads(db) -> list:
    """The distinct workloads of a database's records."""
    seen, out = set(), []
    for record in db.get_all_tuning_records():
        key = _tvm.structural_hash(record.workload.mod)
        if key not in seen:
            seen.add(key)
            out.append(record.workload)
    return out
