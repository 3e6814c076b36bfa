"""Tuning the kernels a build really calls with TVM's own tuner (meta_schedule).

Four sets of tasks (:mod:`.tasks`), one per variant of a :class:`~.kernel_db.KernelDB`:

* ``parallel``: the fused PrimFuncs of the sequential build (``extract_tasks`` on the module
  after :func:`~..kernels.tuned_build.fuse_for_tuning`), tuned for the whole CPU;
* ``serial``: the PrimFuncs the CPU vDevice inlines into a vEU, i.e. every op (and glue op)
  lowered alone as :func:`~..kernels.tvm_kernels.lower_bindings` lowers it, tuned for one core with
  parallelisation disabled in the search space (``ParallelizeVectorizeUnroll`` with
  ``max_jobs_per_core=-1``), so the schedule found is one a single thread runs.

* ``packed``: the parallel variant's tasks with their weights marked layout-free, tuned with
  meta_schedule's ``RewriteLayout`` post-processor (:mod:`~..kernels.prepack`: the sequential build
  folds the weight rewrite at compile time);
* ``serial-packed``: the serial variant's tasks with their weights marked layout-free, in
  the serial search space plus ``RewriteLayout`` (a vEU kernel's packed weights are folded
  into constants of its op before the kernel is inlined into an rProgram).

The plain variants drop that post-processor, so each packed kernel is chosen against its
plain one by their records (:func:`~..kernels.prepack.mark_packed`).

Candidates are built in this process (:class:`InProcessBuilder`; the stock ``LocalBuilder``
starts a process pool per batch, 20-30 s per task on 2 cores) and timed by ``LocalRunner``
or ``RPCRunner``. Records are appended to the database as they come; a run is resumable:
``trials`` is the total per variant, and records already in the database count. A task with
no record in the database is tuned first, with at least ``cover`` trials, even past that
total: meta_schedule's task scheduler warms up its tasks in turn, so a budget of fewer than
``per-iteration x tasks`` trials left the last tasks with no record at all (NASNet-A had 5 of
55, one an untuned 1x1 convolution taking 45 of the build's 144 ms).
"""
from __future__ import annotations

import logging
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import tvm
from tvm.ir.utils import derived_object

from .. import _tvm
from ..runtime.rpc import alloc_rpc, check_tracker
from .records import COLD, WARM, preferred
from .kernel_db import VARIANTS, KernelDB
from ..kernels.prepack import PLAIN
from .new_records import measure_callbacks
from .tasks import chosen_tasks, kernel_tasks, task_records, untuned_tasks

__all__ = ["InProcessBuilder", "TuneProgress", "tune_kernels", "TuneReport",
           "evaluator_config", "cache_state", "resolved", "timing_for", "last_level_cache"]

logger = logging.getLogger(__name__)
ms = _tvm.ms


@derived_object
class InProcessBuilder(ms.builder.PyBuilder):
    """Builds candidates in the calling process (0.25 s each here; no worker pool)."""

    def build(self, build_inputs):
        results = []
        for item in build_inputs:
            try:  # a packed candidate is timed on packed weights, as the build runs it
                lib = tvm.compile(_tvm.remove_layout_rewrite_block(item.mod),
                                  target=item.target)
                path = os.path.join(tempfile.mkdtemp(prefix="tvm_ios_tune_"), "tmp.so")
                lib.export_library(path)
                results.append(ms.builder.BuilderResult(path, None))
            except Exception as err:  # noqa: BLE001  (a candidate that does not build)
                results.append(ms.builder.BuilderResult(None, f"{type(err).__name__}: {err}"))
        return results


@derived_object
class TuneProgress(ms.measure_callback.PyMeasureCallback):
    """Counts measured candidates; ``report(done, total)`` after each batch."""

    def __init__(self, total: int, report: Callable[[int, int], None] | None = None):
        super().__init__()
        self.total, self.done, self.report = total, 0, report

    def apply(self, task_scheduler, task_id, measure_candidates, builder_results,
              runner_results):
        self.done += len(measure_candidates)
        if self.report is not None:
            self.report(self.done, self.total)


def _space(variant: str):
    rules = list(ms.ScheduleRule.create("llvm"))
    mutators = dict(ms.Mutator.create("llvm"))
    if variant.startswith("serial"):
        rules = [ms.schedule_rule.ParallelizeVectorizeUnroll(-1, 64, [0, 16, 64, 512], True)
                 if isinstance(r, ms.schedule_rule.ParallelizeVectorizeUnroll) else r
                 for r in rules]
        mutators = {m: p for m, p in mutators.items() if "MutateParallel" not in str(m)}
    postprocs = [p for p in ms.Postproc.create("llvm")
                 if variant in PLAIN or not isinstance(p, ms.postproc.RewriteLayout)]
    return ms.space_generator.PostOrderApply(sch_rules=rules, postprocs=postprocs,
                                             mutator_probs=mutators)


