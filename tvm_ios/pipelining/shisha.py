"""Shisha (seed paper 003, paper II): seed generation, then online tuning.

Seed (Algorithm 1): repeatedly merge the lightest group of layers with its lighter
neighbour until N groups remain (ties: the first lightest group, the left neighbour), then
map groups to EPs ranked fastest first (H_e):

* ``rank_w``: heavier stages (summed weight) get faster EPs;
* ``rank_l``: stages with more layers get slower EPs.

Online tuning (Algorithm 2): find the slowest stage of the current configuration and move
one layer from it toward a target stage, each stage in between handing one layer on (the
stages in between keep their layer counts): the target is the nearest stage on a fast EP
(``nfep``) or the lightest stage on a fast EP (``nlfep``). A configuration no better than
the best so far increments gamma; a better one resets it; tuning stops at gamma = alpha.
Where the slowest stage is a single layer on an SEP, its EP is swapped with the target's
FEP (our extension, see :func:`_next`).
"""
from __future__ import annotations

import logging

from .eps import ranked
from .search import Evaluator, SearchResult
from .space import Config

__all__ = ["seed_stages", "assign_eps", "shisha_seed", "shisha_search", "move_layer",
           "swap_eps", "HEURISTICS"]

logger = logging.getLogger(__name__)

#: The paper's Table 2: heuristic -> (assignment, balancing).
HEURISTICS = {"H1": ("rank_l", "nlfep"), "H2": ("rank_l", "nfep"),
              "H3": ("rank_w", "nlfep"), "H4": ("rank_w", "nfep")}


def seed_stages(weights, num_stages: int) -> list[int]:
    """Layers per stage after merging the lightest groups (Algorithm 1, lines 3-8)."""
    if not 1 <= num_stages <= len(weights):
        raise ValueError(f"Shisha seed: {num_stages} stages for {len(weights)} layers")
    groups = [[float(w), 1] for w in weights]
    while len(groups) > num_stages:
        i = min(range(len(groups)), key=lambda k: (groups[k][0], k))
        near = [k for k in (i - 1, i + 1) if 0 <= k < len(groups)]
        j = min(near, key=lambda k: (groups[k][0], k))
        a, b = min(i, j), max(i, j)
        groups[a] = [groups[a][0] + groups[b][0], groups[a][1] + groups[b][1]]
        del groups[b]
    return [count for _, count in groups]


def assign_eps(stages, weights, eps, assignment: str = "rank_w") -> list[int]:
    """EP index of each stage (Algorithm 1, lines 9-12)."""
    order = ranked(eps)
    bounds = [0]
    for count in stages:
        bounds.append(bounds[-1] + count)
    if assignment == "rank_w":
        stage_w = [sum(weights[a:b]) for a, b in zip(bounds, bounds[1:])]
        by = sorted(range(len(stages)), key=lambda k: (-stage_w[k], k))
    elif assignment == "rank_l":
        by = sorted(range(len(stages)), key=lambda k: (-stages[k], k))
        order = order[::-1]
    else:
        raise ValueError(f"Shisha: assignment must be rank_w or rank_l, got {assignment!r}")
    out = [0] * len(stages)
    for rank, stage in enumerate(by):
        out[stage] = order[rank]
    return out


def shisha_seed(weights, eps, num_stages: int | None = None,
                assignment: str = "rank_w") -> Config:
    """The seed configuration of Algorithm 1 (N = number of EPs unless given)."""
    n = min(num_stages or len(eps), len(weights))
    if n > len(eps):
        raise ValueError(f"Shisha: {n} stages but only {len(eps)} EPs")
    stages = seed_stages(weights, n)
    return Config(tuple(stages), tuple(assign_eps(stages, weights, eps, assignment)))


def _targets(config: Config, times, slow: int, eps, balance: str) -> list[int]:
    """Stages to move a layer toward, best first: stages on fast EPs, nearest (nfep) or
    lightest (nlfep) first, then the other stages in the same order."""
    if balance == "nfep":
        key = lambda k: (abs(k - slow), times[k], k)  # noqa: E731
    elif balance == "nlfep":
        key = lambda k: (times[k], abs(k - slow), k)  # noqa: E731
    else:
        raise ValueError(f"Shisha: balance must be nfep or nlfep, got {balance!r}")
    others = [k for k in range(config.depth) if k != slow]
    return sorted(others, key=lambda k: (not eps[config.eps[k]].is_fast,) + key(k))


