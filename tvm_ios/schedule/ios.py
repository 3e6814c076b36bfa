"""IOS: the dynamic program over endings that finds the best stage schedule (Algorithm 1).

For a state S (ops not yet scheduled, a bitset), ``cost[S] = min over endings S' of S of
cost[S - S'] + stage(S')``, with ``cost[{}] = 0``; ``stage(S')`` is the better of running
the weak components of S' concurrently and merging all of S' into one operator. The DP runs
per block (:mod:`tvm_ios.graph.blocks`); blocks with the same structure are solved once.
"""
from __future__ import annotations

import json
import logging
import sys
import time
from typing import Callable, Sequence

from ..cost.base import check_cost_model
from ..graph.analysis import components
from ..graph.bitset import ids_of
from ..graph.blocks import DEFAULT_MAX_BLOCK_BOUND, DEFAULT_MAX_BLOCK_SIZE, partition_blocks
from ..graph.opgraph import OpGraph
from .endings import EndingEnumerator
from .merge import merge_plan
from .schedule import Schedule, Stage

__all__ = ["ios_schedule", "STRATEGIES"]

logger = logging.getLogger(__name__)

STRATEGIES = ("both", "parallel", "merge")
Progress = Callable[[int, int, int], None]


class StageChooser:
    """GenerateStage of Algorithm 1: price an ending under the chosen strategy (cached)."""

    def __init__(self, graph: OpGraph, cost_model, strategy: str):
        self.graph, self.cost, self.strategy = graph, cost_model, strategy
        self.cache: dict[int, tuple[float, str] | None] = {}

    def __call__(self, ending: int, comps: tuple[int, ...]) -> tuple[float, str] | None:
        if ending in self.cache:
            return self.cache[ending]
        best: tuple[float, str] | None = None
        if self.strategy != "merge" or len(comps) == 1:
            groups = [ids_of(c) for c in sorted(comps)]
            best = (float(self.cost.stage_latency(self.graph, groups)), "concurrent")
        if self.strategy != "parallel" and len(comps) > 1:
            ops = ids_of(ending)
            if merge_plan(self.graph, ops) is not None:
                merged = self.cost.merged_latency(self.graph, ops)
                if merged is not None and (best is None or merged < best[0]):
                    best = (float(merged), "merge")
        self.cache[ending] = best
        return best


class BlockDP:
    """The memoised DP over the states of one block.

    Priced endings (ending, latency) are cached per top region of a state (see
    :mod:`tvm_ios.schedule.endings`): states that share it share the list, so the
    enumeration and the cost model run once per region, not once per state.
    """

    def __init__(self, enumerator: EndingEnumerator, chooser: StageChooser):
        self.enum, self.choose = enumerator, chooser
        self.memo: dict[int, tuple[float, int]] = {0: (0.0, 0)}
        self.counts: dict[int, int] = {0: 1}
        self.priced: dict[int, list[tuple[int, float]]] = {}
        self.transitions = 0

    def _priced(self, state: int) -> list[tuple[int, float]]:
        region = self.enum.top_region(state)
        found = self.priced.get(region)
        if found is None:
            found = []
            for ending, comps in self.enum.endings(region):
                stage = self.choose(ending, comps)
                if stage is not None:
                    found.append((ending, stage[0]))
            self.priced[region] = found
        return found

    def solve(self, state: int) -> float:
        """Return the optimal latency of ``state`` (memoised)."""
        memo = self.memo
        if state in memo:
            return memo[state][0]
        best, best_ending, count = float("inf"), 0, 0
        counts = self.counts
        options = self._priced(state)
        for ending, latency in options:
            rest = state & ~ending
            sub = memo[rest][0] if rest in memo else self.solve(rest)
            count += counts[rest]
            if sub + latency < best:
                best, best_ending = sub + latency, ending
        if not best_ending:
            raise RuntimeError("IOS found no valid ending; the strategy excludes every stage")
        self.transitions += len(options)
        memo[state] = (best, best_ending)
        counts[state] = count
        return best

    def stages(self, state: int) -> list[tuple[int, tuple, str, float]]:
        """Reconstruct the optimal stages of ``state`` in execution order."""
        out = []
        while state:
            ending = self.memo[state][1]
            comps = tuple(components(self.enum.graph, ending))
            latency, strategy = self.choose(ending, comps)
            out.append((ending, comps, strategy, latency))
            state &= ~ending
        return out[::-1]


