"""GenerateStage of Algorithm 1: the latency and strategy of stages, many at once.

A stage is an array of groups of op ids. Under IOS-Both it runs
as concurrent groups or, when its ops are convolutions that merge into one, as the merged
operator, whichever the cost model prices lower; IOS-Parallel never merges; under
IOS-Merge a stage of several groups must merge, or it is not a stage at all.
"""
from __future__ import annotations

import numpy as np

from ..graph.opgraph import OpGraph
from .cost_protocol import CostModel, concurrent_latencies
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
        Node id in ``graph`` of each op of the region (local op ``i`` is ``ids[i]``).
    cost_model : CostModel
        The cost model.
    strategy : {"both", "parallel", "merge"}
        The parallelization strategies allowed.
    """

    def __init__(self, graph: OpGraph, ids, cost_model: CostModel, strategy: str):
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
        self.graph, self.cost, self.strategy = graph, cost_model, strategy
        self.ids = np.asarray(list(ids), dtype=np.int64)
        keys: dict[tuple, int] = {}
        self.merge_class = np.full(len(self.ids), -1, dtype=np.int64)
        for local, node in enumerate(self.ids.tolist()):
            key = merge_key(graph.nodes[node])
            if key is not None:
                self.merge_class[local] = keys.setdefault(key, len(keys))

    def price(self, stages: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(latency, valid, merged)`` of stages given as ``(n, groups, ops)`` local op ids
        (-1 padded, groups by their lowest op)."""
        used = stages >= 0
        ops = np.where(used, self.ids[np.maximum(stages, 0)], -1)
        count = used[:, :, 0].sum(axis=1)
        latency = np.full(len(stages), np.inf)
        valid = np.zeros(len(stages), dtype=bool)
        merged = np.zeros(len(stages), dtype=bool)
        concurrent = (count == 1) if self.strategy == "merge" else np.ones(len(stages), bool)
        if concurrent.any():
            latency[concurrent] = concurrent_latencies(self.cost, self.graph, ops[concurrent])
            valid[concurrent] = True
        if self.strategy != "parallel":
            self._merge(stages, used, count, ops, latency, valid, merged)
        return latency, valid, merged

    def _merge(self, stages, used, count, ops, latency, valid, merged) -> None:
        cls = np.where(used, self.merge_class[np.maximum(stages, 0)], -2).reshape(len(stages), -1)
        flat = used.reshape(len(stages), -1)
        lowest = np.where(flat, cls, np.iinfo(np.int64).max).min(axis=1)
        same = (count >= 2) & (lowest >= 0) & ((cls == lowest[:, None]) | ~flat).all(axis=1)
        for k in np.flatnonzero(same):
            members = sorted(int(i) for i in ops[k].ravel() if i >= 0)
            if merge_plan(self.graph, members) is None:
                continue
            price = self.cost.merged_latency(self.graph, members)
            if price is not None and (not valid[k] or price < latency[k]):
                latency[k], valid[k], merged[k] = float(price), True, True
