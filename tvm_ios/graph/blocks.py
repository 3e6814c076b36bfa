"""Partition an :class:`OpGraph` into blocks that the scheduler handles one at a time.

IOS schedules a network block by block. A *cut set* is a set of nodes closed under
ancestors (everything it needs is inside it): running it entirely before the rest is always
a valid order. We cut, in this order of preference:

1. at single-node cut points, as IOS does: a node (a unit, or a junction where free ops such
   as a concat join branches) that every other node reaches or is reached from. Cutting
   there loses only stages that straddle that node;
2. inside blocks still larger than ``max_block_size`` ops, or whose search space bound
   C(n/d + 2, 2)^d exceeds ``max_block_bound`` (NASNet's cells read the outputs of the two
   previous cells, so no single node separates them), at the ancestor closure of
   junctions, then of units, choosing the cuts greedily so each piece stays under the
   limits. This is what IOS's hand-written per-cell blocks amount to. Cutting restricts
   the schedule space (no stage straddles a cut); raise the limits to search more.
"""
from __future__ import annotations

import logging

from .analysis import ancestors, descendants, transition_bound, width
from .bitset import ids_of
from .opgraph import OpGraph

__all__ = ["partition_blocks", "DEFAULT_MAX_BLOCK_SIZE", "DEFAULT_MAX_BLOCK_BOUND"]

logger = logging.getLogger(__name__)

#: RandWire's stages (32 nodes plus an input and an output node) fit whole, as in IOS.
DEFAULT_MAX_BLOCK_SIZE = 36
#: Blocks whose transition bound exceeds this are halved. IOS's largest (RandWire, n=33, d=8)
#: has 3.7e9; a bound of 2.6e9 costs about 1.2e6 pruned transitions (r=3, s=8).
DEFAULT_MAX_BLOCK_BOUND = 3e9


def partition_blocks(graph: OpGraph, max_block_size: int = DEFAULT_MAX_BLOCK_SIZE,
                     max_block_bound: float = DEFAULT_MAX_BLOCK_BOUND) -> list[int]:
    """Split ``graph`` into blocks.

    Parameters
    ----------
    graph : OpGraph
        The graph.
    max_block_size : int
        Blocks larger than this are cut further at narrow (ancestor-closed) points.
    max_block_bound : float
        Blocks whose transition bound C(n/d + 2, 2)^d exceeds this are cut in halves
        until it holds (or the block cannot be cut).

    Returns
    -------
    list of int
        Bitsets of nodes; their union is the whole graph, they are disjoint, and running
        them in list order respects every dependency.
    """
    if max_block_size < 1:
        raise ValueError(f"max_block_size must be >= 1, got {max_block_size}")
    if len(graph) == 0:
        return []
    anc = ancestors(graph)
    closures = [anc[i] | (1 << i) for i in range(len(graph))]
    cuts = _single_node_cuts(graph, anc, closures)
    blocks = _split(graph.all_mask, cuts)
    candidates = sorted(set(graph.junctions) | set(closures), key=_rank_candidate(graph))
    out = []
    pending = list(blocks)
    while pending:
        block = pending.pop(0)
        n = block.bit_count()
        if n > max_block_size:
            pieces = _split_large(block, candidates, max_block_size)
        elif n > 1 and transition_bound(n, width(graph, block)) > max_block_bound:
            pieces = _split_large(block, candidates, (n + 1) // 2)
        else:
            pieces = [block]
        if len(pieces) == 1:
            out.append(block)
        else:
            pending[:0] = pieces
    logger.debug("%s: %d blocks, largest %d ops", graph.name, len(out),
                 max(b.bit_count() for b in out))
    return out


def _single_node_cuts(graph: OpGraph, anc: list[int], closures: list[int]) -> list[int]:
    """Cut sets at nodes comparable with every other node (units and junctions)."""
    full = graph.all_mask
    desc = descendants(graph)
    cuts = [closures[i] for i in range(len(graph)) if (anc[i] | desc[i] | (1 << i)) == full]
    for junction in graph.junctions:
        # A junction's units are its ancestors; it is a cut point when all other units
        # descend from the junction, i.e. from every sink of its ancestor set.
        sinks = [i for i in ids_of(junction) if not graph.succ[i] & junction]
        after = full
        for sink in sinks:
            after &= desc[sink]
        if (junction | after) == full:
            cuts.append(junction)
    return sorted(set(cuts), key=int.bit_count)


def _split(mask: int, nested_cuts: list[int]) -> list[int]:
    """Blocks between consecutive nested cut sets, restricted to ``mask``."""
    blocks, done = [], 0
    for cut in nested_cuts:
        block = cut & mask & ~done
        if block:
            blocks.append(block)
            done |= block
    if mask & ~done:
        blocks.append(mask & ~done)
    return blocks


def _rank_candidate(graph: OpGraph):
    junctions = set(graph.junctions)
    return lambda cut: (cut not in junctions, cut.bit_count())


def _split_large(block: int, candidates: list[int], limit: int) -> list[int]:
    """Greedy cuts inside an oversized block, keeping each piece at most ``limit`` nodes.

    From the part already cut off, take the candidate that adds the largest piece within
    the limit; when every candidate overshoots, the one that adds the smallest piece.
    """
    done, pieces = 0, []
    while block & ~done:
        best_key, best = None, block
        for cand in candidates:
            gain = (cand & block & ~done).bit_count()
            if gain == 0:
                continue
            key = (gain, 0) if gain <= limit else (-gain, -1)
            key = (key[1], key[0])
            if best_key is None or key > best_key:
                best_key, best = key, (done | cand) & block
        if (block & ~done).bit_count() <= limit:
            best = block
        pieces.append(best & ~done)
        done = best
    return pieces
