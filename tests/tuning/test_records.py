"""Which records of a kernel database rank: those timed as the variant's latest run timed
them, per workload, on hand-written histories and record lines."""
import json

from tvm_ios.tuning.records import (COLD, WARM, best_lines, line_timings, mixed,
                                        preferred, ranked_lines)

HISTORY = [
    {"variant": "parallel", "records": 3},  # before cold timing: no "cache", warm
    {"variant": "serial", "records": 2, "cache": "cold"},
    {"variant": "parallel", "records": 5, "cache": "cold"},
]


def _line(workload: int, secs: float, trace=()) -> str:
    return json.dumps([workload, [list(trace), [secs], {"kind": "llvm"}, []]])


def _traced(workload: int, *secs: float) -> str:
    """A record line with a trace (one instruction) and these run times."""
    return json.dumps([workload, [[[["GetSBlock", [], [], []]], []], list(secs),
                                  {"kind": "llvm"}, []]])


def test_each_line_is_timed_as_the_run_that_appended_it():
    assert line_timings(HISTORY, "parallel", 5) == [WARM] * 3 + [COLD] * 2
    assert line_timings(HISTORY, "serial", 2) == [COLD] * 2
    # two lines past the runs listed: a run killed before it wrote its entry, the default
    assert line_timings(HISTORY, "parallel", 7) == [WARM] * 3 + [COLD] * 4
    assert line_timings([], "packed", 2) == [COLD, COLD]


def test_the_latest_run_says_which_timing_ranks():
    assert preferred(HISTORY, "parallel") == COLD
    assert preferred(HISTORY[:1], "parallel") == WARM
    assert preferred(HISTORY, "packed") == COLD  # no run: the tuner's default
    assert mixed(HISTORY, "parallel") and not mixed(HISTORY, "serial")


def test_a_workload_keeps_its_records_of_that_timing_or_else_all():
    lines = [_line(0, 1e-6), _line(1, 1e-6), _line(0, 2e-6), _line(0, 3e-6), _line(2, 5e-6)]
    timings = [WARM, WARM, COLD, COLD, COLD]
    # workload 0 has cold records: its warm one goes; 1 has none: kept; 2 cold: kept
    assert ranked_lines(lines, timings, COLD) == [lines[1], lines[2], lines[3], lines[4]]
    assert ranked_lines(lines, timings, WARM) == [lines[0], lines[1], lines[4]]
    assert ranked_lines(lines, [COLD] * 5, COLD) is None  # nothing left out


def test_a_read_copy_keeps_each_workloads_best_records_as_meta_schedule_ranks_them():
    lines = [_traced(0, 3e-6), _traced(1, 2e-6), _traced(0, 1e-6, 3e-6), _traced(0, 2e-6),
             _traced(1, 1e10), _line(1, 1e-7), _traced(0, 2e-6)]
    # workload 0: means 3, 2, 2, 2 us: the 2 us of line 2 first, then the earlier of equals;
    # workload 1: a failed run (1e10) and an empty trace never rank
    assert best_lines(lines, 1) == [lines[1], lines[2]]
    assert best_lines(lines, 2) == [lines[1], lines[2], lines[3]]
    assert best_lines(lines, 9) == [lines[0], lines[1], lines[2], lines[3], lines[6]]
    assert best_lines(lines[:2], 1) is None  # nothing left out
