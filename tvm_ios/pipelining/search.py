"""What every pipeline scheduler shares: a counted, cached, clocked evaluator and a result.

A scheduler asks an :class:`Evaluator` for the throughput of configurations. The evaluator
wraps a *measure* strategy (``measure(config) -> (frames/s, seconds it took)``): with
modelled layer times the seconds are those an online tuner would spend running the
configuration (``frames`` frames plus the pipeline fill); with the real executor they are
the wall time of the run. The evaluator's clock is the scheduler's own wall time plus the
seconds spent measuring, so convergence times compare algorithms the way the paper does.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np

from .layer_times import LayerTimes
from .space import Config, ConfigSpace, stage_times

__all__ = ["Evaluator", "ModelledMeasure", "SearchResult"]

logger = logging.getLogger(__name__)


class ModelledMeasure:
    """Throughput of a configuration from a layer-time table.

    Parameters
    ----------
    times : LayerTimes
        Seconds per layer and EP.
    frames : int
        Frames an online tuner would run to measure one configuration.
    """

    def __init__(self, times: LayerTimes, frames: int = 10):
        self.times, self.frames = times, frames
        self.prefix = np.vstack([np.zeros((1, times.num_eps)), np.cumsum(times.seconds, 0)])

    def __call__(self, config: Config) -> tuple[float, float]:
        stages = stage_times(self.prefix, config)
        period = max(stages)
        return 1.0 / period, self.frames * period + sum(stages), stages


class Evaluator:
    """Cached evaluation with a count, a clock and a convergence trace.

    Parameters
    ----------
    space : ConfigSpace
        Every configuration asked for is checked against it.
    measure : callable
        ``measure(config) -> (throughput, seconds, stage_seconds)``: frames per second, the
        seconds the measurement took, and each stage's seconds per frame.
    """

    def __init__(self, space: ConfigSpace, measure):
        self.space, self.measure = space, measure
        self.cache: dict[Config, float] = {}
        self.stages: dict[Config, list[float]] = {}
        self.bulk = 0
        self.trace: list[tuple[float, int, float]] = []
        self.best: Config | None = None
        self.best_throughput = 0.0
        self.best_at = 0.0
        self._start = time.perf_counter()
        self._wall_in_measure = 0.0
        self._charged = 0.0

    @property
    def evaluated(self) -> int:
        """Distinct configurations evaluated one by one."""
        return len(self.cache)

    def clock(self) -> float:
        """Scheduler wall time plus measuring time, in seconds."""
        wall = time.perf_counter() - self._start - self._wall_in_measure
        return wall + self._charged

    def __call__(self, config: Config) -> float:
        if config in self.cache:
            return self.cache[config]
        self.space.check(config)
        start = time.perf_counter()
        value, seconds, stages = self.measure(config)
        self._wall_in_measure += time.perf_counter() - start
        self._charged += seconds
        self.stages[config] = list(stages)
        self.record(config, value)
        return value

    def stage_times(self, config: Config) -> list[float]:
        """Seconds per frame of each stage of ``config`` (measured on first use)."""
        self(config)
        return self.stages[config]

    def record(self, config: Config, value: float) -> None:
        """Store one measured configuration."""
        self.cache[config] = value
        self._improve(config, value)

    def record_bulk(self, best: Config, value: float, count: int, seconds: float) -> None:
        """Account for ``count`` configurations measured at once in ``seconds`` (schedulers
        that evaluate in bulk), ``best`` being the best of them with throughput ``value``."""
        self._charged += seconds
        self.bulk += count
        self._improve(best, value)

    def _improve(self, config: Config, value: float) -> None:
        if value > self.best_throughput:
            self.best, self.best_throughput, self.best_at = config, value, self.clock()
        self.trace.append((self.clock(), self.evaluated + self.bulk, self.best_throughput))

    def result(self, algorithm: str, **extra) -> "SearchResult":
        """The best configuration found so far, as a :class:`SearchResult`."""
        evaluated = self.evaluated + self.bulk
        return SearchResult(algorithm, self.best, self.best_throughput, evaluated,
                            self.space.size(), self.clock(), self.best_at,
                            time.perf_counter() - self._start, self.trace, extra)


@dataclass
class SearchResult:
    """What a scheduler reports.

    ``seconds`` is the clock when the scheduler stopped, ``converge_seconds`` when it first
    held its final best; ``wall_seconds`` is the real time the call took here.
    """

    algorithm: str
    configuration: Config | None
    throughput: float
    evaluated: int
    space_size: int
    seconds: float
    converge_seconds: float
    wall_seconds: float
    trace: list = field(default_factory=list, repr=False)
    extra: dict = field(default_factory=dict)

    @property
    def explored(self) -> float:
        """Fraction of the space evaluated."""
        return self.evaluated / self.space_size if self.space_size else 0.0

    def to_dict(self, trace: bool = True) -> dict:
        """JSON-serialisable dict (``throughput``, ``configuration``, ``evaluated``,
        ``space_size``, ``seconds`` ...)."""
        out = {"algorithm": self.algorithm, "throughput": self.throughput,
               "configuration": self.configuration.to_dict() if self.configuration else None,
               "evaluated": self.evaluated, "space_size": self.space_size,
               "explored": self.explored, "seconds": self.seconds,
               "converge_seconds": self.converge_seconds, "wall_seconds": self.wall_seconds}
        out.update(self.extra)
        if trace:
            out["trace"] = [list(t) for t in self.trace]
        return out

    def __str__(self) -> str:
        return (f"{self.algorithm}: {self.throughput:.3f} frames/s with {self.configuration} "
                f"({self.evaluated} of {self.space_size} configs, {self.explored:.3%}; "
                f"{self.seconds:.1f} s, best at {self.converge_seconds:.1f} s)")