@dataclass
class TuneReport:
    """What one variant's tuning did."""

    variant: str
    tasks: int
    trials: int  # measured in this run
    records: int  # in the database afterwards
    wall_s: float


def evaluator_config(settings):
    """How a candidate is timed: cold by default (``settings["cold"]``, :func:`resolved`),
    each of ``cold_repeat`` calls after every argument but the input was flushed from the
    caches, as a kernel runs in a model whose weights (95 MB in Inception V3) do not fit the
    caches: there the summed cold times of its kernels were 4.68 ms for a model taking
    4.77 ms, their warm times 3.34 ms, and warm timing ranks a kernel that re-reads its
    weights from the cache first. Warm: ``number`` calls in a row, at least
    ``min_repeat_ms``."""
    if cache_state(settings) == COLD:
        return ms.runner.EvaluatorConfig(number=1, repeat=settings.get("cold_repeat", 9),
                                         min_repeat_ms=0, enable_cpu_cache_flush=True)
    return ms.runner.EvaluatorConfig(number=settings.get("number", 3), repeat=1,
                                     min_repeat_ms=settings.get("min_repeat_ms", 20),
                                     enable_cpu_cache_flush=False)


def make_runner(rpc, settings, cores: int = 1):
    """meta_schedule's runner, local or RPC, timing as :func:`evaluator_config` says; a
    local one times kernels with ``cores`` threads (the parallel variant's target), not
    TVM's default of half the cores: the databases tuned before that had their parallel
    kernels chosen by one-thread timings (an Inception V3 1x1 convolution: 76 us recorded,
    35 us with both threads)."""
    config = evaluator_config(settings)
    if rpc is None:
        _tvm.worker_threads(cores)
        return ms.runner.LocalRunner(timeout_sec=settings.get("timeout_s", 30),
                                     evaluator_config=config)
    rpc_config = check_tracker(*rpc, timeout_s=settings.get("timeout_s", 30))
    return ms.runner.RPCRunner(rpc_config, config, f_alloc_argument=alloc_rpc)


def tune_kernels(mod, kernels: KernelDB, variants=VARIANTS,
                 trials: int = 500,
                 rpc: tuple | None = None, progress: Callable | None = None,
                 seed: int = 0, anchors_only: bool = True, cover: int = 8,
                 also=(), only=(), **settings) -> list[TuneReport]:
    """Tune ``mod``'s kernels into ``kernels`` until each variant holds ``trials`` records.

    Parameters
    ----------
    mod : IRModule
        The model, weights bound (what the build compiles).
    kernels : KernelDB
        The database (created for this machine's target by the caller).
    variants : sequence of {"parallel", "serial", "packed", "serial-packed"}
        Which kernel sets to tune.
    trials : int
        Total measured candidates per variant, counting the records already there.
    rpc : (host, port, key), optional
        Time on RPC servers of a tracker instead of here.
    progress : callable, optional
        ``progress(variant, done, total)`` after each measured batch.
    anchors_only : bool
        Tune only kernels with a convolution or matmul (:data:`ANCHORS`).
    cover : int
        Trials at least for each task the database has no record of, tuned first, beyond
        ``trials`` if need be (0: only ``trials``).
    also : sequence of IRModule
        The scheduled builds' modules (:func:`kernel_tasks`): their kernels that the
        sequential build does not call are tuned as well.
    only : sequence of str
        Tune only the kernels whose task name matches one of these shell-style patterns
        (:func:`~.tasks.chosen_tasks`); ``trials`` then counts their records only.
    """
    reports, runners = [], {}

    def runner_for(state, variant_settings):  # one pool for the variants timed alike
        if state not in runners:
            runners[state] = make_runner(rpc, variant_settings, tuning_cores(kernels))
        return runners[state]

    for variant in variants:
        variant_settings = resolved(settings, kernels, variant)
        state = cache_state(variant_settings)
        tasks = chosen_tasks(kernel_tasks(mod, kernels, variant, anchors_only, also), only)
        counted = tasks if only else None  # (--kernel: the chosen kernels' records only)
        before = _records(kernels, variant, counted)
        todo = max(0, trials - before)
        missing = untuned_tasks(tasks, kernels, variant) if cover > 0 else []
        start = time.perf_counter()
        # (a fresh database whose budget pays the warm-up round tunes every task anyway)
        if missing and (before or len(tasks) * _per_iter(todo, len(tasks)) > todo):
            logger.info("%d of %d %s tasks have no record: %d trials for them first",
                        len(missing), len(tasks), variant, len(missing) * cover)
            runner = runner_for(state, variant_settings)
            _tune_variant(missing, kernels, variant, len(missing) * cover, runner, progress,
                          seed, per_iter=cover)
            todo = max(0, trials - _records(kernels, variant, counted))
        if tasks and todo:
            runner = runner_for(state, variant_settings)
            _tune_variant(tasks, kernels, variant, todo, runner, progress, seed)
        wall = time.perf_counter() - start
        after = _records(kernels, variant, counted)
        reports.append(TuneReport(variant, len(tasks), after - before, after, wall))
        # "records": the file's lines after the run, which rank by its timing (line_timings)
        lines = after if counted is None else kernels.num_records(variant)
        kernels.meta.setdefault("tuning", []).append(
            {"variant": variant, "tasks": len(tasks), "trials": after - before,
             "records": lines, "wall_s": round(wall, 1),
             "rpc": bool(rpc), "cache": state,
             "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
             **({"kernels": list(only), "kernel_records": after} if only else {})})
        kernels.save_meta()
    return reports


