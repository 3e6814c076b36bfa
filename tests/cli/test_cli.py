"""The tvm-ios command line: schedule, run, stats, and bad input (exit code 2)."""
import json

import pytest
import tvm

from tvm_ios.cli.main import main

SMALL = ["--model", "squeezenet", "--image-size", "17"]


def test_schedule_writes_schedule_json(tmp_path, capsys):
    out = tmp_path / "s.json"
    assert main(["schedule", *SMALL, "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["schema"] == "tvm-ios/schedule" and doc["stages"]
    assert "estimated latency" in capsys.readouterr().out


@pytest.mark.parametrize("scheduler", ["sequential", "greedy"])
def test_schedule_baselines(scheduler, capsys):
    assert main(["schedule", *SMALL, "--scheduler", scheduler]) == 0
    assert f"({scheduler})" in capsys.readouterr().out


def test_run_compares_and_reports(tmp_path, capsys):
    out = tmp_path / "run.json"
    assert main(["run", *SMALL, "--repeat", "1", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["max_abs_diff"] <= 1e-4 * max(1.0, doc["max_abs_value"])
    assert doc["latency_ms_original"] > 0 and doc["latency_ms_rewritten"] > 0
    assert "max |diff|" in capsys.readouterr().out
    assert len(doc["provenance"]["commit"]) == 40 and doc["provenance"]["versions"]["tvm"]


def test_run_with_schedule_file_and_stale_fallback(tmp_path, capsys):
    sched = tmp_path / "s.json"
    assert main(["schedule", *SMALL, "--scheduler", "greedy", "-o", str(sched)]) == 0
    assert main(["run", *SMALL, "--repeat", "1", "--schedule", str(sched)]) == 0
    # the same schedule on another model is stale: warn, fall back to sequential, still run
    other = ["--model", "mobilenet_v2", "--image-size", "8"]
    assert main(["run", *other, "--repeat", "1", "--schedule", str(sched)]) == 0
    assert "(sequential)" in capsys.readouterr().out


def test_stats_rows(tmp_path, capsys):
    out = tmp_path / "stats.json"
    assert main(["stats", *SMALL, "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert {"n", "width", "transitions", "schedules"} <= set(rows[0])
    assert sum(r["n"] for r in rows) == 26 + 4  # SqueezeNet 1.1: 26 convs, 4 pools
    assert "largest block" in capsys.readouterr().out


@pytest.mark.parametrize("argv,message", [
    (["schedule", "--model", "alexnet"], "unknown model 'alexnet'"),
    (["schedule", "--model", "missing.onnx"], "does not exist"),
    (["schedule", *SMALL, "-r", "0"], "must be >= 1"),
    (["stats", *SMALL, "-s", "0"], "must be >= 1"),
    (["run", *SMALL, "--schedule", "/nope.json"], "does not exist"),
    (["run", *SMALL, "--target", "cuda -arch=sm_90"], "impossible target"),
])
def test_bad_input_exits_2(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_run_rprogram_engine_on_llvm(capsys):
    # the cpu preset's two units (the target's own has one per pool worker, maybe one here)
    assert main(["run", *SMALL, "--engine", "rprogram", "--device", "cpu", "--repeat", "1"]) \
        == 0
    out = capsys.readouterr().out
    assert "rProgram main_ios_stage" in out and "max |diff|" in out


@pytest.mark.skipif(tvm.cuda(0).exist, reason="a GPU is present: run would run")
@pytest.mark.parametrize("engine", ["stages", "rprogram"])
def test_run_on_cuda_without_gpu_is_a_clear_refusal(engine, capsys):
    argv = ["run", *SMALL, "--engine", engine, "--target", "nvidia/nvidia-h100"]
    assert main(argv) == 2  # bad input for this machine: one line, no traceback
    err = capsys.readouterr().err
    assert "no CUDA GPU is present on this machine" in err and "tvm-ios build" in err


def test_malformed_schedule_file(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "tvm-ios/schedule", "version": 1, "stages": [{"groups": 3}]}')
    assert main(["run", *SMALL, "--schedule", str(bad)]) == 2
    assert "stages[0].groups" in capsys.readouterr().err
