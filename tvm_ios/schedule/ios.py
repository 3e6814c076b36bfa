"""IOS: the best stage schedule of a graph under a cost model (Algorithm 1 of the thesis).

``ios_schedule`` searches every stage sequence of the graph under the pruning r and s with
one exact dynamic program over its downsets (:mod:`tvm_ios.schedule.downsets`). It splits
the search only where that loses nothing, or where a segment is too large for the search to
finish (the bound, :mod:`tvm_ios.graph.blocks`); a bound cut is reported in the schedule's
stats with the segment, its bound and a lower bound on what the cut loses.
"""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from typing import Callable

from ..graph.bitset import ids_of
from ..graph.blocks import (DEFAULT_MAX_BLOCK_BOUND, DEFAULT_MAX_BLOCK_SIZE, SearchRegions,
                            search_regions)
from ..graph.opgraph import OpGraph
from .cost_protocol import check_cost_model
from .downsets import DownsetSearch
from .groups import candidate_groups
from .order import ordered_graph
from .pricing import STRATEGIES, StagePricer
from .schedule import Schedule, Stage

__all__ = ["ios_schedule", "search_region", "STRATEGIES"]

logger = logging.getLogger(__name__)

Progress = Callable[[int, int, int], None]
#: One stage of a search: (groups as lists of node ids, strategy, latency in us).
RawStage = tuple[list[list[int]], str, float]
#: Ops around a bound cut searched again to bound what the cut loses.
WINDOW_OPS = 16


