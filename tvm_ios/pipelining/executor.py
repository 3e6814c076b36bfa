"""A pipeline executor: frames flow through stages concurrently over bounded queues.

Each stage runs in its own thread (TVM releases the GIL while a compiled function runs, and
each thread has its own TVM thread pool, so a stage's thread is the head of its EP's thread
group). Frames carry their index; the executor checks that every frame comes out once and
in order. A stage that raises stops the whole pipeline: the other stages drain out, every
thread is joined, and :class:`PipelineError` names the stage and the frame.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

__all__ = ["StageSpec", "PipelineExecutor", "PipelineRun", "PipelineError"]

logger = logging.getLogger(__name__)

_END = object()
_POLL = 0.02


class PipelineError(RuntimeError):
    """A stage failed; ``stage`` is its name, ``frame`` the frame index (None at setup)."""

    def __init__(self, stage: str, frame: int | None, cause: BaseException):
        where = "while starting" if frame is None else f"on frame {frame}"
        super().__init__(f"pipeline stage {stage!r} failed {where}: "
                         f"{type(cause).__name__}: {cause}")
        self.stage, self.frame, self.cause = stage, frame, cause


@dataclass
class StageSpec:
    """One stage: ``make()`` runs in the stage's thread and returns ``fn(value) -> value``."""

    name: str
    make: Callable[[], Callable[[Any], Any]]


@dataclass
class PipelineRun:
    """Outputs in frame order, wall seconds, frames/s and each stage's busy seconds/frame."""

    outputs: list
    seconds: float
    throughput: float
    stage_seconds: list = field(default_factory=list)


def _put(q: queue.Queue, item, stop: threading.Event) -> bool:
    while not stop.is_set():
        try:
            q.put(item, timeout=_POLL)
            return True
        except queue.Full:
            continue
    return False


def _get(q: queue.Queue, stop: threading.Event):
    while not stop.is_set():
        try:
            return q.get(timeout=_POLL)
        except queue.Empty:
            continue
    return _END


class PipelineExecutor:
    """Run frames through ``stages`` concurrently.

    Parameters
    ----------
    stages : sequence of StageSpec
        In pipeline order.
    queue_size : int
        Capacity of each queue between stages (frames in flight per hop).
    """

    def __init__(self, stages: Sequence[StageSpec], queue_size: int = 2):
        if not stages:
            raise ValueError("PipelineExecutor: no stages")
        self.stages = list(stages)
        self.queue_size = max(1, int(queue_size))

    def _worker(self, k, ready, qs, stop, errors, busy):
        spec = self.stages[k]
        try:
            fn = spec.make()
        except BaseException as err:  # noqa: BLE001  (reported as PipelineError)
            errors.append((k, None, err))
            stop.set()
            ready.wait()
            return
        ready.wait()
        while True:
            item = _get(qs[k], stop)
            if item is _END:
                _put(qs[k + 1], _END, stop)
                return
            index, value = item
            start = time.perf_counter()
            try:
                value = fn(value)
            except BaseException as err:  # noqa: BLE001
                errors.append((k, index, err))
                stop.set()
                return
            busy[k] += time.perf_counter() - start
            if not _put(qs[k + 1], (index, value), stop):
                return

    def _feed(self, frames, q, ready, stop, started):
        ready.wait()
        started.append(time.perf_counter())
        for index, frame in enumerate(frames):
            if not _put(q, (index, frame), stop):
                return
        _put(q, _END, stop)

    def run(self, frames: Sequence) -> PipelineRun:
        """Push every frame through; returns outputs in order (raises PipelineError)."""
        n = len(self.stages)
        qs = [queue.Queue(self.queue_size) for _ in range(n + 1)]
        stop, ready = threading.Event(), threading.Barrier(n + 1)
        errors, busy, started = [], [0.0] * n, []
        threads = [threading.Thread(target=self._worker, name=f"stage-{s.name}", daemon=True,
                                    args=(k, ready, qs, stop, errors, busy))
                   for k, s in enumerate(self.stages)]
        threads.append(threading.Thread(target=self._feed, daemon=True, name="feeder",
                                        args=(frames, qs[0], ready, stop, started)))
        for thread in threads:
            thread.start()
        outputs = self._collect(qs[n], stop, len(frames))
        end = time.perf_counter()
        for thread in threads:
            thread.join()
        if errors:
            k, index, err = min(errors, key=lambda e: (e[1] is not None, e[1] or 0, e[0]))
            raise PipelineError(self.stages[k].name, index, err) from err
        seconds = end - started[0]
        count = max(len(outputs), 1)
        return PipelineRun(outputs, seconds, len(outputs) / seconds if seconds > 0 else 0.0,
                           [b / count for b in busy])

    @staticmethod
    def _collect(q, stop, expected):
        outputs = []
        while True:
            item = _get(q, stop)
            if item is _END:
                break
            index, value = item
            if index != len(outputs):
                stop.set()
                raise RuntimeError(f"pipeline reordered frames: got {index}, expected "
                                   f"{len(outputs)}")
            outputs.append(value)
        if not stop.is_set() and len(outputs) != expected:
            raise RuntimeError(f"pipeline lost frames: {len(outputs)} of {expected} came out")
        return outputs