def _records(kernels: KernelDB, variant: str, tasks=None) -> int:
    """The variant's records: all of them, or those of ``tasks`` only."""
    return kernels.num_records(variant) if tasks is None else \
        task_records(tasks, kernels, variant)


def cache_state(settings) -> str:
    """``"cold"`` or ``"warm"``: how :func:`evaluator_config` times candidates."""
    return COLD if settings.get("cold", True) is not False else WARM


def resolved(settings, kernels: KernelDB, variant: str) -> dict:
    """``settings`` with ``cold`` decided: as given, else as the variant's latest run timed
    (:func:`~.records.preferred`; a new database: cold), so that a search or a cover run
    on a database adds records of the timing its builds rank."""
    if settings.get("cold") is not None:
        return settings
    return {**settings, "cold": preferred(kernels.meta.get("tuning"), variant) == COLD}


def timing_for(weight_bytes: int, cache_bytes: int | None = None) -> str:
    """How to time a model's kernels: ``"cold"`` where its weights exceed the last-level
    cache (``cache_bytes``, default this CPU's, :func:`last_level_cache`), so every call
    reads them from memory, ``"warm"`` where they fit and stay in it between calls. On the
    Zen 4 (32 MB): SqueezeNet at 64 px, 4.9 MB of weights, ran 0.50 ms with its kernels
    ranked by cold times and 0.47 by warm ones (a probe); Inception V3, 69 MB, ran 1.09x
    as fast with them ranked by cold times as with the warm records ranked first."""
    cache_bytes = last_level_cache() if cache_bytes is None else cache_bytes
    return COLD if not cache_bytes or weight_bytes > cache_bytes else WARM


def last_level_cache() -> int | None:
    """Bytes of this CPU's last-level cache (Linux sysfs), None where unknown."""
    sizes, units = [], {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            level = int((index / "level").read_text())
            text = (index / "size").read_text().strip()
        except (OSError, ValueError):
            continue
        size = int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)
        sizes.append((level, size))
    return max(sizes)[1] if sizes else None


def tuning_cores(kernels: KernelDB) -> int:
    """The cores the parallel kernels are tuned for (their target's num-cores): the size of
    the one runner pool that times every variant (serial kernels have no parallel loop)."""
    return int(kernels.target_for("parallel").attrs.get("num-cores", 1))


def _per_iter(todo: int, num_tasks: int) -> int:
    """Candidates per task and round: the warm-up round (every task once) costs
    ``num_tasks`` of them."""
    return min(64, max(8, todo // max(1, num_tasks)))


def _tune_variant(tasks, kernels, variant, todo, runner, progress, seed,
                  per_iter: int | None = None) -> None:
    work_dir = tempfile.mkdtemp(prefix="tvm_ios_tune_log_")
    # a smaller evolutionary search than TVM's default (population 512, 4 generations):
    # on 2 shared cores the default spends ~50 s per task choosing its first candidates
    strategy = ms.search_strategy.EvolutionarySearch(
        population_size=64, init_min_unmeasured=8, genetic_num_iters=1)
    contexts, weights = _tvm.tune_contexts(
        tasks, work_dir, space=_space(variant), strategy=strategy,
        num_threads=len(_tvm.usable_cores()), seed=seed)
    # a task's measured candidates are committed when the scheduler comes back to it: a
    # batch of `per_iter` each, so `trials` = tasks x per_iter tunes every task once
    per_iter = per_iter or _per_iter(todo, len(contexts))
    callback = TuneProgress(todo, None if progress is None else
                            (lambda done, total: progress(variant, done, total)))
    logger.info("tuning %d %s tasks, %d trials", len(contexts), variant, todo)
    ms.tune.tune_tasks(tasks=contexts, task_weights=weights, work_dir=work_dir,
                       max_trials_global=todo, num_trials_per_iter=per_iter,
                       builder=InProcessBuilder(), runner=runner,
                       database=kernels.database(variant, writable=True), cost_model="xgb",
                       measure_callbacks=measure_callbacks(callback),  # (each trace once)
                       task_scheduler="gradient")
