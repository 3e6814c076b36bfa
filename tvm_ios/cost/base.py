"""The cost-model protocol the schedulers are written against.

A cost model is any object with two methods (a strategy injected into the scheduler):

``stage_latency(graph, groups) -> float``
    Latency in microseconds of running ``groups`` (lists of node ids of ``graph``, each in
    topological order) concurrently, the ops of a group one after another.
``merged_latency(graph, ops) -> float | None``
    Latency of ``ops`` run as one merged operator, or None when the model cannot price it.
"""
from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

from ..graph.opgraph import OpGraph

__all__ = ["CostModel", "check_cost_model", "schedule_latency"]


@runtime_checkable
class CostModel(Protocol):
    """Structural type of a cost model (see the module docstring)."""

    def stage_latency(self, graph: OpGraph, groups: Sequence[Sequence[int]]) -> float:
        """Latency (us) of the groups run concurrently."""

    def merged_latency(self, graph: OpGraph, ops: Sequence[int]) -> float | None:
        """Latency (us) of the ops merged into one operator, or None."""


def check_cost_model(model: object) -> CostModel:
    """Return ``model`` if it implements :class:`CostModel`, else raise ``TypeError``."""
    if not isinstance(model, CostModel):
        raise TypeError(f"{type(model).__name__} is not a cost model: it needs methods "
                        "stage_latency(graph, groups) and merged_latency(graph, ops)")
    return model


def schedule_latency(model: CostModel, graph: OpGraph, schedule) -> float:
    """The latency (us) of a :class:`~tvm_ios.schedule.schedule.Schedule` of ``graph``
    priced stage by stage by ``model`` (e.g. one schedule under another's measurements)."""
    total = 0.0
    for stage in schedule.stages:
        groups = [[graph.index[n] for n in g] for g in stage.groups]
        total += model.merged_latency(graph, [g[0] for g in groups]) \
            if stage.strategy == "merge" else model.stage_latency(graph, groups)
    return total
