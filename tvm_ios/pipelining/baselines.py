"""Baseline schedulers over the same space: exhaustive search, simulated annealing, hill
climbing and random walk.

Exhaustive search evaluates every configuration; with a modelled layer-time table it does
so in bulk with numpy (and is charged the online time every configuration would take),
otherwise one by one. The stochastic searches move between neighbours of
:meth:`ConfigSpace.neighbours` and start from a random configuration unless given one
(the paper's SA_s / HC_s start from Shisha's seed).
"""
from __future__ import annotations

import itertools
import logging
import math
import random

import numpy as np

from .search import Evaluator, ModelledMeasure, SearchResult
from .space import Config, layer_distributions

__all__ = ["exhaustive_search", "simulated_annealing", "hill_climbing", "random_walk",
           "MAX_EXHAUSTIVE"]

logger = logging.getLogger(__name__)

#: Largest space exhaustive search accepts.
MAX_EXHAUSTIVE = 50_000_000


def exhaustive_search(evaluator: Evaluator) -> SearchResult:
    """Evaluate every configuration of ``evaluator.space``."""
    space = evaluator.space
    if space.size() > MAX_EXHAUSTIVE:
        raise ValueError(f"exhaustive search: {space.size()} configurations exceed "
                         f"{MAX_EXHAUSTIVE}; use fewer EPs or max_stages")
    for depth in range(1, space.max_stages + 1):
        dist = layer_distributions(space.num_layers, depth)
        for perm in itertools.permutations(range(space.num_eps), depth):
            if isinstance(evaluator.measure, ModelledMeasure):
                _bulk(evaluator, dist, perm)
            else:
                for row in dist:
                    evaluator(Config(tuple(row), perm))
    return evaluator.result("es")


def _bulk(evaluator: Evaluator, dist: np.ndarray, perm) -> None:
    measure = evaluator.measure
    bounds = np.hstack([np.zeros((len(dist), 1), np.int64), np.cumsum(dist, axis=1)])
    cols = np.asarray(perm)
    stages = measure.prefix[bounds[:, 1:], cols] - measure.prefix[bounds[:, :-1], cols]
    period = stages.max(axis=1)
    best = int(np.argmin(period))
    seconds = float(np.sum(measure.frames * period + stages.sum(axis=1)))
    evaluator.record_bulk(Config(tuple(dist[best]), perm), 1.0 / float(period[best]),
                          len(dist), seconds)


def _start(evaluator, rng, start):
    return evaluator.space.check(start) if start else evaluator.space.random(rng)


def simulated_annealing(evaluator: Evaluator, rng: random.Random, start: Config | None = None,
                        t0: float = 0.2, cooling: float = 0.995, t_min: float = 1e-3,
                        max_iters: int = 5000) -> SearchResult:
    """Simulated annealing on relative throughput loss, geometric cooling."""
    cur = _start(evaluator, rng, start)
    cur_v, temp, it = evaluator(cur), t0, 0
    while temp > t_min and it < max_iters:
        cand = rng.choice(evaluator.space.neighbours(cur))
        value = evaluator(cand)
        loss = (cur_v - value) / cur_v
        if loss <= 0 or rng.random() < math.exp(-loss / temp):
            cur, cur_v = cand, value
        temp *= cooling
        it += 1
    return evaluator.result("sa", iterations=it)


def hill_climbing(evaluator: Evaluator, rng: random.Random, start: Config | None = None,
                  max_iters: int = 5000) -> SearchResult:
    """First-improvement hill climbing; stops at a local optimum."""
    cur = _start(evaluator, rng, start)
    cur_v, it, improved = evaluator(cur), 0, True
    while improved and it < max_iters:
        improved = False
        neighbours = evaluator.space.neighbours(cur)
        rng.shuffle(neighbours)
        for cand in neighbours:
            it += 1
            value = evaluator(cand)
            if value > cur_v:
                cur, cur_v, improved = cand, value, True
                break
    return evaluator.result("hc", iterations=it)


def random_walk(evaluator: Evaluator, rng: random.Random, budget: int = 1000) -> SearchResult:
    """Evaluate ``budget`` random configurations."""
    for _ in range(budget):
        evaluator(evaluator.space.random(rng))
    return evaluator.result("rw", budget=budget)
