"""The reference IOS DP of the search-speed benchmark against the exhaustive search."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "schedule"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from brute_force import brute_force, random_case
from ios_reference_dp import IOSReferenceDP, chain_decomposition


@pytest.mark.parametrize("seed", range(20))
def test_reference_is_exact_on_its_own_space(seed):
    graph, cost, _ = random_case(seed, sizes=(2, 8), density=(0.1, 0.7))
    n = len(graph)
    chains = chain_decomposition(graph)
    assert sorted(i for c in chains for i in c) == list(range(n))
    # With groups of one op both spaces are the same: equal optimum and transitions.
    ref = IOSReferenceDP(graph, cost, 1, 4, "parallel")
    best, _, transitions, _ = brute_force(graph, cost, 1, 4, "parallel")
    assert ref.run()[0] == pytest.approx(best) and ref.transitions == transitions
    # Its groups (single-source closures) are a subset of ours: never below the optimum.
    latency, stages = IOSReferenceDP(graph, cost, 3, 8).run()
    assert latency >= brute_force(graph, cost, 3, 8, "both")[0] - 1e-9
    assert sorted(i for groups, _, _ in stages for g in groups for i in g) == list(range(n))
