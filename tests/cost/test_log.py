"""The measurement log: round trip, empty file, corrupt and partial lines, append only, and
processes appending to one log at once (issue 61)."""
import fcntl
import json
import logging
import time

from tvm_ios.cost.log import LogRecord, MeasureLog
from tvm_ios.testing.faults import start_appenders


def _record(key, median=5.0):
    return LogRecord(key, "llvm", "local:test", [median * 1e-6, median * 1e-6], median)


def test_round_trip_and_lookup(tmp_path):
    path = tmp_path / "sub" / "log.jsonl"
    log = MeasureLog(path)
    log.append(_record("a", 3.0))
    log.append(_record("b", 4.0))
    again = MeasureLog(path)
    assert len(again) == 2
    assert again.lookup("a", "llvm", "local:test").median_us == 3.0
    assert again.lookup("a", "llvm", "other") is None
    line = json.loads(path.read_text().splitlines()[0])
    for field in ("key", "target", "device_key", "run_secs", "median_us", "timestamp",
                  "tvm_version", "tvm_ios_version"):
        assert field in line


def test_a_build_digest_is_found_on_its_target_and_device_only(tmp_path):
    path = tmp_path / "log.jsonl"
    built = _record("a", 3.0)
    built.build = "0123456789abcdef"
    MeasureLog(path).append(built)
    MeasureLog(path).append(_record("b", 4.0))  # no digest: an untuned stage or an old record
    again = MeasureLog(path)
    assert again.lookup_build("0123456789abcdef", "llvm", "local:test").key == "a"
    assert again.lookup_build("0123456789abcdef", "llvm", "local:other") is None
    assert again.lookup_build("", "llvm", "local:test") is None
    assert json.loads(path.read_text().splitlines()[0])["build"] == "0123456789abcdef"


def test_empty_log(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    log = MeasureLog(path)
    assert len(log) == 0 and log.skipped == 0


def test_corrupt_and_partial_lines_are_skipped_with_their_line_numbers(tmp_path, caplog):
    path = tmp_path / "log.jsonl"
    MeasureLog(path).append(_record("a"))
    with open(path, "a") as handle:
        handle.write("not json at all\n")
        handle.write(json.dumps({"key": "b", "target": "llvm"}) + "\n")  # fields missing
        handle.write('{"key": "c", "target": "llvm", "device_key": "local:t", "run_')
    before = path.read_bytes()
    with caplog.at_level(logging.WARNING):
        log = MeasureLog(path)
    assert len(log) == 1 and log.skipped == 3
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "line 2" in messages and "line 3" in messages and "line 4" in messages
    assert path.read_bytes() == before  # loading never rewrites
    log.append(_record("d"))  # appending after a partial line starts a new line
    assert path.read_bytes().startswith(before)
    reread = MeasureLog(path)
    assert reread.lookup("d", "llvm", "local:test") is not None
    assert len(reread) == 2


def test_processes_appending_at_once_lose_no_record_and_glue_no_line(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text('{"key": "cut mid-wri')  # a killed writer's partial line, first
    tags, count = "abc", 60
    procs = start_appenders(path, tags, count, size=20000)  # (20 kB a line: past any buffer)
    assert all(p.wait(120) == 0 for p in procs)
    log = MeasureLog(path)
    assert log.skipped == 1 and len(log) == len(tags) * count
    assert sorted(r.key for r in log.records) == sorted(f"{t}{i}" for t in tags
                                                        for i in range(count))
    assert all(r.stage["pad"] == r.key[0] * 20000 for r in log.records)  # none interleaved


def test_an_append_waits_for_the_lock_of_another_writer(tmp_path):
    path = tmp_path / "log.jsonl"
    MeasureLog(path).append(_record("a"))
    before = path.read_bytes()
    with open(path, "ab") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)  # another process mid-append
        proc, = start_appenders(path, "b", 1, size=10, delay=-8)
        assert proc.stdout.readline().strip() == "ready"  # (tvm_ios imported)
        time.sleep(2)  # (time to append, were there no lock)
        assert proc.poll() is None and path.read_bytes() == before
    assert proc.wait(60) == 0  # the lock released: it appends
    assert [r.key for r in MeasureLog(path).records] == ["a", "b0"]
