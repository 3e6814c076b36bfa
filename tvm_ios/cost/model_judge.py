"""Judging concurrent stages in the whole model: keep what the model itself runs faster with.

The stage judges (:func:`~.fallback.stage_judges`) time each concurrent stage alone, its
caches flushed, against its groups in turn. Gains measured so need not add up in the model:
on a Zen 5, NASNet-A's judges kept 17 of 35 concurrent stages, 0.69 ms faster stage by
stage, and the whole model ran 0.90x as fast as with its kernels in turn. :class:`ModelJudge`
asks the model: it ranks the kept stages by their judged gain, builds the whole model with
the best ``n`` of them concurrent for ``n`` = all, half, a quarter, ..., one, none (the rest
in turn), times the builds round-robin on one input, calls back to back as a model runs, and
keeps the fastest; with none, the model is its tuned kernels in turn, so the schedule it
keeps was measured no slower than that.

Each candidate's figure is appended to the stage log as a whole-model record (``stage``
``{"strategy": "model", ...}``) under a key naming the graph, the stages kept, the kernel
database and the thread count; a later build on the same device decides from the log alone
when every candidate is there (``measure=False``), and leaves the schedule as it is when not.
"""
from __future__ import annotations

import hashlib
import logging
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable

from ..graph.opgraph import OpGraph
from ..schedule.schedule import Schedule
from .stage_judges import in_turn
from .log import LogRecord, MeasureLog

__all__ = ["ranked_stages", "candidate_sizes", "keep_only", "ModelJudge", "Verdict",
           "judge_module"]

logger = logging.getLogger(__name__)


def ranked_stages(decisions: list[dict]) -> list[tuple]:
    """The ops of the concurrent stages the stage judges kept, largest judged gain
    (``sequential_us - concurrent_us``) first."""
    kept = [d for d in decisions if d["kept"] == "concurrent"]
    kept.sort(key=lambda d: d["sequential_us"] - d["concurrent_us"], reverse=True)
    return [tuple(d["ops"]) for d in kept]


def candidate_sizes(n: int, most: int = 5) -> list[int]:
    """How many of ``n`` ranked stages each candidate keeps: n, n/2, n/4, ..., 1 (at most
    ``most`` - 1 of them), then 0."""
    sizes, k = [], n
    while k > 0 and len(sizes) < most - 1:
        sizes.append(k)
        k //= 2
    return sizes + [0]


def keep_only(graph: OpGraph, schedule: Schedule, keep) -> Schedule:
    """``schedule`` with every concurrent stage of several groups whose ops are not in
    ``keep`` (a set of op tuples) run in turn, op by op."""
    stages = []
    for stage in schedule.stages:
        several = stage.strategy == "concurrent" and len(stage.groups) > 1
        if several and tuple(stage.ops) not in keep:
            stages.extend(in_turn(graph, stage))
        else:
            stages.append(stage)
    return Schedule(stages, dict(schedule.graph), dict(schedule.params), dict(schedule.stats))


@dataclass
class Verdict:
    """What :meth:`ModelJudge.judge` decided: ``kept`` of ``ranked`` stages stay concurrent;
    ``figures`` maps each candidate's count to its whole-model median (us), where known."""

    ranked: int
    kept: int
    figures: dict = field(default_factory=dict)
    measured: bool = False

    def __str__(self) -> str:
        seq = self.figures.get(0)
        mine = self.figures.get(self.kept)
        timing = f" ({mine:.1f} us against {seq:.1f} us in turn)" if seq and mine else ""
        how = "measured" if self.measured else "logged" if self.figures else "not judged"
        return f"{self.kept} of {self.ranked} concurrent stages kept in the model, {how}{timing}"