def ios_schedule(graph: OpGraph, cost_model, *, max_group_size: int = 3,
                 max_num_groups: int = 8, strategy: str = "both",
                 max_block_size: int = DEFAULT_MAX_BLOCK_SIZE,
                 max_block_bound: float = DEFAULT_MAX_BLOCK_BOUND, partition: bool = True,
                 reuse_blocks: bool = False, progress: Progress | None = None,
                 order: Sequence[int] | None = None) -> Schedule:
    """Find the optimal stage schedule of ``graph`` under ``cost_model`` (IOS, Algorithm 1).

    The result is optimal over every stage sequence of the whole graph whose stages have
    at most ``max_num_groups`` groups of at most ``max_group_size`` ops, unless a segment
    exceeds ``max_block_size`` or ``max_block_bound``: then ``stats["exact"]`` is False and
    ``stats["bound_cuts"]`` says where the search was cut.

    Parameters
    ----------
    graph : OpGraph
        The graph to schedule.
    cost_model : CostModel
        Any object with ``stage_latency`` and ``merged_latency`` (see
        :mod:`tvm_ios.schedule.cost_protocol`).
    max_group_size : int
        r, the pruning bound on ops per group (>= 1).
    max_num_groups : int
        s, the pruning bound on groups per stage (>= 1).
    strategy : {"both", "parallel", "merge"}
        Parallelization strategies considered: IOS-Both, IOS-Parallel (concurrent only) or
        IOS-Merge (a stage is one group or one merged operator).
    max_block_size : int
        A segment (the ops between two single-node cut points) larger than this is cut.
    max_block_bound : float
        A segment whose transition bound C(n/d + 2, 2)^d exceeds this is cut.
    partition : bool
        True (default) cuts only where lossless or over the limits above. False searches
        the whole graph as one, whatever its size.
    reuse_blocks : bool
        Solve search regions with identical ops, shapes and wiring once. Exact only when
        the cost model prices ops by their properties, not by their names or ids (true of
        every cost model of tvm-ios, not of a table of per-op times), so off by default.
    progress : callable, optional
        Called as ``progress(regions_done, regions_total, states_so_far)``.
    order : sequence of int, optional
        A rank per node, never decreasing along the nodes (GraphTurbo's instance order):
        only schedules that never go down in rank are searched (:mod:`.order`), optimal
        among those; ``params["ordered"]`` is then the number of ranks.

    Returns
    -------
    Schedule
        The stages, their latencies and the search statistics: ``states``, ``transitions``
        and ``schedules`` of the search that ran (summed, resp. multiplied, over regions),
        ``blocks`` (regions searched), ``blocks_reused``, ``exact``, ``bound_cuts``.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    for name, value in (("max_group_size (r)", max_group_size),
                        ("max_num_groups (s)", max_num_groups)):
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    cost_model = check_cost_model(cost_model)
    start = time.perf_counter()
    searched = graph if order is None else ordered_graph(graph, order)
    plan = (search_regions(searched, max_group_size, max_block_size, max_block_bound)
            if partition else SearchRegions([graph.all_mask] if len(graph) else []))
    options = (max_group_size, max_num_groups, strategy, searched)
    per_region, stats = _search_regions(graph, plan.regions, cost_model, options,
                                        reuse_blocks, progress)
    stats["exact"] = not plan.bound_cuts
    stats["bound_cuts"] = _report_bound_cuts(graph, plan, per_region, cost_model, options)
    stats["seconds"] = round(time.perf_counter() - start, 4)
    stages = [Stage([graph.names_of(g) for g in groups], how, lat)
              for raw in per_region for groups, how, lat in raw]
    params = {"scheduler": f"ios-{strategy}", "max_group_size": max_group_size,
              "max_num_groups": max_num_groups, "strategy": strategy, "partition": partition,
              "cost_model": repr(cost_model)}
    if order is not None:
        params["ordered"] = len(set(order))
    logger.info("IOS scheduled %s: %d stages, %d states, %d transitions, %.2fs%s",
                graph.name, len(stages), stats["states"], stats["transitions"],
                stats["seconds"], "" if stats["exact"] else " (bound cuts)")
    return Schedule(stages, graph=graph_info(graph), params=params, stats=stats)


def _search_regions(graph: OpGraph, regions: list[int], cost_model, options: tuple,
                    reuse_blocks: bool, progress: Progress | None):
    """The optimal stages of every region, and the summed statistics."""
    solved: dict[str, tuple[list[int], list[RawStage], dict]] = {}
    per_region: list[list[RawStage]] = []
    stats = {"blocks": len(regions), "blocks_reused": 0, "states": 0, "transitions": 0,
             "schedules": 1}
    for index, region in enumerate(regions):
        key = block_signature(options[-1], region) if reuse_blocks else str(region)
        if key in solved:
            ids, raw, region_stats = solved[key]
            stats["blocks_reused"] += 1
            mapping = dict(zip(ids, ids_of(region)))
            raw = [([[mapping[i] for i in g] for g in groups], how, lat)
                   for groups, how, lat in raw]
        else:
            raw, region_stats = search_region(graph, region, cost_model, *options)
            solved[key] = (ids_of(region), raw, region_stats)
        for name in ("states", "transitions"):
            stats[name] += region_stats[name]
        stats["schedules"] *= region_stats["schedules"]
        per_region.append(raw)
        if progress is not None:
            progress(index + 1, len(regions), stats["states"])
    return per_region, stats


def _report_bound_cuts(graph: OpGraph, plan: SearchRegions, per_region, cost_model,
                       options: tuple) -> list[dict]:
    """The bound cuts, each with a certified lower bound on what it loses.

    Around a cut, the last stages before it and the first after it (at most
    ``WINDOW_OPS`` ops) are one schedule of their ops; searching those ops as one region
    finds the best, so the difference is a saving some schedule across the cut has over
    the one returned. Windows that share no stage add up.
    """
    reports = [dict(entry, loss_lower_bound_us=0.0) for entry in plan.bound_cuts]
    taken = set()
    for j, entry in sorted(plan.cut_after.items()):
        before, after = per_region[j], per_region[j + 1]
        k = 0
        while k < min(len(before), len(after)) and _ops(before[-k - 1:] + after[:k + 1]) \
                <= WINDOW_OPS:
            k += 1
        used = {(j, len(before) - 1 - i) for i in range(k)} | {(j + 1, i) for i in range(k)}
        if not k or used & taken:
            continue
        window = before[len(before) - k:] + after[:k]
        mask = sum(1 << i for groups, _, _ in window for g in groups for i in g)
        _, best = search_region(graph, mask, cost_model, *options)
        gain = sum(lat for _, _, lat in window) - best["latency_us"]
        if gain > 1e-9:
            reports[entry]["loss_lower_bound_us"] += gain
            taken |= used
    return reports


def _ops(stages: list[RawStage]) -> int:
    return sum(len(g) for groups, _, _ in stages for g in groups)


def search_region(graph: OpGraph, region: int, cost_model, max_group_size: int,
                  max_num_groups: int, strategy: str,
                  searched: OpGraph | None = None) -> tuple[list[RawStage], dict]:
    """The exact search over the downsets of one region of ``graph``.

    Returns the optimal stages as ``(groups, strategy, latency)`` (node ids of ``graph``)
    and the search's ``states``, ``transitions``, ``schedules`` and ``latency_us``. The
    downsets and groups are those of ``searched`` (default ``graph``): the graph with the
    edges of an order (:func:`~tvm_ios.schedule.order.ordered_graph`); stages are priced
    on ``graph``.
    """
    ids = ids_of(region)
    sub = (searched or graph).subgraph(region)
    unpruned = max_group_size >= len(sub) and max_num_groups >= len(sub)
    groups = None if unpruned else candidate_groups(sub, max_group_size)
    pricer = StagePricer(graph, ids, cost_model, strategy)
    result = DownsetSearch(sub, groups, pricer, max_num_groups).run()
    raw = [([[ids[i] for i in group] for group in chosen],
            "merge" if merged else "concurrent", latency)
           for chosen, merged, latency in result.stages]
    return raw, {"states": result.states, "transitions": result.transitions,
                 "schedules": result.schedules, "latency_us": result.latency}


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
