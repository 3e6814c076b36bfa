"""Stage figures that outlive a kernel database's growth: stages keyed by what they build.

A stage measured with tuned kernels is logged under a signature that names the database by
its record counts (:func:`~.stage_module.stage_tag`), which is cheap to compute and so what
the IOS DP looks stages up by. Adding any record to the database changes it, and every
stage of the model would be measured again, though a record for one kernel changes only
the stages that call that kernel (and only if it beats the record they used).

So each such measurement also logs its *build digest*: a digest of every function of the
module the stage's build compiles (:func:`~.measure.prepare_stage`: weights bound, the
rProgram emitted, the database's schedules applied), hashed structurally. Where a stage is
missing by signature, the measured cost model prepares it for its digest
(:func:`build_digest`), and :func:`reuse` takes a logged measurement of the same target and
device with the same digest as that stage's figure: the same code was timed.
It is copied under the new signature and key (same timings, same timestamp), so the next
lookup is the cheap one again.
"""
from __future__ import annotations

import dataclasses
import hashlib
import logging

from .. import _tvm
from .log import LogRecord, MeasureLog
from .stage_timing import prepare_stage

__all__ = ["build_digest", "reuse"]

logger = logging.getLogger(__name__)


def build_digest(mod, target) -> str:
    """A digest of the module ``prepare_stage(mod, target)`` returns, equal in every process.

    Functions are hashed by name and structure (free variables mapped, weights' values
    included: they are seeded random constants of the stage's shapes); module attributes,
    which name the database's path, are not.
    """
    prepared = prepare_stage(mod, target)
    items = sorted((gv.name_hint, _tvm.structural_hash(func, map_free_vars=True))
                   for gv, func in prepared.functions.items())
    return hashlib.sha1(repr(items).encode()).hexdigest()[:16]


def reuse(log: MeasureLog, stage, build: str, target: str, device_key: str) -> LogRecord | None:
    """The logged measurement of a build equal to ``stage``'s (digest ``build``), copied
    under the stage's key and signature; None when the log has no such build."""
    found = log.lookup_build(build, target, device_key)
    if found is None:
        return None
    record = dataclasses.replace(found, key=stage.key, signature=stage.signature,
                                 stage=stage.description)
    log.append(record)
    logger.info("stage %s: same build as %s (measured %s), its figure reused", stage.key,
                found.key, found.timestamp)
    return record
