"""A fuzzing campaign: seeds x pipelines, each failure shrunk and written as a reproducer.

:func:`run_campaign` checks every ``(seed, pipeline)`` pair (seed by seed, so each seed's
reference build serves all pipelines), shrinks each failure (:func:`~.shrink.shrink`) and
writes its reproducer (:func:`~.reproducer.write_reproducer`). The result is plain data:
``{"records", "failures", "seeds", "pipelines", "seconds", ...}``.
"""
from __future__ import annotations

import logging
import time

from ..random_cnn import random_spec
from .check import TOLERANCE, check_spec
from .reproducer import write_reproducer
from .shrink import shrink

__all__ = ["run_campaign", "summarize"]

logger = logging.getLogger(__name__)


def _finding(spec, record, pipeline, out_dir, tolerance, max_shrink):
    def check(candidate):
        return check_spec(candidate, pipeline, tolerance=tolerance)

    small, small_record = shrink(spec, check, record, max_tries=max_shrink)
    finding = dict(record, shrunk_ops=len(small["ops"]), shrunk_error=small_record["error"])
    if out_dir is not None:
        finding["reproducer"] = str(write_reproducer(out_dir, small, small_record, tolerance))
    return finding


def run_campaign(seeds, pipelines, out_dir=None, tolerance: float = TOLERANCE,
                 shrink_failures: bool = True, max_shrink: int = 60, progress=None,
                 spec_of=random_spec, checker=check_spec) -> dict:
    """Check ``seeds`` x ``pipelines``; the campaign's record (see the module docstring).

    ``progress(record)`` is called after each check; ``spec_of(seed)`` and
    ``checker(spec, pipeline, tolerance=...)`` may be replaced (tests disable the oracle).
    """
    start = time.time()
    records, failures = [], []
    for seed in seeds:
        spec = spec_of(seed)
        for pipeline in pipelines:
            record = checker(spec, pipeline, tolerance=tolerance)
            records.append(record)
            if record["status"] != "ok":
                if shrink_failures:
                    record = _finding(spec, record, pipeline, out_dir, tolerance, max_shrink)
                failures.append(record)
            if progress is not None:
                progress(record)
    return {"seeds": len(list(seeds)), "pipelines": list(pipelines), "tolerance": tolerance,
            "records": records, "failures": failures,
            "seconds": round(time.time() - start, 1), "summary": summarize(records, pipelines)}


def summarize(records: list, pipelines) -> dict:
    """Per pipeline: CNNs tried, ok, mismatches, crashes."""
    out = {}
    for pipeline in pipelines:
        rows = [r for r in records if r["pipeline"] == pipeline]
        out[pipeline] = {"tried": len(rows),
                         **{s: sum(r["status"] == s for r in rows)
                            for s in ("ok", "mismatch", "crash")}}
    return out
