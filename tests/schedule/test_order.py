"""IOS within an order (GraphTurbo's instances): schedules never go down in rank, are valid
for the graph itself, and are the best of those that keep to the order."""
import random

import pytest

from brute_force import AdditiveCost, brute_force, conv, random_case
from tvm_ios.graph.opgraph import OpGraph
from tvm_ios.schedule.ios import ios_schedule
from tvm_ios.schedule.order import check_order, follows_order, ordered_graph
from tvm_ios.schedule.validate import validate_schedule


def _two_instances():
    """Two instances of a fork (x -> y, z), one after the other and independent."""
    nodes = [conv(f"i{k}_{op}", "x", 3) for k in range(2) for op in "xyz"]
    return OpGraph(nodes, [(0, 1), (0, 2), (3, 4), (3, 5)]), [0, 0, 0, 1, 1, 1]


def _ranks(n: int, rng) -> list[int]:
    """Random ranks that never decrease along ``n`` ops."""
    ranks, rank = [], 0
    for _ in range(n):
        rank += rng.random() < 0.4
        ranks.append(rank)
    return ranks


def test_instances_run_in_order_and_their_branches_side_by_side():
    graph, order = _two_instances()
    cost = AdditiveCost(random.Random(3), len(graph), capacity=4.0, sync=1.0)
    free = ios_schedule(graph, cost)
    assert not follows_order(graph, free, order)  # both instances' forks start together
    kept = ios_schedule(graph, cost, order=order)
    validate_schedule(graph, kept)  # recorded for the graph, not the search's edges
    assert kept.graph["fingerprint"] == graph.fingerprint()
    assert follows_order(graph, kept, order) and kept.params["ordered"] == 2
    assert any(len(stage.groups) == 2 for stage in kept.stages)  # y and z of one instance
    assert kept.latency_us >= free.latency_us


@pytest.mark.parametrize("strategy", ["parallel", "both"])
@pytest.mark.parametrize("seed", range(15))
def test_the_best_schedule_that_keeps_the_order(seed, strategy):
    graph, cost, rng = random_case(seed)
    order = _ranks(len(graph), rng)
    sched = ios_schedule(graph, cost, order=order, strategy=strategy)
    validate_schedule(graph, sched)
    assert follows_order(graph, sched, order)
    best, *_ = brute_force(ordered_graph(graph, order), cost, 3, 8, strategy)
    assert sched.latency_us == pytest.approx(best, rel=1e-12)


def test_orders_that_do_not_fit_are_refused():
    graph, order = _two_instances()
    with pytest.raises(ValueError, match="5 ranks for the 6 ops"):
        check_order(graph, order[:5])
    with pytest.raises(ValueError, match="must not decrease"):
        ios_schedule(graph, AdditiveCost(random.Random(0), 6), order=[1, 1, 1, 0, 0, 0])
