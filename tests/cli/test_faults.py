"""Faults, measured (issue 61): ``kill -9`` during ``tvm-ios tune`` and ``tune-kernels``
leaves a log or database that loads (a partial last line skipped with a warning), and a
rerun resumes, adding no duplicate; a full disk while logging is one line, exit 2, and the
records written before it stay. Each runs the real command line in a subprocess."""
import json

import pytest

from tvm_ios.cost.log import MeasureLog
from tvm_ios.testing.faults import (add_partial_line, cli, first_error, kill_when_written,
                                    log_keys, pad_log, start_cli, tiny_onnx, tune_argv,
                                    tune_counts, tune_kernels_argv, tuned_trials)

pytest.importorskip("onnx")


def test_tune_killed_keeps_its_log_and_a_rerun_measures_only_the_rest(tmp_path):
    model, log = tiny_onnx(tmp_path / "t.onnx"), tmp_path / "log.jsonl"
    killed = start_cli(tune_argv(model, log, "--batch-size", "1"), tmp_path / "killed.err")
    kept = kill_when_written(killed, log)  # (one stage built and timed a batch)
    assert kept >= 1 and killed.returncode == -9
    add_partial_line(log)  # the worst moment: killed while it wrote the next record
    before = log_keys(log)
    assert len(MeasureLog(log)) == kept == len(before)
    rerun = cli(tune_argv(model, log))
    assert rerun.returncode == 0, rerun.stderr
    assert f"line {kept + 1} skipped (corrupt or partial record" in rerun.stderr
    counts = tune_counts(rerun.stdout)
    after = log_keys(log)
    assert after[:kept] == before and counts["measured"] == len(after) - kept > 0
    assert not set(after[kept:]) & set(before)  # nothing recorded was measured again
    assert len(set(after)) == len(after)  # and nothing twice
    reloaded = MeasureLog(log)
    assert len(reloaded) == len(after) and reloaded.skipped == 1


def test_a_full_disk_while_logging_is_one_line_exit_2_and_keeps_the_records(tmp_path):
    model, log = tiny_onnx(tmp_path / "t.onnx"), tmp_path / "log.jsonl"
    pad_log(log, 4 << 20)  # (past the stage libraries: only the log reaches the limit)
    limit = log.stat().st_size + 1000  # room for one record and part of the next
    done = cli(tune_argv(model, log), file_size_limit=limit)
    err = done.stderr
    assert done.returncode == 2 and "Traceback" not in err, err
    line = first_error(err)
    assert [x for x in err.splitlines() if x.startswith("tvm-ios ")] == [line]
    assert line.startswith("tvm-ios tune: error: cannot write ") and str(log) in line
    assert "file-size limit" in line and "File too large" in line
    kept = MeasureLog(log)
    assert len(kept) >= 2 and kept.skipped <= 1  # the padding and what came before the end
    assert log.stat().st_size == limit


def _records(path):
    """(workload, trace) of each line of a meta_schedule records file."""
    return [json.dumps([row[0], row[1][0]]) for row in map(json.loads, (
        line for line in path.read_text().splitlines() if line.strip()))]


@pytest.mark.slow  # (two tune-kernels processes: meta_schedule's set-up is minutes here)
def test_tune_kernels_killed_keeps_its_database_and_a_rerun_resumes(tmp_path):
    from tvm_ios.tuning.kernel_db import KernelDB

    model, db = tiny_onnx(tmp_path / "t.onnx"), tmp_path / "db"
    records = db / "parallel" / "database_tuning_record.json"
    killed = start_cli(tune_kernels_argv(model, db), tmp_path / "killed.err")
    kept = kill_when_written(killed, records)
    assert kept >= 1 and killed.returncode == -9
    assert KernelDB(db).num_records("parallel") == kept  # it loads as it is
    before = _records(records)
    add_partial_line(records)
    rerun = cli(tune_kernels_argv(model, db))
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert f"{records}: skipped corrupt line(s) {kept + 1}" in rerun.stderr
    measured, total = tuned_trials(rerun.stdout)
    assert total == kept + measured and 0 < measured <= 16  # it went on from the kept
    after = _records(records)
    assert after[:kept] == before and len(after) == total
    assert len(set(after)) == len(after)  # no record twice
    assert (db / "parallel" / "database_tuning_record.json.corrupt").is_file()


@pytest.mark.slow  # (two tune-kernels processes)
def test_a_resumed_tune_kernels_records_no_schedule_twice(tmp_path):
    # meta_schedule's search knows only what its own process measured: resumed from the
    # same seed, it proposes candidates the database holds (2 of 16 here without the guard)
    model, db = tiny_onnx(tmp_path / "t.onnx"), tmp_path / "db"
    records = db / "parallel" / "database_tuning_record.json"
    for trials in (16, 32):
        done = cli(tune_kernels_argv(model, db, trials=trials))
        assert done.returncode == 0, done.stderr[-2000:]
    measured, total = tuned_trials(done.stdout)
    after = _records(records)
    assert measured > 0 and len(set(after)) == len(after) == total
