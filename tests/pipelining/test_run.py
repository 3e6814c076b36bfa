"""Bad input to the pipeline driver: more stages than EPs, unknown searches."""
import numpy as np
import pytest

from tvm_ios.pipelining.eps import parse_eps
from tvm_ios.pipelining.layer_times import LayerTimes
from tvm_ios.pipelining.run import ALGORITHMS, check_stages, modelled_search

W = [1, 4, 8, 4, 8, 8, 4]


def table(eps):
    return LayerTimes([str(i) for i in range(7)], [e.name for e in eps],
                      np.array([[w] * len(eps) for w in W], float), W)


def test_more_stages_than_eps():
    eps = parse_eps("cpu2")
    with pytest.raises(ValueError, match="3 pipeline stages but only 2 EPs"):
        check_stages(3, eps, 7)
    with pytest.raises(ValueError, match="only 2 EPs"):
        modelled_search("shisha", table(eps), eps, num_stages=3)
    with pytest.raises(ValueError, match="9 pipeline stages for a model of 7 layers"):
        check_stages(9, parse_eps("c5") + parse_eps("cpu2"), 7)


def test_every_algorithm_runs_and_reports():
    eps = parse_eps("c2")
    es = modelled_search("es", table(eps), eps)
    for name in ALGORITHMS:
        result = modelled_search(name, table(eps), eps)
        data = result.to_dict()
        for key in ("throughput", "configuration", "evaluated", "space_size", "seconds"):
            assert key in data
        assert 0 < result.throughput <= es.throughput + 1e-12
    with pytest.raises(ValueError, match="unknown search 'ga'"):
        modelled_search("ga", table(eps), eps)
