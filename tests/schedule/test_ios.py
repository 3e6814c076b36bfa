"""IOS exactness: the default call equals an exhaustive search over every stage sequence.

The brute force (``brute_force.py``) enumerates every stage sequence from the definitions;
latency, schedule, transition and state counts must all match. Run against the scheduler
before issue 13 (cuts at single-node cut points, per-block counts), the first test fails on
12 of its 40 graphs (worst 70% above the optimum) and the counts on 16.
"""
import random

import pytest

from brute_force import AdditiveCost, RandomCost, brute_force, conv, random_case, random_graph
from tvm_ios.graph.opgraph import OpGraph
from tvm_ios.schedule.ios import ios_schedule


def _assert_exact(sched, graph, cost, r, s, strategy):
    best, count, transitions, states = brute_force(graph, cost, r, s, strategy)
    assert sched.latency_us == pytest.approx(best, rel=1e-12)
    assert sched.stats["schedules"] == count
    assert sched.stats["transitions"] == transitions
    assert sched.stats["states"] == states
    assert sched.stats["exact"] is True


@pytest.mark.parametrize("seed", range(40))
def test_default_call_is_exact(seed):
    # The check: random DAGs of 3-9 ops, per-op times, a capacity, a sync cost.
    graph, cost, _ = random_case(seed)
    _assert_exact(ios_schedule(graph, cost), graph, cost, 3, 8, "both")


@pytest.mark.parametrize("strategy", ["parallel", "merge", "both"])
@pytest.mark.parametrize("seed", range(20))
def test_every_strategy_r_s_and_unschedulable_units(seed, strategy):
    rng = random.Random(100 + seed)
    n = rng.randint(2, 9)
    graph = random_graph(rng, n, rng.uniform(0.1, 0.7), unschedulable=0.2 if seed % 2 else 0)
    r, s = rng.randint(1, 4), rng.randint(1, 4)
    cost = AdditiveCost(rng, n) if seed % 3 else RandomCost(seed)
    sched = ios_schedule(graph, cost, max_group_size=r, max_num_groups=s, strategy=strategy)
    _assert_exact(sched, graph, cost, r, s, strategy)


def _chain_of_diamonds(fixed_cut_points):
    """Two diamonds joined at op3; op0, op3 and op6 are single-node cut points."""
    nodes = [conv(f"op{i}", "x", 3, schedulable=i not in fixed_cut_points) for i in range(7)]
    edges = [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (3, 5), (4, 6), (5, 6)]
    return OpGraph(nodes, edges)


def test_unschedulable_cut_point_is_a_lossless_cut():
    graph, cost = _chain_of_diamonds({3}), AdditiveCost(random.Random(1), 7, sync=4.0)
    sched = ios_schedule(graph, cost)
    assert sched.stats["blocks"] == 3  # before op3, op3 alone, after it
    _assert_exact(sched, graph, cost, 3, 8, "both")


def test_cut_points_of_schedulable_ops_are_searched_across():
    # r=3: a stage may hold op2 -> op3 -> op4 as one group, so no cut at op3.
    graph, cost = _chain_of_diamonds(set()), AdditiveCost(random.Random(2), 7, sync=4.0)
    sched = ios_schedule(graph, cost)
    assert sched.stats["blocks"] == 1
    _assert_exact(sched, graph, cost, 3, 8, "both")
    # With groups of one op the cut points are lossless again.
    single = ios_schedule(graph, cost, max_group_size=1)
    assert single.stats["blocks"] > 1
    _assert_exact(single, graph, cost, 1, 8, "both")


def test_bound_cut_is_reported_and_never_better_than_exact():
    rng = random.Random(5)
    graph = random_graph(rng, 9, 0.3)
    cost = AdditiveCost(rng, 9, capacity=2.0, sync=4.0)
    best = brute_force(graph, cost, 3, 8, "both")[0]
    cut = ios_schedule(graph, cost, max_block_bound=10.0)
    assert cut.stats["exact"] is False and cut.stats["bound_cuts"]
    report = cut.stats["bound_cuts"][0]
    assert report["bound"] > 10.0 and sum(report["pieces"]) == report["ops"]
    assert cut.latency_us >= best - 1e-9
    assert 0.0 <= report["loss_lower_bound_us"] <= cut.latency_us - best + 1e-9


def test_partition_false_searches_the_whole_graph_as_one():
    graph, cost = _chain_of_diamonds({3}), RandomCost(4)
    whole = ios_schedule(graph, cost, partition=False)
    assert whole.stats["blocks"] == 1
    _assert_exact(whole, graph, cost, 3, 8, "both")


def test_merge_strategy_picks_cheaper_merge():
    graph = OpGraph([conv(f"c{i}", "x", k) for i, k in enumerate((1, 3, 5))], [])

    class Cost:
        def stage_latency(self, graph, groups):
            return 10.0 * len(groups)

        def merged_latency(self, graph, ops):
            return 4.0

    sched = ios_schedule(graph, Cost(), strategy="both")
    assert [s.strategy for s in sched.stages] == ["merge"]
    assert sched.latency_us == 4.0
    par = ios_schedule(graph, Cost(), strategy="parallel")
    assert all(s.strategy == "concurrent" for s in par.stages) and par.latency_us == 30.0


@pytest.mark.parametrize("r,s", [(0, 8), (3, 0), (-1, 2)])
def test_r_s_below_one_rejected(r, s):
    graph = OpGraph.from_edges(2, [(0, 1)])
    with pytest.raises(ValueError, match="must be >= 1"):
        ios_schedule(graph, RandomCost(0), max_group_size=r, max_num_groups=s)


def test_unknown_strategy_rejected():
    with pytest.raises(ValueError, match="strategy"):
        ios_schedule(OpGraph.from_edges(1, []), RandomCost(0), strategy="fast")


def test_unschedulable_node_runs_alone():
    graph = OpGraph.from_edges(4, [(0, 1), (0, 2), (1, 3), (2, 3)])
    graph.nodes[1].schedulable = False
    sched = ios_schedule(graph, RandomCost(3))
    assert [stage.ops for stage in sched.stages if "op1" in stage.ops] == [["op1"]]


def test_identical_regions_are_reused_on_request():
    graph = _chain_of_diamonds({3})
    cost = RandomCost(9)
    reused = ios_schedule(graph, cost, max_group_size=1, reuse_blocks=True)
    assert reused.stats["blocks_reused"] >= 1
    assert ios_schedule(graph, cost, max_group_size=1).stats["blocks_reused"] == 0
