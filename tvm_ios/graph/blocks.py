"""Blocks of an :class:`OpGraph`: where a schedule search may be cut, and where it must be.

A *cut set* is a set of nodes closed under ancestors: running it entirely before the rest
is always a valid order. A search cut there loses the stages that hold ops on both sides.

*Segments* are the pieces between single-node cut points: a node (a unit, or a junction
where free ops such as a concat join branches) that every other node reaches or is reached
from. IOS schedules block by block at such points; a search across them costs about the sum
of the segments' searches (their states add), so :func:`search_regions` does not cut there
unless the cut is lossless: every op on one side is then an ancestor of every op on the
other, so a stage across it is one group holding an edge that crosses; with groups of one
op (``max_group_size == 1``), or when an unschedulable op (a stage of its own) ends every
crossing edge, no stage can cross.

A segment whose search would not finish, one of more than ``max_block_size`` ops or whose
transition bound C(n/d + 2, 2)^d (IOS thesis, Table 3.1) exceeds ``max_block_bound``, is cut
at the ancestor closure of junctions, else of units, greedily so each piece stays under the
limits: of the pieces that fit and are at least half the largest that fits, the one fewest
later ops read from. NASNet's cells read the outputs of the two previous cells, so no single
node separates them; its pieces come out as its cells, IOS's hand-written blocks. These
*bound cuts* can lose; :func:`search_regions` reports them.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

from .analysis import ancestors, descendants, transition_bound, width
from .bitset import ids_of
from .opgraph import OpGraph

__all__ = ["partition_blocks", "search_regions", "SearchRegions", "DEFAULT_MAX_BLOCK_SIZE",
           "DEFAULT_MAX_BLOCK_BOUND"]

logger = logging.getLogger(__name__)

#: Segments with more ops than this are cut (RandWire's 32-node stages fit whole).
DEFAULT_MAX_BLOCK_SIZE = 40
#: Segments whose transition bound exceeds this are cut. IOS's largest block (RandWire,
#: n=33, d=8) has 3.7e9; a randomly wired stage of 32 ops and width 10 has 2.4e10.
DEFAULT_MAX_BLOCK_BOUND = 3e10


@dataclass
class SearchRegions:
    """Where one schedule search runs: regions in order, and the bound cuts made.

    ``regions`` are disjoint bitsets covering the graph; running them in order respects
    every dependency. ``bound_cuts`` has one entry per segment cut by the limits: the
    segment's index, ops, width, transition bound, and the pieces it was cut into.
    ``cut_after`` maps ``j`` to the entry of the bound cut between regions ``j`` and
    ``j + 1``.
    """

    regions: list[int]
    bound_cuts: list[dict] = field(default_factory=list)
    cut_after: dict[int, int] = field(default_factory=dict)


def partition_blocks(graph: OpGraph, max_block_size: int = DEFAULT_MAX_BLOCK_SIZE,
                     max_block_bound: float = DEFAULT_MAX_BLOCK_BOUND) -> list[int]:
    """IOS's blocks: segments at single-node cut points, bound-cut where over the limits.

    Parameters
    ----------
    graph : OpGraph
        The graph.
    max_block_size : int
        Segments larger than this are cut further at narrow (ancestor-closed) points.
    max_block_bound : float
        Segments whose transition bound C(n/d + 2, 2)^d exceeds this are cut in halves
        until it holds (or the segment cannot be cut).

    Returns
    -------
    list of int
        Bitsets of nodes; their union is the whole graph, they are disjoint, and running
        them in list order respects every dependency.
    """
    return [piece for _, pieces in _cut_segments(graph, max_block_size, max_block_bound)
            for piece in pieces]


def search_regions(graph: OpGraph, max_group_size: int,
                   max_block_size: int = DEFAULT_MAX_BLOCK_SIZE,
                   max_block_bound: float = DEFAULT_MAX_BLOCK_BOUND) -> SearchRegions:
    """The regions of an exact search: cut only where lossless or over the limits.

    Parameters
    ----------
    graph : OpGraph
        The graph.
    max_group_size : int
        r; with groups of one op every single-node cut point is lossless.
    max_block_size, max_block_bound
        As for :func:`partition_blocks`: a segment over either limit is cut.

    Returns
    -------
    SearchRegions
    """
    if len(graph) == 0:
        return SearchRegions([])
    fixed = sum(1 << i for i, node in enumerate(graph.nodes) if not node.schedulable)
    bound: dict[int, int] = {}  # a bound cut set -> its entry in bound_cuts
    bound_cuts = []
    done = 0
    for index, (segment, pieces) in enumerate(
            _cut_segments(graph, max_block_size, max_block_bound)):
        for piece in pieces[:-1]:
            done |= piece
            bound[done] = len(bound_cuts)
        done |= pieces[-1]
        if len(pieces) > 1:
            n = segment.bit_count()
            d = width(graph, segment)
            bound_cuts.append({"segment": index, "ops": n, "width": d,
                               "bound": transition_bound(n, d),
                               "first_op": graph.nodes[ids_of(segment)[0]].name,
                               "pieces": [p.bit_count() for p in pieces],
                               "max_block_size": max_block_size,
                               "max_block_bound": max_block_bound})
    cuts = {cut for cut in _point_cuts(graph, before=True)
            if _lossless(graph, cut, fixed, max_group_size)}
    regions = _split(graph.all_mask, sorted(cuts | set(bound), key=int.bit_count))
    cut_after, done = {}, 0
    for j, region in enumerate(regions[:-1]):
        done |= region
        if done in bound:
            cut_after[j] = bound[done]
    return SearchRegions(regions, bound_cuts, cut_after)


def _lossless(graph: OpGraph, cut: int, fixed: int, max_group_size: int) -> bool:
    """No stage can hold ops on both sides of a single-node cut (see the module doc)."""
    if max_group_size == 1:
        return True
    for i in ids_of(cut & ~fixed):
        if graph.succ[i] & ~cut & ~fixed:
            return False
    return True


def _cut_segments(graph: OpGraph, max_block_size: int, max_block_bound: float):
    """``(segment, pieces)`` in order; pieces is ``[segment]`` unless over the limits."""
    if max_block_size < 1:
        raise ValueError(f"max_block_size must be >= 1, got {max_block_size}")
    if len(graph) == 0:
        return []
    anc = ancestors(graph)
    closures = {anc[i] | (1 << i) for i in range(len(graph))}
    junctions = set(graph.junctions)
    # Junctions (the concats that end NASNet's cells, Inception's modules) first.
    candidates = [sorted(junctions, key=int.bit_count, reverse=True),
                  sorted(closures - junctions, key=int.bit_count, reverse=True)]

    def fits(piece: int) -> bool:
        n = piece.bit_count()
        return n <= max_block_size and (
            n == 1 or transition_bound(n, width(graph, piece)) <= max_block_bound)

    out = [(segment, _split_large(segment, candidates, fits, graph.succ))
           for segment in _split(graph.all_mask, _point_cuts(graph))]
    logger.debug("%s: %d segments, %d pieces", graph.name, len(out),
                 sum(len(p) for _, p in out))
    return out


def _point_cuts(graph: OpGraph, before: bool = False) -> list[int]:
    """Cut sets at nodes comparable with every other node (units and junctions), nested.

    A unit cut point gives the cut set after it, and also the one before it if ``before``.
    """
    anc = ancestors(graph)
    full = graph.all_mask
    desc = descendants(graph)
    cuts = []
    for i in range(len(graph)):
        if (anc[i] | desc[i] | (1 << i)) == full:
            cuts += [anc[i] | (1 << i)] + ([anc[i]] if before and anc[i] else [])
    for junction in graph.junctions:
        # A junction's units are its ancestors; it is a cut point when all other units
        # descend from the junction, i.e. from every sink of its ancestor set.
        sinks = [i for i in ids_of(junction) if not graph.succ[i] & junction]
        after = full
        for sink in sinks:
            after &= desc[sink]
        if (junction | after) == full:
            cuts.append(junction)
    return sorted(set(cuts) - {full}, key=int.bit_count)


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


def _split_large(block: int, candidates: list[list[int]], fits, succ: list[int]) -> list[int]:
    """Greedy cuts of a segment into pieces that ``fits``, in order.

    From the part already cut off, the largest piece that fits sets the scale; of the
    pieces that fit and are at least half as large, the next one is the one the fewest
    later ops read from (a cell's output, not the middle of its branches), then the
    largest. Candidate cut sets are junctions (the first list), else units. When nothing
    fits, the smallest piece any candidate gives.
    """
    done, pieces = 0, []
    while block & ~done:
        rest = block & ~done
        piece = rest if fits(rest) else _next_piece(rest, candidates, fits, succ)
        pieces.append(piece)
        done |= piece
    return pieces


def _next_piece(rest: int, candidates: list[list[int]], fits, succ: list[int]) -> int:
    for ordered in candidates:
        pieces = sorted({cand & rest for cand in ordered} - {0, rest}, key=int.bit_count,
                        reverse=True)
        largest = next((p for p in pieces if fits(p)), None)
        if largest is None:
            continue
        near = [p for p in pieces if 2 * p.bit_count() >= largest.bit_count()]
        near.sort(key=lambda p: (_readers(p, rest, succ), -p.bit_count()))
        return next(p for p in near if p == largest or fits(p))
    return min((cand & rest for group in candidates for cand in group
                if cand & rest and cand & rest != rest), key=int.bit_count, default=rest)


def _readers(piece: int, rest: int, succ: list[int]) -> int:
    """Ops of ``rest`` outside ``piece`` that read an op of ``piece``."""
    out = 0
    for i in ids_of(piece):
        out |= succ[i]
    return (out & rest & ~piece).bit_count()
