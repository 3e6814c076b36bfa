"""Candidate groups: exactly the connected, convex sets of at most r schedulable ops."""
import itertools
import random

import pytest

from brute_force import components, random_graph
from tvm_ios.graph.analysis import ancestors, descendants
from tvm_ios.schedule.groups import candidate_groups


def _brute_groups(graph, r):
    anc, desc = ancestors(graph), descendants(graph)
    fixed = {i for i, node in enumerate(graph.nodes) if not node.schedulable}
    out = {1 << i for i in fixed}
    free = [i for i in range(len(graph)) if i not in fixed]
    for k in range(1, r + 1):
        for members in itertools.combinations(free, k):
            mask = sum(1 << i for i in members)
            between = 0
            for i in members:
                for j in members:
                    between |= desc[i] & anc[j]
            if between & ~mask == 0 and len(components(graph, members)) == 1:
                out.add(mask)
    return out


@pytest.mark.parametrize("seed", range(25))
def test_groups_are_the_connected_convex_sets(seed):
    rng = random.Random(seed)
    graph = random_graph(rng, rng.randint(1, 10), rng.uniform(0.1, 0.6),
                         unschedulable=0.2 if seed % 2 else 0)
    r = rng.randint(1, 4)
    table = candidate_groups(graph, r)
    assert len(set(table.masks)) == len(table.masks)
    assert set(table.masks) == _brute_groups(graph, r)
    for g, mask in enumerate(table.masks):  # sorted by lowest op, which anchors the group
        low = (mask & -mask).bit_length() - 1
        assert table.anchor_ptr[low] <= g < table.anchor_ptr[low + 1]