class ModelJudge:
    """Whole-model judge of the concurrent stages of a schedule (see the module docstring).

    Parameters
    ----------
    log : MeasureLog, str or Path, optional
        Stage log the whole-model figures are read from and appended to.
    target, device_key : str
        What the figures are logged under (a :class:`~.measure.Measurer`'s, warm).
    tag : str
        What else names a build: the kernel database's fingerprint and the thread count.
    rounds, calls : int
        Round-robin rounds, and timed calls per candidate and round (after one untimed).
    """

    def __init__(self, log, target: str, device_key: str, tag: str = "", rounds: int = 10,
                 calls: int = 5):
        self.log = log if isinstance(log, MeasureLog) else MeasureLog(log)
        self.target, self.device_key, self.tag = target, device_key, tag
        self.rounds, self.calls = rounds, calls

    def key(self, graph: OpGraph, schedule: Schedule) -> str:
        """The log key of the model built with ``schedule``: its concurrent stages (the
        other ops run one by one, in whichever order the graph allows)."""
        stages = sorted(sorted(tuple(g) for g in s.groups) for s in schedule.stages
                        if s.strategy == "concurrent" and len(s.groups) > 1)
        digest = hashlib.sha1(repr(stages).encode()).hexdigest()[:12]
        return f"model-{graph.fingerprint()[:16]}-{digest}{self.tag}"

    def logged(self, graph: OpGraph, candidates: dict) -> dict:
        """``{n: median us}`` of the candidate schedules the log has."""
        out = {}
        for n, schedule in candidates.items():
            record = self.log.lookup(self.key(graph, schedule), self.target, self.device_key)
            if record is not None:
                out[n] = record.median_us
        return out

    def judge(self, graph: OpGraph, schedule: Schedule, decisions: list[dict],
              build: Callable[[Schedule], Callable[[], None]] | None = None,
              most: int = 5) -> tuple[Schedule, Verdict]:
        """The schedule with only the ranked stages the whole model gains from.

        ``build(schedule)`` returns a function running the model built with ``schedule``
        once (and waiting for it); without it only logged figures decide, and only when the
        log has every candidate.
        """
        ranked = ranked_stages(decisions)
        if not ranked:
            return schedule, Verdict(0, 0)
        candidates = {n: keep_only(graph, schedule, set(ranked[:n]))
                      for n in candidate_sizes(len(ranked), most)}
        figures = self.logged(graph, candidates)
        measured = build is not None and len(figures) < len(candidates)
        if measured:
            runs = {n: build(s) for n, s in candidates.items()}
            figures = self._measure(graph, candidates, runs, len(ranked))
        if len(figures) < len(candidates):
            logger.info("whole-model judge: %d of %d candidates logged, schedule kept as "
                        "the stage judges left it", len(figures), len(candidates))
            return schedule, Verdict(len(ranked), len(ranked))
        best = min(candidates, key=lambda n: (figures[n], n))
        verdict = Verdict(len(ranked), best, figures, measured)
        logger.info("whole-model judge: %s; candidates %s", verdict,
                    {n: round(v, 1) for n, v in figures.items()})
        out = candidates[best]
        out.stats["model_judge"] = str(verdict)
        return out, verdict

    def _measure(self, graph: OpGraph, candidates: dict, runs: dict, ranked: int) -> dict:
        """Time the candidates round-robin, log and return their medians (us)."""
        samples: dict = {n: [] for n in runs}
        for _ in range(self.rounds):
            for n, run in runs.items():
                run()  # untimed: the previous candidate's data leaves the caches
                for _ in range(self.calls):
                    start = time.perf_counter()
                    run()
                    samples[n].append(time.perf_counter() - start)
        figures = {}
        for n, secs in samples.items():
            figures[n] = statistics.median(secs) * 1e6
            self.log.append(LogRecord(
                self.key(graph, candidates[n]), self.target, self.device_key, secs,
                figures[n], stage={"strategy": "model", "kept": n, "ranked": ranked}))
        return figures


def judge_module(mod, decisions: list[dict], lower=None, log=None, target="llvm", kernels=None,
                 threads: int = 1, func_name: str = "main") -> tuple:
    """``mod``, its recorded schedule judged in the whole model (:class:`ModelJudge`).

    Parameters
    ----------
    mod : IRModule
        The module with the schedule its rPrograms follow recorded
        (:func:`~.fallback.rprogram_schedule`), weights bound or not.
    decisions : list of dict
        The stage judges' decisions (:func:`~.fallback.sequential_fallback`).
    lower : callable, optional
        ``lower(candidate_mod) -> executable``: builds a candidate as the model will run
        (rPrograms, tuned kernels); None decides from logged figures only.
    log, target, kernels, threads
        The stage log; the target and kernel database the candidates are built with, and
        TVM's pool size (they name the figures in the log).

    Returns
    -------
    (IRModule, Verdict, executable or None)
        The module with the kept schedule recorded, the verdict, and the chosen
        candidate's executable when candidates were built.
    """
    from ..graph.extract import extract  # noqa: PLC0415  (passes and runtime sit above)
    from ..passes.apply_schedule import record_schedule, schedule_of  # noqa: PLC0415
    from ..runtime.compare import caller, random_inputs  # noqa: PLC0415
    from .stage_timing import Measurer  # noqa: PLC0415

    probe = Measurer(target)
    fingerprint = kernels.fingerprint if kernels is not None else "none"
    judge = ModelJudge(log, probe.target_str, probe.device_key, f"-k{fingerprint}-t{threads}")
    built: dict = {}

    def build(schedule):
        built[id(schedule)] = lower(record_schedule(mod, func_name, schedule))
        return caller(built[id(schedule)], random_inputs(mod, func_name))

    graph = extract(mod[func_name], name=func_name).graph
    schedule, verdict = judge.judge(graph, schedule_of(mod, func_name), decisions,
                                    build if lower is not None else None)
    return record_schedule(mod, func_name, schedule), verdict, built.get(id(schedule))
