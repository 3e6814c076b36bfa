"""Check that a schedule is valid for a graph before anything applies it.

Valid means: it was made for this graph (fingerprint, names), lists every op once, every
op runs after the ops it reads (in an earlier stage, or earlier in its own group), groups of
a concurrent stage are independent, and merge stages hold ops that :func:`merge_plan` can
merge. Errors name the stage and the ops involved.
"""
from __future__ import annotations

from ..graph.bitset import ids_of
from ..graph.opgraph import OpGraph
from .merge import merge_plan
from .schedule import Schedule, ScheduleError

__all__ = ["validate_schedule"]


def validate_schedule(graph: OpGraph, schedule: Schedule) -> None:
    """Raise :class:`ScheduleError` unless ``schedule`` can run ``graph`` correctly."""
    schedule.check_graph(graph)
    done: set[int] = set()
    for s, stage in enumerate(schedule.stages):
        ids_by_group = [[graph.index[name] for name in group] for group in stage.groups]
        stage_ids = {i for group in ids_by_group for i in group}
        group_of = {i: g for g, group in enumerate(ids_by_group) for i in group}
        for g, group in enumerate(ids_by_group):
            seen_in_group: set[int] = set()
            for i in group:
                for p in ids_of(graph.pred[i]):
                    if p in done or p in seen_in_group:
                        continue
                    where = (f"in another group of stage {s}" if p in stage_ids
                             else "in a later stage")
                    raise ScheduleError(
                        f"stages[{s}].groups[{g}]: op {graph.nodes[i].name!r} reads "
                        f"{graph.nodes[p].name!r}, which runs {where}")
                seen_in_group.add(i)
        fixed = [graph.nodes[i].name for i in stage_ids if not graph.nodes[i].schedulable]
        if fixed and len(stage_ids) > 1:
            raise ScheduleError(f"stages[{s}]: op {fixed[0]!r} is unschedulable and must be "
                                "a stage of its own")
        if stage.strategy == "merge":
            if any(len(group) != 1 for group in ids_by_group) or \
                    merge_plan(graph, sorted(group_of)) is None:
                raise ScheduleError(f"stages[{s}]: ops {stage.ops} cannot be merged into one "
                                    "operator (they must be convolutions of one input with "
                                    "the same stride, dilation, epilogue and output size)")
        done |= stage_ids

