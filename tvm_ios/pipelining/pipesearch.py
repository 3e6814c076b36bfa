"""Pipe-search (seed paper 003, paper I): a database of layer distributions sorted by the
coefficient of variation (CV) of their stage weights, explored with a confidence bound.

For each pipeline depth p = 2 .. P every split of the layers into p stages is generated
and sorted by ``CV = std(stage weights) / mean(stage weights)`` (Algorithm 1). Phase one
tries, for each depth, configurations in CV order until alpha of them in a row fail to beat
the global best; phase two resumes at the best depth where phase one left it, again until
alpha failures in a row (Algorithm 2). Pipe-search ignores heterogeneity: stage i runs on the
i-th EP of H_e (fastest first). Building the database is timed and counted in its clock.
"""
from __future__ import annotations

import logging

import numpy as np

from .eps import ranked
from .search import Evaluator, SearchResult
from .space import Config, layer_distributions

__all__ = ["sorted_distributions", "pipesearch"]

logger = logging.getLogger(__name__)


def sorted_distributions(weights, depth: int) -> np.ndarray:
    """Layer distributions of ``depth`` stages in increasing CV of their stage weights."""
    dist = layer_distributions(len(weights), depth)
    prefix = np.concatenate([[0.0], np.cumsum(np.asarray(weights, dtype=float))])
    bounds = np.hstack([np.zeros((len(dist), 1), np.int64), np.cumsum(dist, axis=1)])
    stage_w = prefix[bounds[:, 1:]] - prefix[bounds[:, :-1]]
    cv = stage_w.std(axis=1) / stage_w.mean(axis=1)
    return dist[np.argsort(cv, kind="stable")]


def _explore(evaluator, table, order, start, best, alpha):
    """Try rows of ``table`` from ``start`` until alpha in a row fail; returns (next, best)."""
    gamma, c = 0, start
    while gamma < alpha and c < len(table):
        conf = Config(tuple(table[c]), tuple(order[: table.shape[1]]))
        value = evaluator(conf)
        if value > best:
            best, gamma = value, 0
        else:
            gamma += 1
        c += 1
    return c, best


def pipesearch(evaluator: Evaluator, weights, eps, alpha: int = 10,
               max_stages: int | None = None) -> SearchResult:
    """Run Pipe-search; returns the best configuration it measured.

    Parameters
    ----------
    evaluator : Evaluator
        Measures configurations.
    weights : sequence of float
        Static layer weights (FLOPs).
    eps : sequence of EPSpec
        The execution places (only their ranking is used).
    alpha : int
        Failures in a row before a depth is left.
    max_stages : int, optional
        Deepest pipeline (default: number of EPs).
    """
    order = ranked(eps)
    top = min(max_stages or len(eps), len(eps), len(weights))
    depths = list(range(2, top + 1)) or [1]
    tables = {p: sorted_distributions(weights, p) for p in depths}
    visited, best = {}, 0.0
    for p in depths:
        visited[p], best = _explore(evaluator, tables[p], order, 0, best, alpha)
    p = evaluator.best.depth
    _explore(evaluator, tables[p], order, visited[p], best, alpha)
    logger.info("pipesearch: %d configurations", evaluator.evaluated)
    return evaluator.result("pipesearch", alpha=alpha,
                            database=int(sum(len(t) for t in tables.values())))
