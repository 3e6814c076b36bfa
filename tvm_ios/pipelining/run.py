"""One entry point for every pipeline scheduler: ``run_search(name, ...)``.

The CLI and the benchmark call this; it builds the evaluator over the configuration space
and dispatches to Shisha, Pipe-search, or a baseline by name.
"""
from __future__ import annotations

import logging
import random

from .baselines import exhaustive_search, hill_climbing, random_walk, simulated_annealing
from .executor import PipelineError
from .layer_times import LayerTimes
from .pipesearch import pipesearch
from .search import Evaluator, ModelledMeasure, SearchResult
from .shisha import shisha_search
from .space import ConfigSpace

__all__ = ["ALGORITHMS", "run_search", "modelled_search", "check_stages"]

logger = logging.getLogger(__name__)

ALGORITHMS = ("shisha", "pipesearch", "sa", "hc", "rw", "es")


def check_stages(num_stages: int | None, eps, num_layers: int) -> int:
    """The pipeline depth to search up to; more stages than EPs (or layers) is an error."""
    depth = num_stages or min(len(eps), num_layers)
    if depth > len(eps):
        raise ValueError(f"{depth} pipeline stages but only {len(eps)} EPs "
                         f"({', '.join(e.name for e in eps)}): a stage needs an EP of its own")
    if not 1 <= depth <= num_layers:
        raise ValueError(f"{depth} pipeline stages for a model of {num_layers} layers")
    return depth


def run_search(algorithm: str, space: ConfigSpace, measure, weights, eps, seed: int = 0,
               **options) -> SearchResult:
    """Run scheduler ``algorithm`` (one of :data:`ALGORITHMS`) over ``space``.

    ``options`` go to the scheduler (``alpha``, ``heuristic``, ``budget``, ``start`` ...).
    When a real pipeline fails during the search, the search stops there and the result
    holds the best configuration measured so far and ``extra["error"]`` naming the stage.
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown search {algorithm!r}; one of {', '.join(ALGORITHMS)}")
    evaluator = Evaluator(space, measure)
    try:
        return _dispatch(algorithm, evaluator, weights, eps, random.Random(seed), options)
    except PipelineError as err:
        logger.error("%s stopped after %d configurations: %s", algorithm, evaluator.evaluated,
                     err)
        return evaluator.result(algorithm, error=str(err))


def _dispatch(algorithm, evaluator, weights, eps, rng, options) -> SearchResult:
    space = evaluator.space
    if algorithm == "shisha":
        return shisha_search(evaluator, weights, eps, num_stages=space.max_stages, **options)
    if algorithm == "pipesearch":
        return pipesearch(evaluator, weights, eps, max_stages=space.max_stages, **options)
    if algorithm == "es":
        return exhaustive_search(evaluator)
    if algorithm == "sa":
        return simulated_annealing(evaluator, rng, **options)
    if algorithm == "hc":
        return hill_climbing(evaluator, rng, **options)
    return random_walk(evaluator, rng, **options)


def modelled_search(algorithm: str, times: LayerTimes, eps, num_stages: int | None = None,
                    frames: int = 10, seed: int = 0, **options) -> SearchResult:
    """``run_search`` over modelled (or logged) layer times."""
    depth = check_stages(num_stages, eps, times.num_layers)
    space = ConfigSpace(times.num_layers, len(eps), depth)
    return run_search(algorithm, space, ModelledMeasure(times, frames), times.weights, eps,
                      seed, **options)
