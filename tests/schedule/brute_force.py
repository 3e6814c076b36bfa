"""An exhaustive search over every stage sequence, straight from the definitions, and the
random graphs and cost models the exactness tests run it on.

Nothing here shares code with the scheduler: stages are subsets of the remaining ops with no
edge out of them, groups are their weak components found by union-find, pruning, the
strategies and unschedulable ops are applied as the thesis and the issue state them.
"""
import random

from tvm_ios.graph.opgraph import OpGraph, OpNode
from tvm_ios.schedule.merge import merge_plan


def components(graph, members):
    parent = {i: i for i in members}

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x
    for u, v in graph.edges:
        if u in parent and v in parent:
            parent[find(u)] = find(v)
    groups = {}
    for i in members:
        groups.setdefault(find(i), []).append(i)
    return sorted(sorted(g) for g in groups.values())


def stage_price(graph, cost, comps, strategy):
    """The stage's latency under ``strategy`` (None when it is no stage)."""
    best = None
    if strategy != "merge" or len(comps) == 1:
        best = float(cost.stage_latency(graph, comps))
    if strategy != "parallel" and len(comps) > 1:
        ops = sorted(i for c in comps for i in c)
        if merge_plan(graph, ops) is not None:
            merged = cost.merged_latency(graph, ops)
            if merged is not None and (best is None or merged < best):
                best = float(merged)
    return best


def brute_force(graph, cost, r, s, strategy="parallel"):
    """(best latency, #schedules, #transitions, #states) over every stage sequence."""
    fixed = {i for i, node in enumerate(graph.nodes) if not node.schedulable}
    memo, transitions = {0: (0.0, 1)}, [0]

    def walk(state):
        if state in memo:
            return memo[state]
        best, count = float("inf"), 0
        part = state
        while part:  # every non-empty subset of the state
            members = [i for i in range(len(graph)) if part >> i & 1]
            rest = state & ~part
            if not any(graph.succ[i] & rest for i in members) and \
                    (len(members) == 1 or not fixed.intersection(members)):
                comps = components(graph, members)
                price = None
                if len(comps) <= s and all(len(c) <= r for c in comps):
                    price = stage_price(graph, cost, comps, strategy)
                if price is not None:
                    transitions[0] += 1
                    sub, sub_count = walk(rest)
                    best, count = min(best, sub + price), count + sub_count
            part = (part - 1) & state
        memo[state] = (best, count)
        return memo[state]
    best, count = walk(graph.all_mask)
    return best, count, transitions[0], len(memo) - 1


def conv(name, source, kernel, schedulable=True):
    """A conv node reading tensor ``source`` (convs of one source may merge)."""
    return OpNode(name, kind="conv2d", shape=(1, 8, 8, 8), schedulable=schedulable,
                  attrs={"input": source, "kernel": [kernel, kernel], "strides": [1, 1],
                         "padding": [kernel // 2] * 4, "dilation": [1, 1], "groups": 1,
                         "channels": 8, "in_channels": 8, "epilogue": ["relu"],
                         "bias": True, "data_layout": "NCHW", "kernel_layout": "OIHW"})


def random_graph(rng, n, p, unschedulable=0.0):
    """A random DAG of convs; a conv with one producer reads it, so siblings may merge."""
    edges = [(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < p]
    preds = {v: sorted(u for u, w in edges if w == v) for v in range(n)}
    nodes = [conv(f"op{v}", f"op{preds[v][0]}" if len(preds[v]) == 1 else
                  ("x" if not preds[v] else f"cat{v}"), rng.choice((1, 3)),
                  schedulable=rng.random() >= unschedulable) for v in range(n)]
    return OpGraph(nodes, edges, name=f"random{n}")


def random_case(seed, sizes=(3, 9), density=(0.25, 0.7), unschedulable=0.0,
                capacity=2.0, sync=4.0):
    """``(graph, cost, rng)``: a random graph with the issue's additive cost."""
    rng = random.Random(seed)
    n = rng.randint(*sizes)
    graph = random_graph(rng, n, rng.uniform(*density), unschedulable)
    return graph, AdditiveCost(rng, n, capacity, sync), rng


class AdditiveCost:
    """The issue's cost: per-op times, a capacity, a per-stage sync cost.

    A stage takes its slowest group or its total work spread over ``capacity`` lanes,
    whichever is longer, plus ``sync``; merged convs save a share of their work.
    """

    def __init__(self, rng, n, capacity=2.5, sync=1.5):
        self.times = [rng.uniform(1.0, 10.0) for _ in range(n)]
        self.capacity, self.sync = capacity, sync

    def stage_latency(self, graph, groups):
        work = [sum(self.times[i] for i in g) for g in groups]
        return self.sync + max(max(work), sum(work) / self.capacity)

    def merged_latency(self, graph, ops):
        return self.sync + 0.6 * sum(self.times[i] for i in ops)


class RandomCost:
    """A random but deterministic price per stage: any function of the stage will do."""

    def __init__(self, seed):
        self.seed, self.cache = seed, {}

    def _value(self, key):
        if key not in self.cache:
            self.cache[key] = random.Random(hash((self.seed, key))).uniform(1.0, 10.0)
        return self.cache[key]

    def stage_latency(self, graph, groups):
        return self._value(tuple(sorted(tuple(g) for g in groups)))

    def merged_latency(self, graph, ops):
        return self._value(("merge",) + tuple(sorted(ops)))
