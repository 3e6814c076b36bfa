"""``tvm-ios run --tune SECONDS``: tune the model's kernels into the cache within a budget,
then run with them.

The budget becomes trials: ``SECONDS`` over the seconds a measured trial took where this
model's seeds were tuned (:func:`~tvm_ios.tuning.cache.seconds_per_trial`; else
:data:`SECONDS_PER_TRIAL`), shared by the kernel variants, added to the records the model's
cache database already holds, so a second ``--tune`` goes on where the first stopped and a
killed one resumes (``tune-kernels`` counts the records there). What it took is printed, with
the budget: the trials are an estimate of the time, not a deadline inside TVM's tuner.
"""
from __future__ import annotations

import argparse
import logging
import sys
import time

__all__ = ["COVER", "SECONDS_PER_TRIAL", "tune_first", "trials_for"]

logger = logging.getLogger(__name__)

#: Seconds per measured trial where no seed of the model tells (a 2-core CPU).
SECONDS_PER_TRIAL = 0.4
#: Trials each kernel without a record gets first (``tune-kernels --cover``): one, so a small
#: budget still gives every kernel a tuned record before the rest goes to the search.
COVER = 1


def trials_for(seconds: float, per_trial: float | None, variants: int, have: int) -> int:
    """Total trials per variant to ask ``tune-kernels`` for: ``have`` (already in the
    database) plus what ``seconds`` buys for ``variants`` variants (at least 8)."""
    if seconds <= 0:
        raise ValueError(f"--tune takes a positive number of seconds, got {seconds:g}")
    per_trial = per_trial or SECONDS_PER_TRIAL
    return have + max(8, int(seconds / per_trial / variants))


def tune_first(args, name: str, mod) -> int:
    """Tune ``--model``'s kernels into its cache database for about ``args.tune`` seconds;
    then point ``args.kernels`` at that database. Returns ``tune-kernels``' exit code."""
    from ..tuning.cache import cache_dir, seconds_per_trial
    from ..tuning.kernel_db import VARIANTS, KernelDB
    from . import tune_kernels

    path = cache_dir(name, mod)
    have = 0
    if (path / "target.json").is_file():
        db = KernelDB(path)
        have = max(db.num_records(v) for v in VARIANTS)
    trials = trials_for(args.tune, seconds_per_trial(name), len(VARIANTS), have)
    parser = argparse.ArgumentParser(prog="tvm-ios")
    tune_kernels.add_parser(parser.add_subparsers())
    tune_args = parser.parse_args(["tune-kernels", "--model", args.model, "--db", str(path),
                                   "--trials", str(trials), "--batch", str(args.batch),
                                   "--cover", str(COVER)])
    tune_args.image_size = args.image_size
    start = time.perf_counter()
    code = tune_args.handler(tune_args)
    took = time.perf_counter() - start
    print(f"tuned {name}'s kernels to {trials} trials a variant in {took:.0f} s (budget "
          f"{args.tune:g} s) into {path}", file=sys.stderr)
    if code == 0:
        args.kernels = str(path)
    return code
