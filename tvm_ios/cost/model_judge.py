"""Judging concurrent stages in the whole model: keep what the model itself runs faster with.

The stage judges (:func:`~.fallback.stage_judges`) time each concurrent stage alone, its
caches flushed, against its groups in turn. Gains measured so need not add up in the model:
on a Zen 5, NASNet-A's judges kept 17 of 35 concurrent stages, 0.69 ms faster stage by
stage, and the whole model ran 0.90x as fast as with its kernels in turn. :class:`ModelJudge`
asks the model: it ranks the kept stages by their judged gain, builds the whole model with
the best ``n`` of them concurrent for ``n`` = all, half, a quarter, ..., one, none (the rest
in turn), times the builds round-robin on one input, calls back to back as a model runs, and
keeps the fastest; with none, the model is its tuned kernels in turn, so the schedule it
keeps was measured no slower than that. Where the builds trace their calls, the stages are
also priced inside the model (:mod:`.in_situ_judge`: the build with all of them concurrent
against the build with none, call by call), and the schedule keeping just those that gain
there (``IN_SITU``) is one more candidate, timed beside the others.

Each candidate's figure is appended to the stage log as a whole-model record (``stage``
``{"strategy": "model", ...}``) under a key naming the graph, the stages kept, the kernel
database and the thread count; a later build on the same device decides from the log alone
when every candidate is there (``measure=False``), and leaves the schedule as it is when not;
the in-situ candidate's record names its stages (``stage["in_situ"]``), and a log without
one has the candidates measured again where the builds trace.
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
from .fallback import in_turn
from .in_situ_judge import in_situ_keep, stage_blocks
from .log import LogRecord, MeasureLog

__all__ = ["ranked_stages", "candidate_sizes", "keep_only", "ModelJudge", "Verdict", "IN_SITU",
           "judge_module"]

logger = logging.getLogger(__name__)
IN_SITU = "in situ"  # the label of the candidate whose stages were priced in the model


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
    """What :meth:`ModelJudge.judge` decided: ``kept`` of ``ranked`` stages stay concurrent,
    those of candidate ``chosen``; ``figures`` maps each candidate (its count of the ranked
    stages, or ``IN_SITU``) to its whole-model median (us), where known; ``in_situ`` holds
    the blocks the stages were priced by in the model (:func:`~.in_situ_judge.
    stage_blocks`), where traced."""

    ranked: int
    kept: int
    figures: dict = field(default_factory=dict)
    measured: bool = False
    chosen: int | str | None = None
    in_situ: list = field(default_factory=list)

    def __str__(self) -> str:
        seq = self.figures.get(0)
        mine = self.figures.get(self.kept if self.chosen is None else self.chosen)
        timing = f" ({mine:.1f} us against {seq:.1f} us in turn)" if seq and mine else ""
        how = "measured" if self.measured else "logged" if self.figures else "not judged"
        which = " (priced in situ)" if self.chosen == IN_SITU else ""
        return (f"{self.kept} of {self.ranked} concurrent stages kept in the model{which}, "
                f"{how}{timing}")


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
        """``{label: median us}`` of the candidate schedules the log has (the in-situ
        candidate's from its own record, :meth:`in_situ_record`)."""
        out = {}
        for label, schedule in candidates.items():
            record = self.in_situ_record(graph) if label == IN_SITU else \
                self.log.lookup(self.key(graph, schedule), self.target, self.device_key)
            if record is not None:
                out[label] = record.median_us
        return out

    def in_situ_record(self, graph: OpGraph):
        """The latest whole-model record of this graph, kernels and threads whose stages
        were priced in situ (``stage["in_situ"]``: the op lists kept), or None."""
        prefix = f"model-{graph.fingerprint()[:16]}-"
        found = [r for r in self.log.for_device(self.target, self.device_key)
                 if "in_situ" in r.stage and r.key.startswith(prefix)
                 and r.key.endswith(self.tag)]
        return found[-1] if found else None

    def judge(self, graph: OpGraph, schedule: Schedule, decisions: list[dict],
              build: Callable[[Schedule], Callable[[], None]] | None = None,
              most: int = 5) -> tuple[Schedule, Verdict]:
        """The schedule with only the ranked stages the whole model gains from.

        ``build(schedule)`` returns a function running the model built with ``schedule``
        once (and waiting for it); where it also has ``trace()`` and ``stages``
        (:class:`~tvm_ios.runtime.instrument.TracedRun`, ``rProgram kernel -> ops``), the
        stages are also priced in situ (:mod:`.in_situ_judge`) and the schedule keeping
        those that gain there is a candidate too. Without ``build`` only logged figures
        decide, and only when the log has every candidate.
        """
        ranked = ranked_stages(decisions)
        if not ranked:
            return schedule, Verdict(0, 0)
        candidates = {n: keep_only(graph, schedule, set(ranked[:n]))
                      for n in candidate_sizes(len(ranked), most)}
        record = self.in_situ_record(graph)
        if record is not None:
            keep = {tuple(ops) for ops in record.stage["in_situ"]}
            candidates[IN_SITU] = keep_only(graph, schedule, keep)
        figures = self.logged(graph, candidates)
        measured = build is not None and (len(figures) < len(candidates) or record is None)
        blocks: list = []
        if measured:
            candidates.pop(IN_SITU, None)  # priced again here, where the builds trace
            runs = {n: build(s) for n, s in candidates.items()}
            blocks = self._price_in_situ(graph, schedule, ranked, candidates, runs, build)
            figures = self._measure(graph, candidates, runs, len(ranked))
        if len(figures) < len(candidates):
            logger.info("whole-model judge: %d of %d candidates logged, schedule kept as "
                        "the stage judges left it", len(figures), len(candidates))
            return schedule, Verdict(len(ranked), len(ranked))
        best = min(candidates, key=lambda n: (figures[n], str(n)))
        verdict = Verdict(len(ranked), _concurrent_count(candidates[best]), figures,
                          measured, best, blocks)
        logger.info("whole-model judge: %s; candidates %s", verdict,
                    {n: round(v, 1) for n, v in figures.items()})
        out = candidates[best]
        out.stats["model_judge"] = str(verdict)
        return out, verdict

    def _price_in_situ(self, graph, schedule, ranked, candidates, runs, build) -> list:
        """Trace the builds with every ranked stage concurrent and with none, price each
        stage in the model, and add the schedule keeping those that gain as candidate
        ``IN_SITU`` (its run the same candidate's where it is one already)."""
        every, none = runs[len(ranked)], runs[0]
        if not (hasattr(every, "trace") and hasattr(none, "trace")):
            return []
        traces: dict = {len(ranked): [], 0: []}
        for _ in range(self.rounds):
            for n in traces:
                traces[n].append(runs[n].trace())
        blocks = stage_blocks(traces[len(ranked)], traces[0], every.stages)
        keep = in_situ_keep(blocks, ranked)
        candidates[IN_SITU] = keep_only(graph, schedule, keep)
        same = [n for n in runs if _concurrent(candidates[n]) == _concurrent(
            candidates[IN_SITU])]
        runs[IN_SITU] = runs[same[0]] if same else build(candidates[IN_SITU])
        return blocks

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
            stage = {"strategy": "model", "kept": _concurrent_count(candidates[n]),
                     "ranked": ranked}
            if n == IN_SITU:
                stage["in_situ"] = sorted(list(ops) for ops in _concurrent(candidates[n]))
            self.log.append(LogRecord(self.key(graph, candidates[n]), self.target,
                                      self.device_key, secs, figures[n], stage=stage))
        return figures


def _concurrent(schedule: Schedule) -> set:
    """The op tuples of a schedule's concurrent stages of several groups."""
    return {tuple(s.ops) for s in schedule.stages
            if s.strategy == "concurrent" and len(s.groups) > 1}


def _concurrent_count(schedule: Schedule) -> int:
    return len(_concurrent(schedule))


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
        ``lower(candidate_mod) -> (compiled_mod, executable)``: builds a candidate as the
        model will run (rPrograms, tuned kernels), and returns the Relax module it compiled
        (its rProgram kernels name their ops: the stages are priced in situ) beside the
        executable; None decides from logged figures only.
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
    from ..kernels.prepack import rprogram_stages  # noqa: PLC0415
    from ..passes.apply_schedule import record_schedule, schedule_of  # noqa: PLC0415
    from ..runtime.compare import random_inputs  # noqa: PLC0415
    from ..runtime.instrument import TracedRun  # noqa: PLC0415
    from .measure import Measurer  # noqa: PLC0415

    probe = Measurer(target)
    fingerprint = kernels.fingerprint if kernels is not None else "none"
    judge = ModelJudge(log, probe.target_str, probe.device_key, f"-k{fingerprint}-t{threads}")
    built: dict = {}  # the concurrent stages of a candidate -> its executable

    def build(schedule):
        compiled, executable = lower(record_schedule(mod, func_name, schedule))
        built[frozenset(_concurrent(schedule))] = executable
        return TracedRun(executable, random_inputs(mod, func_name),
                         rprogram_stages(compiled), func_name)

    graph = extract(mod[func_name], name=func_name).graph
    schedule, verdict = judge.judge(graph, schedule_of(mod, func_name), decisions,
                                    build if lower is not None else None)
    return (record_schedule(mod, func_name, schedule), verdict,
            built.get(frozenset(_concurrent(schedule))))
