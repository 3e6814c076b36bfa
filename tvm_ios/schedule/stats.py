"""Size of the IOS search space per block, as in the thesis's Table 3.1.

For each of IOS's blocks (:func:`~tvm_ios.graph.blocks.partition_blocks`): the number of
ops n, the width d, the upper bound C(n/d + 2, 2)^d on transitions, the states and
transitions of the exact search over the block, and the number of stage schedules. Without
r and s the space is unpruned, as in Table 3.1.
"""
from __future__ import annotations

import time
from typing import Callable

from ..graph.analysis import transition_bound, width
from ..graph.blocks import DEFAULT_MAX_BLOCK_SIZE, partition_blocks
from ..graph.opgraph import OpGraph
from .ios import search_region

__all__ = ["block_stats", "STATS_MAX_BLOCK_BOUND"]

#: Blocks as small as IOS's (its largest, RandWire's, has a bound of 3.7e9): an unpruned
#: search of a larger one, such as NASNet's two stem cells together, takes minutes.
STATS_MAX_BLOCK_BOUND = 3e9


class _Free:
    """A cost model that prices every stage at zero: only the counts matter here."""

    def stage_latency(self, graph, groups):
        return 0.0

    def merged_latency(self, graph, ops):
        return None


def block_stats(graph: OpGraph, max_group_size: int | None = None,
                max_num_groups: int | None = None,
                max_block_size: int = DEFAULT_MAX_BLOCK_SIZE,
                max_block_bound: float = STATS_MAX_BLOCK_BOUND,
                progress: Callable[[int, int, int], None] | None = None) -> list[dict]:
    """Search-space statistics of every block of ``graph``.

    Parameters
    ----------
    graph : OpGraph
        The graph.
    max_group_size, max_num_groups : int, optional
        r and s; None means unpruned.
    max_block_size, max_block_bound
        As for :func:`~tvm_ios.graph.blocks.partition_blocks` (the bound defaults to
        :data:`STATS_MAX_BLOCK_BOUND`, ten times below the scheduler's).
    progress : callable, optional
        Called as ``progress(blocks_done, blocks_total, transitions_so_far)``.

    Returns
    -------
    list of dict
        Per block: ``block``, ``n``, ``width``, ``bound``, ``states``, ``transitions``,
        ``schedules``, ``seconds``, ``ops`` (names).
    """
    blocks = partition_blocks(graph, max_block_size, max_block_bound)
    rows, total = [], 0
    for index, block in enumerate(blocks):
        n = block.bit_count()
        start = time.perf_counter()
        _, counts = search_region(graph, block, _Free(), max_group_size or n,
                                  max_num_groups or n, "parallel")
        d = width(graph, block)
        total += counts["transitions"]
        rows.append({"block": index, "n": n, "width": d,
                     "bound": transition_bound(n, d),
                     "states": counts["states"], "transitions": counts["transitions"],
                     "schedules": counts["schedules"],
                     "seconds": round(time.perf_counter() - start, 4),
                     "ops": graph.names_of(block)})
        if progress is not None:
            progress(index + 1, len(blocks), total)
    return rows
