"""The downset search itself: graphs over 64 ops (hashed keys), collisions, no pruning."""
import random

import numpy as np
import pytest

from brute_force import AdditiveCost, RandomCost, brute_force, conv, random_graph
from tvm_ios.graph.opgraph import OpGraph
from tvm_ios.schedule.downsets import DownsetSearch
from tvm_ios.schedule.groups import candidate_groups
from tvm_ios.schedule.ios import ios_schedule
from tvm_ios.schedule.pricing import StagePricer


def _pieces_joined_by_unschedulable_ops(seed, pieces=9):
    """Random DAGs of 5-8 ops in a row, each joined to the next by an unschedulable op."""
    rng = random.Random(seed)
    nodes, edges = [], []
    for k in range(pieces):
        part = random_graph(rng, rng.randint(5, 8), 0.35)
        base = len(nodes)
        nodes += [conv(f"p{k}_{n.name}", n.attrs["input"], 3) for n in part.nodes]
        edges += [(base + u, base + v) for u, v in part.edges]
        if base:
            edges += [(base - 1, base + i) for i in range(len(part))]
        nodes.append(conv(f"join{k}", "x", 1, schedulable=False))
        edges += [(base + i, len(nodes) - 1) for i in range(len(part))]
    return OpGraph(nodes, edges, name=f"pieces{seed}")


@pytest.mark.parametrize("seed", range(3))
def test_hashed_keys_over_64_ops_agree_with_the_cut_search(seed):
    graph = _pieces_joined_by_unschedulable_ops(seed)
    assert len(graph) > 64
    cost = AdditiveCost(random.Random(seed), len(graph), capacity=2.0, sync=4.0)
    cut = ios_schedule(graph, cost)  # lossless cuts at the joins: small exact-key searches
    whole = ios_schedule(graph, cost, partition=False)  # one search, 64-bit hashed keys
    assert cut.stats["blocks"] > 1 and whole.stats["blocks"] == 1
    assert whole.latency_us == pytest.approx(cut.latency_us, rel=1e-12)
    for name in ("states", "transitions", "schedules"):
        assert whole.stats[name] == cut.stats[name]


def test_a_key_collision_is_caught_not_merged():
    graph = _pieces_joined_by_unschedulable_ops(0)
    groups = candidate_groups(graph, 3)
    pricer = StagePricer(graph, range(len(graph)), RandomCost(0), "parallel")
    search = DownsetSearch(graph, groups, pricer, 8)
    search.enum.group_key = np.zeros_like(search.enum.group_key)  # every stage collides
    with pytest.raises(RuntimeError, match="share a 64-bit key"):
        search.run()


@pytest.mark.parametrize("strategy", ["parallel", "both"])
@pytest.mark.parametrize("seed", range(12))
def test_unpruned_search_is_exact(seed, strategy):
    # r and s at least the number of ops: stages are grown op by op, not from groups.
    rng = random.Random(300 + seed)
    n = rng.randint(1, 8)
    graph = random_graph(rng, n, rng.uniform(0.1, 0.7), unschedulable=0.2 if seed % 2 else 0)
    cost = AdditiveCost(rng, n)
    sched = ios_schedule(graph, cost, max_group_size=n, max_num_groups=n, strategy=strategy)
    best, count, transitions, states = brute_force(graph, cost, n, n, strategy)
    assert sched.latency_us == pytest.approx(best, rel=1e-12)
    assert (sched.stats["schedules"], sched.stats["transitions"], sched.stats["states"]) == \
        (count, transitions, states)


@pytest.mark.parametrize("seed", range(6))
def test_batching_changes_nothing(seed, monkeypatch):
    # Few states, stages and queued transitions at once: every batching path is taken.
    from tvm_ios.schedule import downsets

    rng = random.Random(500 + seed)
    graph = random_graph(rng, 9, 0.3)
    cost = AdditiveCost(rng, 9, capacity=2.0, sync=4.0)
    plain = ios_schedule(graph, cost)
    for name, value in (("_STATES_AT_ONCE", 3), ("_PRICED_AT_ONCE", 5),
                        ("_PENDING_AT_MOST", 7)):
        monkeypatch.setattr(downsets, name, value)
    batched = ios_schedule(graph, cost)
    assert batched.latency_us == plain.latency_us
    assert [s.to_dict() for s in batched.stages] == [s.to_dict() for s in plain.stages]
    for name in ("states", "transitions", "schedules"):
        assert batched.stats[name] == plain.stats[name]
    assert plain.latency_us == pytest.approx(brute_force(graph, cost, 3, 8, "both")[0])
