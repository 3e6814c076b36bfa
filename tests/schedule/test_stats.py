"""block_stats counts against hand counts."""
from tvm_ios.graph.opgraph import OpGraph
from tvm_ios.schedule.stats import block_stats


def test_two_independent_ops():
    # states {a,b}, {a}, {b}: endings of {a,b}: {a}, {b}, {a,b}; 5 transitions;
    # schedules: a|b together, a then b, b then a = 3
    rows = block_stats(OpGraph.from_edges(2, []))
    assert [(r["n"], r["width"], r["transitions"], r["schedules"]) for r in rows] == \
        [(2, 2, 5, 3)]


def test_pruning_reduces_transitions():
    graph = OpGraph.from_edges(4, [])
    full = block_stats(graph)[0]
    pruned = block_stats(graph, max_group_size=1, max_num_groups=1)[0]
    assert full["schedules"] == 75  # ordered set partitions of 4 (Fubini number)
    assert pruned["schedules"] == 24 and pruned["transitions"] < full["transitions"]
