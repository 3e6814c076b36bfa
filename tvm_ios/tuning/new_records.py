"""Measured candidates into a kernel database, each schedule once: meta_schedule's
``AddToDatabase`` less the records the database holds already.

A tuning run resumed after a kill (``kill -9``) searches again from the same seed, and
meta_schedule's evolutionary search knows only the candidates measured in its own process:
it proposes some the killed run measured, and ``AddToDatabase`` would commit a second record
of the same trace (on the tiny model of ``tests/cli/test_faults.py``, 1 of the 8 candidates
measured after the kill). :class:`AddNewToDatabase` commits a record only when its workload
has none of that trace; a candidate skipped so is counted in :attr:`skipped`.
"""
from __future__ import annotations

import logging

from tvm.ir.utils import derived_object

from .. import _tvm

__all__ = ["AddNewToDatabase", "measure_callbacks"]

logger = logging.getLogger(__name__)
ms = _tvm.ms

#: Run seconds of a candidate that did not run (meta_schedule's own figure for one).
NOT_RUN = 1e10


def _trace_key(trace) -> str:
    return str(trace.as_json(remove_postproc=False))  # (as the JSON database writes it)


@derived_object
class AddNewToDatabase(ms.measure_callback.PyMeasureCallback):
    """Commit each measured candidate whose workload has no record of its trace."""

    def __init__(self):
        super().__init__()
        self.traces: dict = {}  # workload's structural hash -> trace keys of its records
        self.skipped = 0

    def _known(self, database, workload) -> set:
        key = _tvm.structural_hash(workload.mod)
        if key not in self.traces:
            self.traces[key] = {_trace_key(r.trace) for r in database.get_all_tuning_records()
                                if _tvm.structural_hash(r.workload.mod) == key}
        return self.traces[key]

    def apply(self, task_scheduler, task_id, measure_candidates, builder_results,
              runner_results):
        database = task_scheduler.database_
        if database is None:
            return
        ctx = task_scheduler.tasks_[task_id].ctx
        workload = database.commit_workload(ctx.mod)
        known = self._known(database, workload)
        for candidate, result in zip(measure_candidates, runner_results):
            key = _trace_key(candidate.sch.trace)
            if key in known:
                self.skipped += 1
                logger.info("%s: a candidate the database holds already, not recorded "
                            "again", ctx.task_name)
                continue
            known.add(key)
            run_secs = result.run_secs if result.run_secs is not None else [
                _tvm.float_imm(NOT_RUN)]
            database.commit_tuning_record(ms.database.TuningRecord(
                candidate.sch.trace, workload, run_secs, ctx.target, candidate.args_info))


def measure_callbacks(*extra) -> list:
    """meta_schedule's default callbacks with :class:`AddNewToDatabase` for its
    ``AddToDatabase``, then ``extra``."""
    default = [cb for cb in ms.MeasureCallback.create("default")
               if not isinstance(cb, ms.measure_callback.AddToDatabase)]
    return [AddNewToDatabase(), *default, *extra]
