"""Exhaustive search equals brute force on tiny cases; SA, HC and RW stay in the space."""
import itertools
import random

import numpy as np
import pytest

from tvm_ios.pipelining.baselines import (exhaustive_search, hill_climbing, random_walk,
                                         simulated_annealing)
from tvm_ios.pipelining.layer_times import LayerTimes
from tvm_ios.pipelining.search import Evaluator, ModelledMeasure
from tvm_ios.pipelining.space import Config, ConfigSpace, throughput


def tiny(seed, layers, eps):
    rng = np.random.default_rng(seed)
    table = rng.uniform(1.0, 10.0, (layers, eps)) * rng.uniform(0.5, 3.0, eps)
    return LayerTimes([f"l{i}" for i in range(layers)], [f"e{j}" for j in range(eps)],
                      table, list(table[:, 0]))


def brute_force(times, max_stages):
    prefix = ModelledMeasure(times).prefix
    best, configs = 0.0, []
    for depth in range(1, max_stages + 1):
        for cuts in itertools.combinations(range(1, times.num_layers), depth - 1):
            bounds = (0,) + cuts + (times.num_layers,)
            stages = tuple(b - a for a, b in zip(bounds, bounds[1:]))
            for eps in itertools.permutations(range(times.num_eps), depth):
                configs.append(Config(stages, eps))
                best = max(best, throughput(prefix, configs[-1]))
    return best, configs


@pytest.mark.parametrize("seed,layers,eps,max_stages",
                         [(0, 5, 3, 3), (1, 6, 4, 4), (2, 4, 2, 2), (3, 7, 3, 2), (4, 1, 3, 3)])
def test_exhaustive_equals_brute_force(seed, layers, eps, max_stages):
    times = tiny(seed, layers, eps)
    space = ConfigSpace(layers, eps, max_stages)
    best, configs = brute_force(times, space.max_stages)
    assert space.size() == len(configs) == len(set(configs))
    bulk = exhaustive_search(Evaluator(space, ModelledMeasure(times)))
    assert bulk.throughput == pytest.approx(best)
    assert bulk.evaluated == space.size()
    plain = Evaluator(space, lambda c: ModelledMeasure(times)(c))  # one by one
    single = exhaustive_search(plain)
    assert single.throughput == pytest.approx(best) and single.evaluated == len(configs)


def test_stochastic_searches_stay_in_space_and_count():
    times = tiny(5, 8, 3)
    space = ConfigSpace(8, 3)
    best, _ = brute_force(times, 3)
    for run in (lambda ev: simulated_annealing(ev, random.Random(0), max_iters=300),
                lambda ev: hill_climbing(ev, random.Random(0)),
                lambda ev: random_walk(ev, random.Random(0), budget=50)):
        ev = Evaluator(space, ModelledMeasure(times))
        result = run(ev)
        assert 0 < result.throughput <= best + 1e-12
        assert result.evaluated == len(ev.cache) <= space.size()
        assert all(space.check(c) for c in ev.cache)
        assert result.converge_seconds <= result.seconds


def test_exhaustive_refuses_huge_spaces():
    space = ConfigSpace(60, 12)
    with pytest.raises(ValueError, match="exceed"):
        exhaustive_search(Evaluator(space, lambda c: (1.0, 0.0, [1.0])))
