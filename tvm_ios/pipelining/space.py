"""The configuration space every pipeline scheduler searches.

A configuration is a number of stages, the layers of each stage (consecutive, in order)
and the EP of each stage (distinct EPs). With L layers and E EPs the space holds
``sum_s C(L-1, s-1) * E! / (E-s)!`` configurations for s = 1 .. min(L, E, max_stages).
"""
from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass

import numpy as np

__all__ = ["Config", "ConfigSpace", "stage_times", "throughput", "layer_distributions"]


@dataclass(frozen=True)
class Config:
    """One pipeline configuration.

    Parameters
    ----------
    stages : tuple of int
        Layers per stage, in pipeline order (each >= 1).
    eps : tuple of int
        EP index of each stage (distinct).
    """

    stages: tuple
    eps: tuple

    def __post_init__(self):
        object.__setattr__(self, "stages", tuple(int(s) for s in self.stages))
        object.__setattr__(self, "eps", tuple(int(e) for e in self.eps))

    @property
    def depth(self) -> int:
        """Number of stages."""
        return len(self.stages)

    def bounds(self) -> list[int]:
        """Layer index where each stage starts, then L."""
        out = [0]
        for count in self.stages:
            out.append(out[-1] + count)
        return out

    def to_dict(self) -> dict:
        """JSON-serialisable form."""
        return {"stages": list(self.stages), "eps": list(self.eps)}

    @classmethod
    def from_dict(cls, data: dict) -> "Config":
        """Inverse of :meth:`to_dict`."""
        return cls(tuple(data["stages"]), tuple(data["eps"]))

    def __str__(self) -> str:
        return " | ".join(f"{n}L@ep{e}" for n, e in zip(self.stages, self.eps))


class ConfigSpace:
    """All configurations of ``num_layers`` layers over ``num_eps`` EPs.

    Parameters
    ----------
    num_layers, num_eps : int
        L and E.
    max_stages : int, optional
        Deepest pipeline considered (default: min(L, E)).
    """

    def __init__(self, num_layers: int, num_eps: int, max_stages: int | None = None):
        if num_layers < 1 or num_eps < 1:
            raise ValueError(f"ConfigSpace: need layers and EPs, got L={num_layers}, "
                             f"E={num_eps}")
        self.num_layers, self.num_eps = num_layers, num_eps
        self.max_stages = min(num_layers, num_eps, max_stages or num_eps)

    def count(self, depth: int) -> int:
        """Configurations with ``depth`` stages."""
        return math.comb(self.num_layers - 1, depth - 1) * math.perm(self.num_eps, depth)

    def size(self) -> int:
        """Configurations in the space."""
        return sum(self.count(s) for s in range(1, self.max_stages + 1))

    def check(self, config: Config) -> Config:
        """Return ``config`` if it belongs to the space, else raise ``ValueError``."""
        problems = []
        if not 1 <= config.depth <= self.max_stages:
            problems.append(f"{config.depth} stages (at most {self.max_stages}: "
                            f"{self.num_eps} EPs)")
        if len(config.eps) != config.depth:
            problems.append("one EP per stage is needed")
        if sum(config.stages) != self.num_layers or min(config.stages, default=0) < 1:
            problems.append(f"stages {config.stages} must be >= 1 and sum to {self.num_layers}")
        if len(set(config.eps)) != len(config.eps) or \
                any(not 0 <= e < self.num_eps for e in config.eps):
            problems.append(f"EPs {config.eps} must be distinct indices below {self.num_eps}")
        if problems:
            raise ValueError(f"configuration {config.to_dict()}: " + "; ".join(problems))
        return config

    def random(self, rng: random.Random) -> Config:
        """A configuration drawn uniformly from the space."""
        depths = list(range(1, self.max_stages + 1))
        depth = rng.choices(depths, weights=[self.count(s) for s in depths])[0]
        cuts = sorted(rng.sample(range(1, self.num_layers), depth - 1))
        bounds = [0] + cuts + [self.num_layers]
        stages = tuple(b - a for a, b in zip(bounds, bounds[1:]))
        return Config(stages, tuple(rng.sample(range(self.num_eps), depth)))

    def neighbours(self, config: Config) -> list[Config]:
        """Configurations one move away: shift a boundary by one layer, swap two stages'
        EPs, move a stage to an unused EP, merge two adjacent stages, split a stage in two
        (onto an unused EP)."""
        out, st, ep = [], list(config.stages), list(config.eps)
        for k in range(len(st) - 1):
            for d in (-1, 1):
                new = st[:]
                new[k] += d
                new[k + 1] -= d
                if min(new[k], new[k + 1]) >= 1:
                    out.append(Config(tuple(new), config.eps))
            out.append(Config(tuple(st[:k] + [st[k] + st[k + 1]] + st[k + 2:]),
                              tuple(ep[:k + 1] + ep[k + 2:])))
        for a in range(len(ep)):
            for b in range(a + 1, len(ep)):
                new = ep[:]
                new[a], new[b] = new[b], new[a]
                out.append(Config(config.stages, tuple(new)))
        unused = [e for e in range(self.num_eps) if e not in ep]
        for k in range(len(ep)):
            for e in unused:
                out.append(Config(config.stages, tuple(ep[:k] + [e] + ep[k + 1:])))
                if len(st) < self.max_stages and st[k] >= 2:
                    half = st[k] // 2
                    out.append(Config(tuple(st[:k] + [half, st[k] - half] + st[k + 1:]),
                                      tuple(ep[:k + 1] + [e] + ep[k + 1:])))
        return out


def stage_times(prefix: np.ndarray, config: Config) -> list[float]:
    """Seconds of each stage; ``prefix[l, e]`` is the time of layers ``< l`` on EP e."""
    bounds = config.bounds()
    return [float(prefix[b, e] - prefix[a, e])
            for a, b, e in zip(bounds, bounds[1:], config.eps)]


def throughput(prefix: np.ndarray, config: Config) -> float:
    """Frames per second of a pipeline: one over its slowest stage."""
    return 1.0 / max(stage_times(prefix, config))


def layer_distributions(num_layers: int, depth: int) -> np.ndarray:
    """Every split of ``num_layers`` consecutive layers into ``depth`` non-empty stages,
    as an ``[n, depth]`` array of layer counts (lexicographic order of the cuts)."""
    if not 1 <= depth <= num_layers:
        return np.zeros((0, depth), dtype=np.int64)
    combos = list(itertools.combinations(range(1, num_layers), depth - 1))
    cuts = np.array(combos, dtype=np.int64).reshape(len(combos), depth - 1)
    n = cuts.shape[0]
    bounds = np.hstack([np.zeros((n, 1), np.int64), cuts, np.full((n, 1), num_layers)])
    return np.diff(bounds, axis=1)
