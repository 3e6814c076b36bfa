"""``ApplySchedule``: rewrite a Relax function to follow a given stage schedule.

The schedule may come from :func:`tvm_ios.ios_schedule`, a baseline, or a JSON file. The
pass validates it against the function's op graph, merges the convolutions of merge
stages, orders bindings stage by stage and records the schedule on the module (read it
back with :func:`schedule_of`). A stale or invalid schedule raises
:class:`~tvm_ios.schedule.schedule.ScheduleError`, or with ``fallback=True`` logs a warning
and applies the sequential schedule, which is always safe.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

from tvm import relax

from .. import _tvm
from ..graph.extract import Extraction, extract
from ..schedule.baselines import sequential_schedule
from ..schedule.schedule import Schedule, ScheduleError
from ..schedule.validate import validate_schedule
from .stage_rewriter import StageRewriter, emission_plan

__all__ = ["ApplySchedule", "schedule_of", "apply_to_function", "SCHEDULE_ATTR"]

logger = logging.getLogger(__name__)

_tvm.register_error(ScheduleError)

#: Module attribute holding ``{function name: schedule document}`` as JSON.
SCHEDULE_ATTR = "tvm_ios.schedules"


def load_schedule(schedule: Schedule | str | Path | dict) -> Schedule:
    """A Schedule from a Schedule, a dict, a JSON string or a path to a JSON file."""
    if isinstance(schedule, Schedule):
        return schedule
    if isinstance(schedule, dict):
        return Schedule.from_json(schedule)
    text = str(schedule)
    if not text.lstrip().startswith("{"):
        path = Path(text)
        if not path.is_file():
            raise ScheduleError(f"schedule file {path} does not exist")
        try:
            return Schedule.from_json(path.read_text(encoding="utf-8"))
        except ScheduleError as err:
            raise ScheduleError(f"{path}: {err}") from err
        except UnicodeDecodeError as err:  # (binary garbage, a byte flipped in a name)
            raise ScheduleError(f"{path}: not a schedule JSON file (not UTF-8 text: byte "
                                f"{err.start} is {err.object[err.start]:#04x})") from None
    return Schedule.from_json(text)


def apply_to_function(mod, func_name: str, ext: Extraction, schedule: Schedule):
    """Rewrite ``mod[func_name]`` to follow ``schedule`` and record it; returns the module."""
    validate_schedule(ext.graph, schedule)
    plan = emission_plan(ext, schedule)
    rewriter = StageRewriter(ext, plan, mod)
    new_func = rewriter.visit_expr(ext.func)
    new_func = relax.analysis.remove_all_unused(new_func) \
        if hasattr(relax.analysis, "remove_all_unused") else new_func
    gvar = mod.get_global_var(func_name)
    mod = mod.clone() if hasattr(mod, "clone") else mod
    mod[gvar] = new_func
    return record_schedule(mod, func_name, schedule)


def record_schedule(mod, func_name: str, schedule: Schedule):
    """Return ``mod`` with ``schedule`` recorded for ``func_name`` (an empty schedule, of a
    function with no op to schedule, is not recorded: a recorded one has stages)."""
    if not schedule.stages:
        return mod
    stored = {}
    if mod.attrs is not None and SCHEDULE_ATTR in mod.attrs:
        stored = json.loads(str(mod.attrs[SCHEDULE_ATTR]))
    stored[func_name] = schedule.to_dict()
    return mod.with_attr(SCHEDULE_ATTR, json.dumps(stored))


def schedule_of(mod, func_name: str = "main") -> Schedule | None:
    """The schedule recorded on a module by ``IOSPass``/``ApplySchedule``, or None."""
    if mod.attrs is None or SCHEDULE_ATTR not in mod.attrs:
        return None
    stored = json.loads(str(mod.attrs[SCHEDULE_ATTR]))
    return Schedule.from_json(stored[func_name]) if func_name in stored else None


@_tvm.module_pass(opt_level=0, name="tvm_ios.ApplySchedule")
class ApplySchedule:
    """Apply a stage schedule to a Relax function.

    Parameters
    ----------
    schedule : Schedule, dict, str or Path
        The schedule, its JSON text, or a path to a JSON file.
    func_name : str
        The function to rewrite.
    fallback : bool
        On an invalid or stale schedule, log a warning and apply the sequential schedule
        instead of raising.
    """

    def __init__(self, schedule, func_name: str = "main", fallback: bool = False):
        self.schedule = load_schedule(schedule)
        self.func_name = func_name
        self.fallback = fallback

    def transform_module(self, mod, ctx):
        if self.func_name not in [gv.name_hint for gv in mod.get_global_vars()]:
            raise ValueError(f"ApplySchedule: module has no function {self.func_name!r}")
        ext = extract(mod[self.func_name], name=self.func_name)
        try:
            return apply_to_function(mod, self.func_name, ext, self.schedule)
        except ScheduleError as err:
            if not self.fallback:
                raise
            logger.warning("ApplySchedule: %s; falling back to the sequential schedule", err)
            seq = sequential_schedule(ext.graph)
            seq.params["fallback_reason"] = str(err)
            return apply_to_function(mod, self.func_name, ext, seq)
