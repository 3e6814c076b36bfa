"""GenerateStage of Algorithm 1: the latency and strategy of stages, many at once.

A stage is a row of group ids (see :mod:`tvm_ios.schedule.groups`). Under IOS-Both it runs
as concurrent groups or, when its ops are convolutions that merge into one, as the merged
operator, whichever the cost model prices lower; IOS-Parallel never merges; under
IOS-Merge a stage of several groups must merge, or it is not a stage at all.
"""
from __future__ import annotations

import numpy as np

from ..graph.opgraph import OpGraph
from .cost_protocol import CostModel, concurrent_latencies
from .groups import GroupTable
from .merge import merge_key, merge_plan

__all__ = ["StagePricer", "STRATEGIES"]

STRATEGIES = ("both", "parallel", "merge")


class StagePricer:
    """Prices stages of one search region.

    Parameters
    ----------
    graph : OpGraph
        The whole graph: the cost model sees it and its node ids.
    ids : sequence of int
        Node id in ``graph`` of each op of the region.
    groups : GroupTable
        The region's candidate groups (ids local to the region).
    cost_model : CostModel
        The cost model.
    strategy : {"both", "parallel", "merge"}
        The parallelization strategies allowed.
    """

    def __init__(self, graph: OpGraph, ids, groups: GroupTable, cost_model: CostModel,
                 strategy: str):
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
        self.graph, self.cost, self.strategy = graph, cost_model, strategy
        ids = np.asarray(list(ids), dtype=np.int64)
        self.ops = np.where(groups.ops >= 0, ids[np.maximum(groups.ops, 0)], -1)
        keys: dict[tuple, int] = {}
        self.merge_class = np.full(len(groups), -1, dtype=np.int64)
        for g, mask in enumerate(groups.masks):
            if mask.bit_count() == 1:
                key = merge_key(graph.nodes[int(self.ops[g, 0])])
                if key is not None:
                    self.merge_class[g] = keys.setdefault(key, len(keys))

    def price(self, stages: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(latency, valid, merged)`` of stages given as ``(n, s)`` group ids (-1 padded)."""
        used = stages >= 0
        count = used.sum(axis=1)
        latency = np.full(len(stages), np.inf)
        valid = np.zeros(len(stages), dtype=bool)
        merged = np.zeros(len(stages), dtype=bool)
        concurrent = (count == 1) if self.strategy == "merge" else np.ones(len(stages), bool)
        if concurrent.any():
            ops = self.ops[np.maximum(stages[concurrent], 0)]
            ops[~used[concurrent]] = -1
            latency[concurrent] = concurrent_latencies(self.cost, self.graph, ops)
            valid[concurrent] = True
        if self.strategy != "parallel":
            self._merge(stages, used, count, latency, valid, merged)
        return latency, valid, merged

    def _merge(self, stages, used, count, latency, valid, merged) -> None:
        cls = np.where(used, self.merge_class[np.maximum(stages, 0)], -2)
        lowest = np.where(used, cls, np.iinfo(np.int64).max).min(axis=1)
        same = (count >= 2) & (lowest >= 0) & ((cls == lowest[:, None]) | ~used).all(axis=1)
        for k in np.flatnonzero(same):
            ops = sorted(int(self.ops[g, 0]) for g in stages[k] if g >= 0)
            if merge_plan(self.graph, ops) is None:
                continue
            price = self.cost.merged_latency(self.graph, ops)
            if price is not None and (not valid[k] or price < latency[k]):
                latency[k], valid[k], merged[k] = float(price), True, True
