"""The CPU table's timing loop and report (``benchmarks/cpu_latency.py`` and
``cpu_latency_report.py``): each round's median kept, ratios paired round by round."""
import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name: str, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))  # cpu_latency imports cpu_latency_report
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


def _row(rounds: dict) -> dict:
    return {col: {"median_ms": float(np.median(ms)), "round_ms": ms} for col, ms in rounds.items()}


def test_a_machine_that_slows_between_rounds_moves_both_sides_of_a_paired_ratio(monkeypatch):
    report = _load("cpu_latency_report", monkeypatch)
    # ours is 1.25x faster than the baseline in four rounds of five; the machine slowed
    # down 2x for the last two rounds, and for ours already in the third
    row = _row({"ONNX Runtime sequential": [10.0, 10.0, 10.0, 20.0, 20.0],
                "TVM tuned sequential": [12.0, 12.0, 12.0, 24.0, 24.0],
                "tvm-ios rProgram (tuned)": [8.0, 8.0, 16.0, 16.0, 16.0]})
    assert report._ratio(row, "tvm-ios rProgram (tuned)", report.BASELINES) == 10.0 / 16.0
    assert report.paired(row, "tvm-ios rProgram (tuned)", report.BASELINES) == (1.25, 0.625,
                                                                                  1.25)
    median, least, most = report.paired(row, "tvm-ios rProgram (tuned)",
                                         "TVM tuned sequential")
    assert (median, least, most) == (1.5, 0.75, 1.5)
    line = " ".join(report._paired_line("m", "2", row))
    assert "best baseline 1.25x (0.62-1.25)" in line and "TVM tuned sequential 1.50x" in line
    assert "schedule's share" not in line  # no tvm-ios sequential column in this row


def test_the_page_shows_the_environment_the_run_recorded(monkeypatch):
    report = _load("cpu_latency_report", monkeypatch)
    row = {"ONNX Runtime sequential": {"median_ms": 4.0}}
    prov = {"date": "d", "cpu": "c", "commit": "abc", "command": "python benchmarks/x.py",
            "environment": {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}}
    doc = {"provenance": prov, "results": {"m": {"image_size": 32, "threads": {"2": row},
                                                 "info": {}}}}
    page = report.render(doc, None, "r.json")
    assert "command: `GLIBC_TUNABLES=glibc.malloc.hugetlb=1 python benchmarks/x.py`" in page
    del prov["environment"]
    assert "command: `python benchmarks/x.py`" in report.render(doc, None, "r.json")


def test_results_without_rounds_render_as_before(monkeypatch):
    report = _load("cpu_latency_report", monkeypatch)
    row = {"ONNX Runtime sequential": {"median_ms": 4.0},
           "tvm-ios rProgram (tuned)": {"median_ms": 5.0}}
    assert report.paired(row, "tvm-ios rProgram (tuned)", report.BASELINES) is None
    assert report._paired_line("m", "2", row) == []
    page = report.render({"results": {"m": {"image_size": 32, "threads": {"2": row}, "info": {}}}}, None,
                         "r.json")
    assert "| m (32 px) |" in page and "0.80x" in page and "paired" not in page
    header = next(line for line in page.splitlines() if line.startswith("| model |"))
    # the model, the 2 columns measured, the 2 ratios
    assert header.count("|") == 6 and "ONNX Runtime sequential" in header
    assert "| m (32 px) | 4.00 | 5.00 | 0.80x | n/a |" in page  # no blank cells of missing columns
    rounds = {"2": _row({"ONNX Runtime sequential": [4.0, 4.0], "tvm-ios sequential (tuned)":
                         [5.0, 6.0], "tvm-ios rProgram (tuned)": [5.0, 5.0]})}
    page = report.render({"results": {"m": {"image_size": 32, "threads": rounds, "info": {}}}}, None, "r")
    assert "m, 2 threads, rProgram paired round by round (the median of the 2 rounds'" in page
    assert "schedule's share 1.10x (1.00-1.20)" in page


def test_the_timing_loop_keeps_each_rounds_median(monkeypatch):
    bench = _load("cpu_latency", monkeypatch)
    reference = np.ones(3, "float32")
    calls = {"n": 0}

    def slow_then_fast(x):
        calls["n"] += 1
        time.sleep(0.006 if calls["n"] <= 9 else 0.0005)  # the check, 2 warm-ups, 6 timed
        return reference

    runners = {"tvm-ios rProgram (tuned)": {2: lambda: slow_then_fast}}
    args = argparse.Namespace(rounds=2, repeat=6, tolerance=1e-3)
    out = bench.time_columns(runners, 2, reference, reference, args)
    col = out["tvm-ios rProgram (tuned)"]
    assert len(col["round_ms"]) == 2 and col["samples"] == 12
    assert col["round_ms"][0] > 4.0 > 2.5 > col["round_ms"][1]  # not the running median
    assert out["TVM default"] == {"error": "not run (package missing or --skip-compile)"}


def test_each_floor_is_measured_per_thread_count_and_a_failure_is_reported(monkeypatch):
    bench = _load("cpu_latency", monkeypatch)
    from tvm import relax

    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 2, 4, 4), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.conv2d(x, relax.const(np.ones((2, 2, 1, 1), "float32"))))
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    floors = bench._floors(bb.get(), [1], bench.compute_floor)
    assert floors["1"]["gflop"] == 2 * 32 * 2 / 1e9 and floors["1"]["floor_ms"] > 0
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(relax.op.nn.relu(x)))
        bb.emit_func_output(out)
    no_weights = bench._floors(bb.get(), [1], bench.memory_floor)
    assert no_weights == {"1": {"error": "ValueError: the module has no bound weights (bind "
                                         "its parameters first)"}}


def test_the_kernel_roofline_uses_the_floors_rates_at_the_records_threads(monkeypatch):
    bench = _load("cpu_latency", monkeypatch)
    bounds = _load("cpu_latency_bounds", monkeypatch)
    from hand_records import HandRecords, two_convs

    mod = two_convs(chain=False)
    records = HandRecords(mod, {("parallel", 0): 10.0, ("parallel", 1): 20.0})  # 2 cores
    at_one = {"memory_floor": {"1": {"bandwidth_gbs": 0.1}},
              "compute_floor": {"1": {"peak_gflops": 1e3}}}
    assert "error" in bench._roofline(mod, records, at_one)
    info = {"memory_floor": {"2": {"bandwidth_gbs": 0.1}},
            "compute_floor": {"2": {"peak_gflops": 1e3}}}
    roofline = bench._roofline(mod, records, info)
    assert (roofline["threads"], roofline["gbps"], roofline["gflops"]) == (2, 0.1, 1e3)
    convs = roofline["groups"][0]
    assert convs["output"] == "8x8" and convs["roofline_us"] == 25.6  # 2560 B at 100 B/us
    lines = bounds.roofline_lines("m", roofline)
    assert "| 8x8 | 2 | 30 | 26 | 4 | 0.0 | 0.000 |" in lines
    assert "| no weights | 1 (1 untimed) | 0 | 0 | 0 | 0.0 | 0.000 |" in lines
    assert bounds.roofline_lines("m", bench._roofline(mod, records, at_one))[0].startswith(
        "m: no kernel roofline (no floors measured at 2 threads")
