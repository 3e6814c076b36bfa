"""Delta-debugging shrink of a failing random CNN to the fewest ops that still fail.

A spec is a plain op list (:mod:`tvm_ios.testing.cnn_spec`) whose every sub-list builds,
so shrinking is deleting ops: :func:`shrink` runs ddmin (Zeller's delta debugging: drop
chunks of halving size, keep any deletion after which the check still fails the same way)
and then tries each op alone until no single deletion keeps the failure.
"""
from __future__ import annotations

import logging

from ..cnn_spec import drop_ops

__all__ = ["shrink", "same_failure"]

logger = logging.getLogger(__name__)


def same_failure(first: dict, record: dict) -> bool:
    """Whether ``record`` fails like ``first`` (same status; a crash of the same error type)."""
    if record["status"] != first["status"]:
        return False
    if first["status"] == "crash":
        return (record["error"] or "").split(":")[0] == (first["error"] or "").split(":")[0]
    return True


def shrink(spec: dict, check, first: dict, max_tries: int = 200):
    """The smallest spec found that still fails like ``first``, and its record.

    Parameters
    ----------
    spec : dict
        The failing spec.
    check : callable
        ``check(spec) -> record`` (:func:`~tvm_ios.testing.fuzz.check.check_spec` bound to
        a pipeline).
    first : dict
        The record of the failure to keep.
    max_tries : int
        Checks to spend at most.
    """
    best, record, tries = spec, first, 0
    chunks = 2
    while len(best["ops"]) > 1 and tries < max_tries:
        n = len(best["ops"])
        size = max(1, n // chunks)
        shrunk = False
        for start in range(0, n, size):
            drop = range(start, min(n, start + size))
            if len(drop) == n:
                continue
            candidate = drop_ops(best, drop)
            tries += 1
            result = check(candidate)
            if same_failure(first, result):
                best, record, shrunk = candidate, result, True
                chunks = max(chunks - 1, 2)
                break
        if not shrunk:
            if size == 1:
                break
            chunks = min(n, chunks * 2)
    logger.info("shrunk seed %s from %d to %d ops in %d checks", spec["seed"],
                len(spec["ops"]), len(best["ops"]), tries)
    return best, record
