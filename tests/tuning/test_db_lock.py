"""One tuning process at a time on a database: a second waits, then appends after the first;
a lock dies with its process, kill -9 included."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WRITER = """
import sys, time
from tvm_ios.tuning.db_lock import db_lock
path, tag = sys.argv[1], sys.argv[2]
with db_lock(path):
    print("locked", flush=True)
    for i in range(5):
        with open(path + "/records", "a") as out:
            out.write(f"{tag}{i}\\n")
        time.sleep(0.2)
    if len(sys.argv) > 3:
        time.sleep(60)
"""


def _writer(tmp_path, tag, *extra):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), tag, *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_a_second_tuning_process_waits_and_no_line_interleaves(tmp_path):
    first = _writer(tmp_path, "a")
    assert first.stdout.readline().strip() == "locked"
    second = _writer(tmp_path, "b")
    assert first.wait(30) == 0 and second.wait(30) == 0
    lines = (tmp_path / "records").read_text().split()
    assert lines == [f"a{i}" for i in range(5)] + [f"b{i}" for i in range(5)]
    assert "is being tuned by another process: waiting" in second.stderr.read()


def test_a_lock_dies_with_its_process_killed(tmp_path):
    holder = _writer(tmp_path, "a", "hold")
    assert holder.stdout.readline().strip() == "locked"
    time.sleep(1.2)  # (its five lines written; now it only holds the lock)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(10)
    start = time.perf_counter()
    after = _writer(tmp_path, "b")
    assert after.wait(30) == 0 and time.perf_counter() - start < 10
    assert (tmp_path / "records").read_text().split()[-1] == "b4"
