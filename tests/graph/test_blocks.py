"""Blocks: single-node cuts, junction cuts, size and bound limits; where a search is cut."""
from tvm_ios.graph.blocks import partition_blocks, search_regions
from tvm_ios.graph.opgraph import OpGraph


def _check_partition(graph, blocks):
    assert sum(b.bit_count() for b in blocks) == len(graph)
    union = 0
    for block in blocks:
        assert not union & block
        union |= block
        for i in range(len(graph)):  # every predecessor is in this or an earlier block
            if block >> i & 1:
                assert graph.pred[i] & ~union == 0
    assert union == graph.all_mask


def test_cut_at_single_nodes():
    graph = OpGraph.from_edges(7, [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (3, 5), (4, 6),
                                   (5, 6)])
    blocks = partition_blocks(graph)
    assert blocks == [0b1, 0b1110, 0b1110000]
    _check_partition(graph, blocks)


def test_junction_cuts_between_cells():
    # Two "cells" whose outputs are joined by a free concat (a junction): no unit is a cut
    # point, the junction is.
    graph = OpGraph.from_edges(4, [(0, 2), (1, 2), (0, 3), (1, 3)])
    graph = OpGraph(graph.nodes, graph.edges, junctions=[0b0011])
    assert partition_blocks(graph) == [0b0011, 0b1100]


def test_oversized_block_split_within_limit():
    # NASNet-like: cell k reads cells k-1 and k-2, no single-node cut.
    edges, n = [], 24
    for v in range(2, n):
        edges += [(v - 1, v), (v - 2, v)]
    graph = OpGraph.from_edges(n, edges)
    blocks = partition_blocks(graph, max_block_size=5)
    _check_partition(graph, blocks)
    assert all(b.bit_count() <= 5 for b in blocks)


def test_bound_limit_halves_wide_blocks():
    edges = [(0, i) for i in range(1, 13)] + [(i, 13) for i in range(1, 13)]
    graph = OpGraph.from_edges(14, edges)
    whole = partition_blocks(graph)
    assert max(b.bit_count() for b in whole) == 13
    cut = partition_blocks(graph, max_block_bound=1e3)
    _check_partition(graph, cut)
    assert max(b.bit_count() for b in cut) < 13


def _two_diamonds():
    return OpGraph.from_edges(7, [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (3, 5), (4, 6),
                                  (5, 6)])


def test_search_crosses_cut_points_of_schedulable_ops():
    plan = search_regions(_two_diamonds(), max_group_size=3)
    assert plan.regions == [0b1111111] and not plan.bound_cuts


def test_search_cuts_where_lossless():
    graph = _two_diamonds()
    # Groups of one op cannot hold an edge: every cut point is lossless, before and after.
    assert search_regions(graph, max_group_size=1).regions == \
        [0b1, 0b110, 0b1000, 0b110000, 0b1000000]
    # An unschedulable op is a stage of its own: cut before and after it.
    graph.nodes[3].schedulable = False
    plan = search_regions(graph, max_group_size=3)
    _check_partition(graph, plan.regions)
    assert plan.regions == [0b111, 0b1000, 0b1110000] and not plan.bound_cuts


def test_bound_cuts_are_reported_between_their_regions():
    # Two ops per step, each reading both of the previous step: no single-node cut point.
    edges = [(u, v) for k in range(1, 12) for u in (2 * k - 2, 2 * k - 1)
             for v in (2 * k, 2 * k + 1)]
    graph = OpGraph.from_edges(24, edges)
    assert search_regions(graph, max_group_size=3).regions == [graph.all_mask]
    plan = search_regions(graph, max_group_size=3, max_block_size=5)
    _check_partition(graph, plan.regions)
    assert len(plan.bound_cuts) == 1 and len(plan.regions) > 1
    report = plan.bound_cuts[0]
    assert report["ops"] == 24 and sum(report["pieces"]) == 24
    assert max(report["pieces"]) <= 5
    assert set(plan.cut_after.values()) == {0}
    assert len(plan.cut_after) == len(report["pieces"]) - 1
