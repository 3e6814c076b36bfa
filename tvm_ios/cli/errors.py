"""What the commands' exit codes mean, and the exceptions that carry them to ``main``.

- 0: done, and every output compared agrees with TVM's default build within ``--tolerance``.
- 1: outputs differ beyond ``--tolerance`` (:class:`OutputsDiffer`, one line naming the
  output and the difference).
- 2: bad input (:class:`BadInput`, ``ValueError``, ``FileNotFoundError``): a model the
  frontend rejects, a file that does not parse, a preset this machine lacks, or a fallback
  (stale schedule, kernels tuned for another target) under ``--strict``; a write the
  machine refuses (``OSError`` ENOSPC, EFBIG, EDQUOT: a full disk, a file-size limit),
  naming the file; one line.
- 3: an unexpected internal error; one line (``-v`` prints the traceback).
"""
from __future__ import annotations

import logging

__all__ = ["BadInput", "OutputsDiffer", "DEFAULT_TOLERANCE", "add_tolerance_option",
           "add_strict_option", "check_outputs", "note_fallback", "fallbacks_of",
           "note_schedule_fallback"]

logger = logging.getLogger(__name__)

#: Default ``--tolerance``: the largest |a - b| of an output over its largest |reference|.
DEFAULT_TOLERANCE = 1e-3
#: Floor of the output scale, so an all-zero output is compared absolutely.
EPS = 1e-6


class BadInput(Exception):
    """Bad input to a command (exit 2); its message is the one line printed."""


class OutputsDiffer(Exception):
    """An output differs from TVM's default build beyond the tolerance (exit 1)."""


def add_tolerance_option(parser) -> None:
    """``--tolerance REL`` of the commands that compare outputs."""
    parser.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE, metavar="REL",
                        help="largest accepted |a-b|max / max(|ref|max, 1e-6) of any output "
                             f"against TVM's default build (default {DEFAULT_TOLERANCE:g}); "
                             "beyond it the command exits 1")


def add_strict_option(parser) -> None:
    """``--strict``: a fallback (stale schedule, kernels for another target) is exit 2."""
    parser.add_argument("--strict", action="store_true",
                        help="exit 2 instead of falling back (a schedule that does not fit "
                             "the graph, a kernel database tuned for another target)")


def relative_diffs(result) -> list[float]:
    """Per output of a :class:`~tvm_ios.runtime.compare.Comparison`: |a-b|max over
    max(|ref|max, EPS)."""
    diffs = result.output_diffs or [result.max_abs_diff]
    scales = result.output_scales or [result.max_abs_value]
    return [d / max(s, EPS) for d, s in zip(diffs, scales)]


def check_outputs(result, tolerance: float, what: str) -> None:
    """Raise :class:`OutputsDiffer` when an output of ``result`` (a Comparison of ``what``)
    differs beyond ``tolerance``, naming the worst one."""
    rel = relative_diffs(result)
    worst = max(range(len(rel)), key=lambda i: rel[i] if rel[i] == rel[i] else float("inf"))
    if not rel[worst] <= tolerance:  # NaN differs too
        diffs = result.output_diffs or [result.max_abs_diff]
        raise OutputsDiffer(f"{what}: output {worst} of {len(rel)} differs from TVM's default "
                            f"build: max |diff| {diffs[worst]:.3g}, relative {rel[worst]:.3g} > "
                            f"--tolerance {tolerance:g}")


def note_fallback(args, key: str, used: str, why: str) -> None:
    """Record on ``args`` that ``key`` fell back to ``used`` (see :func:`fallbacks_of`);
    with ``--strict`` raise :class:`BadInput` instead."""
    if getattr(args, "strict", False):
        raise BadInput(f"{why} (--strict)")
    record = fallbacks_of(args)
    record[key] = used
    record.setdefault("reasons", []).append(why)
    args.fallbacks = record


def fallbacks_of(args) -> dict:
    """What fell back in this command: ``{"schedule": "sequential (fallback)", "kernels":
    "untuned", "reasons": [...]}`` (the keys that did), for its JSON."""
    return dict(getattr(args, "fallbacks", None) or {})


def note_schedule_fallback(args, report: dict) -> None:
    """Note (:func:`note_fallback`) a ``--schedule`` file the pipeline replaced by the
    sequential schedule because it did not fit the graph (its ``report``'s schedule says)."""
    reason = ((report.get("schedule") or {}).get("params") or {}).get("fallback_reason")
    if reason is not None:
        note_fallback(args, "schedule", "sequential (fallback)",
                      f"schedule {getattr(args, 'schedule', None)} does not fit the graph "
                      f"({reason}): ran the sequential schedule")
