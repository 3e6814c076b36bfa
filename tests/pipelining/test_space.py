"""Configuration space: size, checks, neighbours, uniform sampling."""
import math
import random

import pytest

from tvm_ios.pipelining.space import Config, ConfigSpace, layer_distributions


def test_size_formula():
    space = ConfigSpace(7, 4)
    assert space.size() == sum(math.comb(6, s - 1) * math.perm(4, s) for s in range(1, 5))
    assert ConfigSpace(7, 4, max_stages=2).size() == 4 + 6 * 12
    assert layer_distributions(5, 2).tolist() == [[1, 4], [2, 3], [3, 2], [4, 1]]


@pytest.mark.parametrize("config,problem", [
    (Config((3, 4), (0, 0)), "distinct"),
    (Config((3, 3), (0, 1)), "sum to 7"),
    (Config((1, 1, 1, 1, 3), (0, 1, 2, 3, 4)), "at most 4"),
    (Config((0, 7), (0, 1)), ">= 1"),
])
def test_check_names_the_problem(config, problem):
    with pytest.raises(ValueError, match=problem):
        ConfigSpace(7, 4).check(config)


def test_neighbours_and_random_are_in_space():
    space, rng = ConfigSpace(9, 4), random.Random(0)
    for _ in range(50):
        conf = space.random(rng)
        space.check(conf)
        for other in space.neighbours(conf):
            space.check(other)
            assert other != conf
    assert Config((2, 7), (1, 0)).to_dict() == {"stages": [2, 7], "eps": [1, 0]}
    assert Config.from_dict({"stages": [2, 7], "eps": [1, 0]}) == Config((2, 7), (1, 0))
