"""IOS DP exactness: latency, transition and schedule counts equal a brute-force search."""
import itertools
import random

import pytest

from tvm_ios.graph.opgraph import OpGraph, OpNode
from tvm_ios.schedule.endings import EndingEnumerator
from tvm_ios.schedule.ios import ios_schedule


class RandomCost:
    """A random but deterministic cost per group set: any function of the stage will do."""

    def __init__(self, seed, merge_ok=False):
        self.seed, self.merge_ok, self.cache = seed, merge_ok, {}

    def _value(self, key):
        if key not in self.cache:
            self.cache[key] = random.Random(hash((self.seed, key))).uniform(1.0, 10.0)
        return self.cache[key]

    def stage_latency(self, graph, groups):
        return self._value(tuple(sorted(tuple(g) for g in groups)))

    def merged_latency(self, graph, ops):
        return self._value(("merge",) + tuple(sorted(ops)))


def random_dag(rng, n, p):
    edges = [(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < p]
    return OpGraph.from_edges(n, edges)


def brute_endings(graph, state, r, s):
    """All endings by subset enumeration, straight from the definitions."""
    ids = [i for i in range(len(graph)) if state >> i & 1]
    out = []
    for k in range(1, len(ids) + 1):
        for subset in itertools.combinations(ids, k):
            part = sum(1 << i for i in subset)
            rest = state & ~part
            if any(graph.succ[i] & rest for i in subset):
                continue
            comps = []  # weak components by union-find
            parent = {i: i for i in subset}

            def find(x):
                while parent[x] != x:
                    x = parent[x]
                return x
            for u, v in graph.edges:
                if u in parent and v in parent:
                    parent[find(u)] = find(v)
            groups = {}
            for i in subset:
                groups.setdefault(find(i), []).append(i)
            comps = sorted(sorted(g) for g in groups.values())
            if len(comps) <= s and all(len(g) <= r for g in comps):
                out.append((part, comps))
    return out


def brute_force(graph, cost, r, s):
    """(best latency, #schedules, #transitions over reachable states).

    A literal walk over every stage sequence for graphs of up to 7 ops; above that the walk
    is memoised by state (same result, without re-walking shared suffixes).
    """
    seen_states, transitions, memo = set(), [0], {}

    def walk(state):
        if state == 0:
            return 0.0, 1
        if len(graph) > 7 and state in memo:
            return memo[state]
        best, count = float("inf"), 0
        first_visit = state not in seen_states
        seen_states.add(state)
        for part, comps in brute_endings(graph, state, r, s):
            if first_visit:
                transitions[0] += 1
            lat = cost.stage_latency(graph, comps)
            sub, sub_count = walk(state & ~part)
            best = min(best, sub + lat)
            count += sub_count
        memo[state] = (best, count)
        return best, count
    best, count = walk(graph.all_mask)
    return best, count, transitions[0]


@pytest.mark.parametrize("seed", range(40))
def test_dp_equals_brute_force(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 9 if seed % 4 else 11)
    graph = random_dag(rng, n, rng.uniform(0.1, 0.5))
    r, s = rng.randint(1, 4), rng.randint(1, 4)
    cost = RandomCost(seed)
    sched = ios_schedule(graph, cost, max_group_size=r, max_num_groups=s, strategy="parallel",
                         partition=False, reuse_blocks=False)
    best, count, transitions = brute_force(graph, cost, r, s)
    assert sched.latency_us == pytest.approx(best)
    assert sched.stats["schedules"] == count
    assert sched.stats["transitions"] == transitions
    # Blocks restrict the space (stages never straddle a cut): never better than exact.
    blocked = ios_schedule(graph, cost, max_group_size=r, max_num_groups=s,
                           strategy="parallel", reuse_blocks=False)
    assert blocked.latency_us >= best - 1e-9


@pytest.mark.parametrize("seed", range(30))
def test_endings_are_exact_and_unique(seed):
    rng = random.Random(1000 + seed)
    n = rng.randint(1, 10)
    graph = random_dag(rng, n, rng.uniform(0.05, 0.6))
    r, s = rng.randint(1, 5), rng.randint(1, 5)
    enum = EndingEnumerator(graph, r, s)
    state = graph.all_mask
    for _ in range(3):
        got = enum.endings(state)
        masks = [m for m, _ in got]
        assert len(masks) == len(set(masks)), "an ending was enumerated twice"
        want = brute_endings(graph, state, r, s)
        assert sorted(masks) == sorted(m for m, _ in want)
        groups = {m: sorted(sorted(i for i in range(n) if c >> i & 1) for c in comps)
                  for m, comps in got}
        assert all(groups[m] == comps for m, comps in want)
        if not got:
            break
        state &= ~rng.choice(masks)
        if not state:
            break


def test_single_block_exact_on_wide_graph():
    # A diamond with a wide middle is one block: the DP must equal the brute force.
    edges = [(0, i) for i in range(1, 6)] + [(i, 6) for i in range(1, 6)] + [(1, 2)]
    graph = OpGraph.from_edges(7, edges)
    cost = RandomCost(7)
    sched = ios_schedule(graph, cost, max_group_size=2, max_num_groups=3, strategy="parallel",
                         max_block_size=100, reuse_blocks=False)
    # blocks: {0} and {1..6} (a cut node closes its block); brute force over the second
    rest = graph.subgraph(0b1111110)
    best, count, transitions = brute_force(rest, _Shift(cost, 1), 2, 3)
    assert sched.stats["blocks"] == 2
    assert sched.latency_us == pytest.approx(best + cost.stage_latency(graph, [[0]]))
    assert sched.stats["schedules"] == count


class _Shift:
    def __init__(self, cost, offset):
        self.cost, self.offset = cost, offset

    def stage_latency(self, graph, groups):
        return self.cost.stage_latency(graph, [[i + self.offset for i in g] for g in groups])

    def merged_latency(self, graph, ops):
        return None


def test_merge_strategy_picks_cheaper_merge():
    nodes = [OpNode(f"c{i}", kind="conv2d", shape=(1, 8, 8, 8),
                    attrs={"input": "x", "kernel": [k, k], "strides": [1, 1],
                           "padding": [k // 2] * 4, "dilation": [1, 1], "groups": 1,
                           "channels": 8, "in_channels": 4, "epilogue": ["relu"],
                           "bias": True, "data_layout": "NCHW", "kernel_layout": "OIHW"})
             for i, k in enumerate((1, 3, 5))]
    graph = OpGraph(nodes, [])

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
    sched = ios_schedule(graph, RandomCost(3), max_block_size=100)
    assert [stage.ops for stage in sched.stages if "op1" in stage.ops] == [["op1"]]