def move_layer(config: Config, src: int, dst: int, chain: bool = True) -> Config:
    """Move one layer off stage ``src`` toward stage ``dst``: with ``chain`` every stage in
    between hands one layer on (net: src -1, dst +1), else only the neighbour of ``src`` on
    the way to ``dst`` takes it."""
    stages = list(config.stages)
    if stages[src] < 2 or src == dst:
        raise ValueError(f"cannot move a layer from stage {src} of {config} to {dst}")
    stages[src] -= 1
    stages[dst if chain else src + (1 if dst > src else -1)] += 1
    return Config(tuple(stages), config.eps)


def swap_eps(config: Config, a: int, b: int) -> Config:
    """``config`` with the EPs of stages ``a`` and ``b`` exchanged."""
    eps = list(config.eps)
    eps[a], eps[b] = eps[b], eps[a]
    return Config(config.stages, tuple(eps))


def _next(evaluator: Evaluator, conf: Config, eps, balance: str) -> Config | None:
    """The next configuration to try: one layer off the slowest stage toward the first
    target whose move gives a configuration not measured yet. When the slowest stage holds a
    single layer on an SEP, swap its EP with a target's FEP instead (our extension:
    Algorithm 2 has no move there). None when nothing new is left."""
    times = evaluator.stage_times(conf)
    slow = max(range(conf.depth), key=lambda k: times[k])
    targets = _targets(conf, times, slow, eps, balance)
    if conf.stages[slow] > 1:
        candidates = [move_layer(conf, slow, t) for t in targets]
    elif not eps[conf.eps[slow]].is_fast:
        candidates = [swap_eps(conf, slow, t) for t in targets if eps[conf.eps[t]].is_fast]
    else:
        candidates = []
    return next((c for c in candidates if c not in evaluator.cache), None)


def _tune(evaluator: Evaluator, conf: Config, eps, balance: str, alpha: int) -> None:
    """Algorithm 2 from ``conf``."""
    best, gamma = evaluator(conf), 0
    while gamma < alpha:
        conf = _next(evaluator, conf, eps, balance)
        if conf is None:
            break
        value = evaluator(conf)
        if value <= best:
            gamma += 1
        else:
            best, gamma = value, 0


def shisha_search(evaluator: Evaluator, weights, eps, heuristic: str = "H3",
                  alpha: int = 10, num_stages: int | None = None,
                  seed: Config | None = None) -> SearchResult:
    """Run Shisha; returns the best configuration it measured.

    Parameters
    ----------
    evaluator : Evaluator
        Measures configurations (modelled or with the real executor).
    weights : sequence of float
        Static layer weights (FLOPs).
    eps : sequence of EPSpec
        The execution places (their classes guide assignment and balancing).
    heuristic : str
        ``H1`` .. ``H4`` of the paper's Table 2 (H3 = rank_w + nlfep, the one the paper
        recommends), or ``all``: tune from each of the four seeds in turn (the paper notes
        trying the choices costs little); every configuration measured is counted.
    alpha : int
        Configurations tried without improvement before stopping.
    seed : Config, optional
        Start here instead of Algorithm 1's seed.
    """
    names = list(HEURISTICS) if heuristic == "all" else [heuristic]
    if any(name not in HEURISTICS for name in names):
        raise ValueError(f"Shisha: unknown heuristic {heuristic!r}; one of "
                         f"{list(HEURISTICS) + ['all']}")
    seeds = []
    for name in names:
        assignment, balance = HEURISTICS[name]
        start = seed or shisha_seed(weights, eps, num_stages, assignment)
        seeds.append(start.to_dict())
        _tune(evaluator, start, eps, balance, alpha)
    logger.info("shisha %s: %d configurations", heuristic, evaluator.evaluated)
    return evaluator.result("shisha", heuristic=heuristic, alpha=alpha, seeds=seeds)
