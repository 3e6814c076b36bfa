"""A reference implementation of IOS's own dynamic program, for the search-speed benchmark.

Written from the IOS thesis (Ding 2022, Algorithm 1 and Section 3.4) and the enumeration
IOS's implementation uses, not from its code:

- ``Scheduler(S)`` is a memoised recursion over states ``S`` (ops not yet scheduled):
  ``cost[S] = min over endings S' of cost[S - S'] + GenerateStage(S')``, ``cost[{}] = 0``;
- endings are enumerated as IOS does: the graph is split into chains by repeatedly taking a
  longest chain of its transitive closure; in a state each chain's ops form a prefix, and
  each chain contributes no op or one *head* among the last r ops of its prefix; every
  combination of heads (a mixed-radix count over the chains) whose groups, the heads'
  descendant closures within the state, are pairwise disjoint, at most s of them of at most
  r ops each, is an ending;
- ``GenerateStage(S')`` prices the groups run concurrently and, when the ops can merge, the
  merged operator, and keeps the cheaper; each priced stage is cached, as IOS caches its
  measurements.

Its groups are single-source closures, a subset of the groups ``tvm_ios`` searches (any
connected, convex set of at most r ops), so its optimum is never below ours. It is used by
``benchmarks/search_speed.py`` and its test only.
"""
from __future__ import annotations

import itertools
import sys

from tvm_ios.graph.analysis import descendants
from tvm_ios.graph.bitset import ids_of
from tvm_ios.graph.opgraph import OpGraph
from tvm_ios.schedule.merge import merge_plan

__all__ = ["IOSReferenceDP", "chain_decomposition"]


def chain_decomposition(graph: OpGraph) -> list[list[int]]:
    """Chains (ops in order) from repeatedly removing a longest chain of the closure."""
    desc = descendants(graph)
    left = set(range(len(graph)))
    chains = []
    while left:
        length, follow = {}, {}
        for u in sorted(left, reverse=True):
            best, nxt = 1, None
            for v in ids_of(desc[u]):
                if v in left and length[v] + 1 > best:
                    best, nxt = length[v] + 1, v
            length[u], follow[u] = best, nxt
        u = max(sorted(left), key=lambda x: length[x])
        chain = []
        while u is not None:
            chain.append(u)
            u = follow[u]
        chains.append(chain)
        left -= set(chain)
    return chains


class IOSReferenceDP:
    """Algorithm 1 of the IOS thesis over one graph.

    Parameters
    ----------
    graph : OpGraph
        The graph (one IOS block).
    cost_model : CostModel
        Prices stages (``stage_latency``, ``merged_latency``).
    max_group_size, max_num_groups : int
        The pruning r and s.
    strategy : {"both", "parallel"}
        IOS-Both (concurrent or merged, the cheaper) or IOS-Parallel.
    """

    def __init__(self, graph: OpGraph, cost_model, max_group_size: int = 3,
                 max_num_groups: int = 8, strategy: str = "both"):
        self.graph, self.cost = graph, cost_model
        self.r, self.s, self.strategy = max_group_size, max_num_groups, strategy
        self.chains = chain_decomposition(graph)
        self.desc = descendants(graph)
        self.memo: dict[int, float] = {0: 0.0}
        self.choice: dict[int, tuple[int, tuple[int, ...], str]] = {}
        self.priced: dict[int, tuple[float, str]] = {}
        self.transitions = 0

    def run(self) -> tuple[float, list[tuple[list[list[int]], str, float]]]:
        """The optimal latency and its stages ``(groups, strategy, latency)`` in order."""
        sys.setrecursionlimit(max(sys.getrecursionlimit(), 4 * len(self.graph) + 1000))
        best = self.scheduler(self.graph.all_mask)
        stages, state = [], self.graph.all_mask
        while state:
            ending, groups, how = self.choice[state]
            stages.append(([ids_of(g) for g in groups], how, self.priced[ending][0]))
            state &= ~ending
        return best, stages[::-1]

    def scheduler(self, state: int) -> float:
        """``cost[S]`` (Algorithm 1, lines 13-22)."""
        if state in self.memo:
            return self.memo[state]
        best = float("inf")
        for groups in self.endings(state):
            ending = 0
            for group in groups:
                ending |= group
            latency, how = self.generate_stage(ending, groups)
            value = self.scheduler(state & ~ending) + latency
            self.transitions += 1
            if value < best:
                best = value
                self.choice[state] = (ending, groups, how)
        self.memo[state] = best
        return best

    def endings(self, state: int):
        """The pruned endings of ``state`` as tuples of groups (bitsets), IOS's way."""
        options = []
        for chain in self.chains:
            end = 0
            while end < len(chain) and state >> chain[end] & 1:
                end += 1
            options.append([None] + chain[max(0, end - self.r):end])
        closure = {}
        for heads in itertools.product(*options):
            chosen = [h for h in heads if h is not None]
            if not chosen or len(chosen) > self.s:
                continue
            groups = []
            for h in chosen:
                if h not in closure:
                    closure[h] = (1 << h) | (self.desc[h] & state)
                groups.append(closure[h])
            if any(groups[i] & groups[j] for i in range(len(groups))
                   for j in range(i + 1, len(groups))):
                continue
            if any(g.bit_count() > self.r for g in groups):
                continue
            yield tuple(groups)

    def generate_stage(self, ending: int, groups: tuple[int, ...]) -> tuple[float, str]:
        """``GenerateStage(S')`` (Algorithm 1, lines 23-33), cached per stage."""
        if ending in self.priced:
            return self.priced[ending]
        best = (float(self.cost.stage_latency(self.graph, [ids_of(g) for g in groups])),
                "concurrent")
        if self.strategy != "parallel" and len(groups) > 1:
            ops = ids_of(ending)
            if merge_plan(self.graph, ops) is not None:
                merged = self.cost.merged_latency(self.graph, ops)
                if merged is not None and merged < best[0]:
                    best = (float(merged), "merge")
        self.priced[ending] = best
        return best
