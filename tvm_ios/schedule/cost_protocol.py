"""The cost-model protocol the schedulers are written against.

A cost model is any object with two methods (a strategy injected into the scheduler):

``stage_latency(graph, groups) -> float``
    Latency in microseconds of running ``groups`` (lists of node ids of ``graph``, each in
    topological order) concurrently, the ops of a group one after another.
``merged_latency(graph, ops) -> float | None``
    Latency of ``ops`` run as one merged operator, or None when the model cannot merge
    them (the stage is then priced as concurrent groups, or not at all under IOS-Merge).

It may also have ``stage_latencies(graph, stages) -> sequence of float``, the latencies
of many stages at once: ``stages`` is an int array ``(stages, groups, ops)`` of node ids
padded with -1 (a group's ops ascending, groups by their first op). The scheduler uses it
when present and calls ``stage_latency`` stage by stage otherwise; both must agree.

The protocol lives with the scheduler that needs it; :mod:`tvm_ios.cost.pricing` re-exports
it for the cost models.
"""
from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

import numpy as np

from ..graph.opgraph import OpGraph

__all__ = ["CostModel", "check_cost_model", "concurrent_latencies"]


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


def concurrent_latencies(model: CostModel, graph: OpGraph, stages: np.ndarray) -> np.ndarray:
    """Latencies of ``stages`` (``(stages, groups, ops)`` ids, -1 padded) run as groups."""
    batch = getattr(model, "stage_latencies", None)
    if batch is not None:
        return np.asarray(batch(graph, stages), dtype=np.float64).reshape(len(stages))
    lengths = (stages >= 0).sum(axis=2)
    flat = stages[stages >= 0].tolist()
    out, pos = np.empty(len(stages)), 0
    for k, row in enumerate(lengths.tolist()):
        groups = []
        for length in row:
            if length:
                groups.append(flat[pos:pos + length])
                pos += length
        out[k] = float(model.stage_latency(graph, groups))
    return out
