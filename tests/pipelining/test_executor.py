"""Executor: no lost or reordered frames; clean stop naming the stage that failed."""
import random
import threading
import time

import pytest

from tvm_ios.pipelining.executor import PipelineError, PipelineExecutor, StageSpec


def stage(name, fn):
    return StageSpec(name, lambda: fn)


def jitter(offset, seed):
    rng = random.Random(seed)

    def fn(value):
        time.sleep(rng.uniform(0, 0.002))
        return value * 10 + offset
    return fn


def test_frames_come_out_once_and_in_order():
    stages = [stage(f"s{k}", jitter(k, k)) for k in range(4)]
    run = PipelineExecutor(stages, queue_size=1).run(list(range(60)))
    assert run.outputs == [((((i * 10) * 10 + 1) * 10 + 2) * 10 + 3) for i in range(60)]
    assert run.throughput > 0 and len(run.stage_seconds) == 4


def test_stages_overlap():
    def slow(value):
        time.sleep(0.02)
        return value
    frames = list(range(20))
    piped = PipelineExecutor([stage("a", slow), stage("b", slow)]).run(frames)
    alone = PipelineExecutor([stage("ab", lambda v: slow(slow(v)))]).run(frames)
    assert piped.outputs == alone.outputs == frames
    assert piped.seconds < 0.8 * alone.seconds  # ideal 21 vs 40 sleeps


def test_exception_stops_cleanly_and_names_stage():
    before = threading.active_count()

    def boom(value):
        if value == 7:
            raise ZeroDivisionError("bad frame")
        return value
    stages = [stage("first", lambda v: v), stage("middle", boom),
              stage("last", lambda v: time.sleep(0.001) or v)]
    start = time.perf_counter()
    with pytest.raises(PipelineError, match="stage 'middle' failed on frame 7") as info:
        PipelineExecutor(stages, queue_size=1).run(list(range(1000)))
    assert info.value.stage == "middle" and info.value.frame == 7
    assert isinstance(info.value.cause, ZeroDivisionError)
    assert time.perf_counter() - start < 5
    assert threading.active_count() == before


def test_setup_failure_is_reported():
    def make():
        raise RuntimeError("no device")
    with pytest.raises(PipelineError, match="'b' failed while starting"):
        PipelineExecutor([stage("a", lambda v: v), StageSpec("b", make)]).run([1, 2, 3])


def test_no_stages():
    with pytest.raises(ValueError, match="no stages"):
        PipelineExecutor([])
