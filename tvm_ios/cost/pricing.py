"""The cost-model protocol, for cost models and their users, and pricing a whole schedule.

The protocol itself (``stage_latency``, ``merged_latency`` and the optional batch
``stage_latencies``) belongs to the scheduler that is written against it and lives in
:mod:`tvm_ios.schedule.cost_protocol`; it is re-exported here so cost models and callers
keep importing it from the cost package.
"""
from __future__ import annotations

from ..graph.opgraph import OpGraph
from ..schedule.cost_protocol import CostModel, check_cost_model

__all__ = ["CostModel", "check_cost_model", "schedule_latency", "WithoutMerges"]


def schedule_latency(model: CostModel, graph: OpGraph, schedule) -> float:
    """The latency (us) of a :class:`~tvm_ios.schedule.schedule.Schedule` of ``graph``
    priced stage by stage by ``model`` (e.g. one schedule under another's measurements).

    Raises
    ------
    ValueError
        When a merge stage holds ops that ``model`` cannot merge (its ``merged_latency``
        returns None): the schedule cannot run as written under that model.
    """
    total = 0.0
    for index, stage in enumerate(schedule.stages):
        groups = [[graph.index[n] for n in g] for g in stage.groups]
        if stage.strategy != "merge":
            total += model.stage_latency(graph, groups)
            continue
        merged = model.merged_latency(graph, [g[0] for g in groups])
        if merged is None:
            raise ValueError(f"stages[{index}] merges {stage.ops}, which {model!r} cannot "
                             "merge (merged_latency returned None)")
        total += merged
    return total


class WithoutMerges:
    """``model`` for concurrent and sequential stages, no merge priced (``merged_latency``
    is None): where kernels come from a tuning database, a merged operator is a new kernel
    it does not hold, which runs TVM's default schedule, and a prediction would not say so."""

    def __init__(self, model: CostModel):
        self.model = model

    def __repr__(self) -> str:
        return f"WithoutMerges({self.model!r})"

    def stage_latency(self, graph: OpGraph, groups) -> float:
        """``model``'s latency of a stage run as ``groups``."""
        return self.model.stage_latency(graph, groups)

    def merged_latency(self, graph: OpGraph, ops) -> None:  # noqa: ARG002
        """None: no merge."""
        return None
