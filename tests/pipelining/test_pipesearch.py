"""Pipe-search: CV-sorted database, confidence-bounded exploration."""
import numpy as np
import pytest

from tvm_ios.pipelining.eps import EPSpec
from tvm_ios.pipelining.layer_times import LayerTimes
from tvm_ios.pipelining.pipesearch import pipesearch, sorted_distributions
from tvm_ios.pipelining.search import Evaluator, ModelledMeasure
from tvm_ios.pipelining.space import ConfigSpace

W = [1, 4, 8, 4, 8, 8, 4]


def test_database_sorted_by_cv():
    table = sorted_distributions(W, 2)
    assert table.tolist()[0] == [4, 3]          # 21 vs 16 is the most balanced 2-split
    cvs = []
    for row in table:
        cut = row[0]
        w = np.array([sum(W[:cut]), sum(W[cut:])])
        cvs.append(w.std() / w.mean())
    assert cvs == sorted(cvs)


def test_pipesearch_on_example_cores():
    cores = [EPSpec(f"c{i}", "cpu", 1, "FEP", 10.0) for i in range(4)]
    times = LayerTimes([str(i) for i in range(7)], [c.name for c in cores],
                       np.array([[w] * 4 for w in W], float), W)
    ev = Evaluator(ConfigSpace(7, 4), ModelledMeasure(times))
    result = pipesearch(ev, W, cores, alpha=3)
    assert result.throughput == pytest.approx(1 / 12)
    assert result.configuration.eps == (0, 1, 2, 3)[: result.configuration.depth]
    assert result.evaluated <= sum(len(sorted_distributions(W, p)) for p in (2, 3, 4))