def ios_schedule(graph: OpGraph, cost_model, *, max_group_size: int = 3,
                 max_num_groups: int = 8, strategy: str = "both",
                 max_block_size: int = DEFAULT_MAX_BLOCK_SIZE,
                 max_block_bound: float = DEFAULT_MAX_BLOCK_BOUND, partition: bool = True,
                 reuse_blocks: bool = True, progress: Progress | None = None) -> Schedule:
    """Find the optimal stage schedule of ``graph`` under ``cost_model`` (IOS, Algorithm 1).

    Parameters
    ----------
    graph : OpGraph
        The graph to schedule.
    cost_model : CostModel
        Any object with ``stage_latency`` and ``merged_latency`` (see :mod:`tvm_ios.cost.base`).
    max_group_size : int
        r, the pruning bound on ops per group (>= 1).
    max_num_groups : int
        s, the pruning bound on groups per stage (>= 1).
    strategy : {"both", "parallel", "merge"}
        Parallelization strategies considered: IOS-Both, IOS-Parallel (concurrent only) or
        IOS-Merge (a stage is one group or one merged operator).
    max_block_size : int
        Blocks larger than this are cut further (see :func:`partition_blocks`).
    max_block_bound : float
        Blocks whose transition bound C(n/d + 2, 2)^d exceeds this are cut further.
    partition : bool
        Schedule block by block (as IOS does). False runs one DP over the whole graph,
        which is exact over every stage sequence but exponential in the graph's width.
    reuse_blocks : bool
        Solve blocks with identical ops, shapes and wiring once. Exact when the cost model
        depends on the ops' properties, not on their names or ids (true of every cost
        model of tvm-ios).
    progress : callable, optional
        Called as ``progress(blocks_done, blocks_total, states_so_far)``.

    Returns
    -------
    Schedule
        The stages, their latencies and the search statistics.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    cost_model = check_cost_model(cost_model)
    enumerator = EndingEnumerator(graph, max_group_size, max_num_groups)
    chooser = StageChooser(graph, cost_model, strategy)
    start = time.perf_counter()
    blocks = (partition_blocks(graph, max_block_size, max_block_bound) if partition
              else [graph.all_mask])
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4 * len(graph) + 1000))
    solved: dict[str, tuple[list[int], list, dict]] = {}
    stages: list[Stage] = []
    stats = {"blocks": len(blocks), "blocks_reused": 0, "states": 0, "transitions": 0,
             "schedules": 1}
    for index, block in enumerate(blocks):
        key = block_signature(graph, block) if reuse_blocks else str(block)
        if key in solved:
            ids, local_stages, block_stats = solved[key]
            stats["blocks_reused"] += 1
            mapping = dict(zip(ids, ids_of(block)))
            block_stages = [(_remap(e, mapping), tuple(_remap(c, mapping) for c in comps), s, lat)
                            for e, comps, s, lat in local_stages]
        else:
            dp = BlockDP(enumerator, chooser)
            dp.solve(block)
            block_stages = dp.stages(block)
            block_stats = {"states": len(dp.memo) - 1, "transitions": dp.transitions,
                           "schedules": dp.counts[block]}
            solved[key] = (ids_of(block), block_stages, block_stats)
        stats["states"] += block_stats["states"]
        stats["transitions"] += block_stats["transitions"]
        stats["schedules"] *= block_stats["schedules"]
        stages.extend(_to_stage(graph, e, comps, s, lat) for e, comps, s, lat in block_stages)
        if progress is not None:
            progress(index + 1, len(blocks), stats["states"])
    stats["seconds"] = round(time.perf_counter() - start, 4)
    params = {"scheduler": f"ios-{strategy}", "max_group_size": max_group_size,
              "max_num_groups": max_num_groups, "strategy": strategy, "partition": partition,
              "cost_model": repr(cost_model)}
    logger.info("IOS scheduled %s: %d stages, %d states, %.2fs", graph.name, len(stages),
                stats["states"], stats["seconds"])
    return Schedule(stages, graph=graph_info(graph), params=params, stats=stats)


def graph_info(graph: OpGraph) -> dict:
    """The ``graph`` field of a schedule made for ``graph``."""
    return {"name": graph.name, "num_ops": len(graph), "fingerprint": graph.fingerprint()}


def block_signature(graph: OpGraph, block: int) -> str:
    """A key equal for blocks with the same ops, shapes and wiring (names aside)."""
    ids = ids_of(block)
    pos = {g: i for i, g in enumerate(ids)}
    inputs: dict[str, int] = {}
    rows = []
    for g in ids:
        node = graph.nodes[g]
        attrs = dict(node.attrs)
        if "input" in attrs:
            attrs["input"] = inputs.setdefault(str(attrs["input"]), len(inputs))
        rows.append([node.kind, list(node.shape), node.dtype, node.flops, node.bytes,
                     node.schedulable, sorted((k, str(v)) for k, v in attrs.items())])
    edges = [[pos[u], pos[v]] for u, v in graph.edges if u in pos and v in pos]
    return json.dumps([rows, edges])


def _remap(mask: int, mapping: dict[int, int]) -> int:
    out = 0
    for i in ids_of(mask):
        out |= 1 << mapping[i]
    return out


def _to_stage(graph: OpGraph, ending: int, comps: Sequence[int], strategy: str,
              latency: float) -> Stage:
    groups = [graph.names_of(c) for c in sorted(comps, key=lambda c: c & -c)]
    return Stage(groups, strategy, latency)
