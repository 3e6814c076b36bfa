"""Shisha seed generation and balancing on the paper's example W = {1,4,8,4,8,8,4}, 4 cores.

Layer times equal the weights on every core, so each step can be checked by hand:
seed merges 1+4, then the first 4 with its left 8, then the last 4 with its 8 -> [2,2,1,2]
(stage weights 5,12,8,12, bottleneck 12, which is optimal: the 4 between two 8s must join one).
"""
import numpy as np
import pytest

from tvm_ios.pipelining.eps import EPSpec, ranked
from tvm_ios.pipelining.layer_times import LayerTimes
from tvm_ios.pipelining.search import Evaluator, ModelledMeasure
from tvm_ios.pipelining.shisha import assign_eps, move_layer, seed_stages, shisha_search, shisha_seed
from tvm_ios.pipelining.space import Config, ConfigSpace

W = [1, 4, 8, 4, 8, 8, 4]
CORES = [EPSpec(f"core{i}", "cpu", 1, "FEP", 10.0) for i in range(4)]


def example_evaluator(eps=CORES):
    times = LayerTimes([f"l{i}" for i in range(7)], [e.name for e in eps],
                       np.array([[w] * len(eps) for w in W], float), W)
    return Evaluator(ConfigSpace(7, len(eps)), ModelledMeasure(times, frames=1))


def test_seed_merges_lightest_with_lighter_neighbour():
    assert seed_stages(W, 7) == [1] * 7
    assert seed_stages(W, 6) == [2, 1, 1, 1, 1, 1]
    assert seed_stages(W, 5) == [2, 2, 1, 1, 1]
    assert seed_stages(W, 4) == [2, 2, 1, 2]
    assert seed_stages(W, 1) == [7]
    with pytest.raises(ValueError, match="8 stages for 7 layers"):
        seed_stages(W, 8)


def test_rank_w_and_rank_l_assignment():
    stages = [2, 2, 1, 2]                       # weights 5, 12, 8, 12
    assert assign_eps(stages, W, CORES, "rank_w") == [3, 0, 2, 1]
    assert assign_eps(stages, W, CORES, "rank_l") == [3, 2, 0, 1]
    mixed = [EPSpec("s0", "cpu", 4, "SEP", 20.0, 3.0), EPSpec("f0", "cpu", 4, "FEP", 40.0),
             EPSpec("s1", "cpu", 8, "SEP", 20.0, 3.0), EPSpec("f1", "cpu", 8, "FEP", 40.0)]
    assert ranked(mixed) == [3, 1, 2, 0]       # FEPs first, bigger first
    # heaviest stages (1 and 3) get the FEPs; the lightest (0) the slowest SEP
    assert assign_eps(stages, W, mixed, "rank_w") == [0, 3, 2, 1]
    # stages with most layers (0, 1, 3) get the slowest places
    assert assign_eps(stages, W, mixed, "rank_l") == [0, 2, 3, 1]


def test_move_layer_chain():
    conf = Config((2, 2, 1, 2), (3, 0, 2, 1))
    assert move_layer(conf, 1, 0).stages == (3, 1, 1, 2)
    assert move_layer(conf, 0, 3).stages == (1, 2, 1, 3)
    assert move_layer(conf, 0, 3, chain=False).stages == (1, 3, 1, 2)
    with pytest.raises(ValueError):
        move_layer(conf, 2, 3)


def test_balancing_trace_by_hand():
    ev = example_evaluator()
    result = shisha_search(ev, W, CORES, heuristic="H3", alpha=10)
    assert list(ev.cache) == [Config((2, 2, 1, 2), (3, 0, 2, 1)),   # seed: 5 12 8 12
                              Config((3, 1, 1, 2), (3, 0, 2, 1)),   # 12 -> lightest: 13 4 8 12
                              Config((2, 1, 2, 2), (3, 0, 2, 1)),   # 13 -> (seen), 8: 5 8 12 12
                              Config((2, 1, 1, 3), (3, 0, 2, 1))]   # 12 -> 20; no unseen move left
    assert result.throughput == pytest.approx(1 / 12)
    assert result.configuration == Config((2, 2, 1, 2), (3, 0, 2, 1))
    assert result.evaluated == 4 and result.space_size == ConfigSpace(7, 4).size()


def test_all_heuristics_share_one_evaluator():
    ev = example_evaluator()
    result = shisha_search(ev, W, CORES, heuristic="all")
    assert len(result.extra["seeds"]) == 4
    assert result.throughput == pytest.approx(1 / 12)
    with pytest.raises(ValueError, match="unknown heuristic"):
        shisha_search(example_evaluator(), W, CORES, heuristic="H9")


def test_seed_needs_enough_eps():
    assert shisha_seed(W, CORES).depth == 4
    with pytest.raises(ValueError, match="only 4 EPs"):
        shisha_seed(W, CORES, num_stages=5)


def test_single_layer_bottleneck_on_sep_swaps_to_fep():
    eps = [EPSpec("fast", "cpu", 1, "FEP", 40.0), EPSpec("slow", "cpu", 1, "SEP", 20.0)]
    weights = [8, 1, 1]
    times = LayerTimes(["a", "b", "c"], ["fast", "slow"],
                       np.array([[w, 3 * w] for w in weights], float), weights)
    ev = Evaluator(ConfigSpace(3, 2), ModelledMeasure(times))
    result = shisha_search(ev, weights, eps, seed=Config((1, 2), (1, 0)))
    assert list(ev.cache) == [Config((1, 2), (1, 0)), Config((1, 2), (0, 1))]   # 24|2 -> 8|6
    assert result.throughput == pytest.approx(1 / 8)
