"""Faults, for the fault tests and ``benchmarks/faults.py``: a tiny ONNX model, the command
line in a subprocess (killed with ``SIGKILL`` once a file holds a record, or run under a
file-size limit, a full disk as a process sees one), and damaged copies of files.

The subprocesses run the real ``tvm-ios`` (``python -m tvm_ios.cli.main``) of this checkout.
"""
from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

__all__ = ["ROOT", "tiny_onnx", "onnx_with_op",
           "cli", "start_cli", "kill_when_written", "add_partial_line",
           "truncated", "flipped", "first_error", "tune_counts", "tuned_trials",
           "log_keys", "pad_log", "corrupt_kernel_db", "tune_argv", "tune_kernels_argv",
           "start_appenders"]

#: The checkout the subprocesses import ``tvm_ios`` from.
ROOT = Path(__file__).resolve().parents[2]


def tiny_onnx(path, seed: int = 0) -> Path:
    """Write a two-branch ONNX model (a 3x3 and a 1x1 convolution of one 8x8x8 input, each
    with ReLU, then their sum): four stages to measure, two kernels to tune. Needs onnx."""
    from onnx import TensorProto, helper, numpy_helper, save

    rng = np.random.default_rng(seed)
    weights = [numpy_helper.from_array((rng.standard_normal((8, 8, k, k)) * 0.2)
                                       .astype("float32"), f"w{k}") for k in (3, 1)]
    nodes = [helper.make_node("Conv", ["x", "w3"], ["a"], pads=[1] * 4, kernel_shape=[3, 3]),
             helper.make_node("Relu", ["a"], ["ar"]),
             helper.make_node("Conv", ["x", "w1"], ["b"], kernel_shape=[1, 1]),
             helper.make_node("Relu", ["b"], ["br"]),
             helper.make_node("Add", ["ar", "br"], ["y"])]
    value = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 8, 8, 8]) for n in "xy"]
    graph = helper.make_graph(nodes, "tiny", value[:1], value[1:], weights)
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return Path(path)


def onnx_with_op(path, op: str = "Det") -> Path:
    """Write an ONNX model of a 3x3 ``MatMul`` then ``op`` of its result (``Det``, which TVM's
    ONNX frontend lacks, by default). Needs onnx."""
    from onnx import TensorProto, helper, numpy_helper, save

    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node(op, ["h"], ["y"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.ones((3, 3), "float32"), "w")])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return Path(path)


def tune_argv(model, log, *extra) -> list[str]:
    """``tvm-ios tune`` of ``model`` into the stage log ``log``, timed as little as can be."""
    return ["tune", "--model", str(model), "-r", "1", "-s", "2", "--number", "1",
            "--repeat", "1", "--log", str(log), *extra]


def tune_kernels_argv(model, db, trials: int = 16) -> list[str]:
    """``tvm-ios tune-kernels`` of ``model``'s sequential kernels into ``db``, ``trials`` in
    all (two tasks: records committed in two batches)."""
    return ["tune-kernels", "--model", str(model), "--db", str(db), "--trials", str(trials),
            "--variants", "parallel", "--sequential-only", "--cover", "0"]


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}


def _file_size_limit(nbytes: int):
    def limit():  # (in the child: a write past nbytes fails with EFBIG, no signal)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))
    return limit


def cli(argv, file_size_limit: int | None = None, timeout: float = 900):
    """Run ``tvm-ios argv`` to its end; a ``CompletedProcess`` with text output. With
    ``file_size_limit`` no file it writes may grow past that many bytes."""
    limit = _file_size_limit(file_size_limit) if file_size_limit else None
    return subprocess.run([sys.executable, "-m", "tvm_ios.cli.main", *map(str, argv)],
                          capture_output=True, text=True, env=_env(), timeout=timeout,
                          preexec_fn=limit, start_new_session=True)


def start_cli(argv, stderr_path) -> subprocess.Popen:
    """Start ``tvm-ios argv`` in a session of its own (its workers with it), stderr to a
    file (a pipe nobody reads would fill and stop it)."""
    with open(stderr_path, "w") as err:
        return subprocess.Popen([sys.executable, "-m", "tvm_ios.cli.main", *map(str, argv)],
                                stdout=subprocess.DEVNULL, stderr=err, env=_env(),
                                start_new_session=True)


APPENDER = """
import pathlib, sys, time
from tvm_ios.cost.log import LogRecord, MeasureLog
path, tag, count, size, start = sys.argv[1], sys.argv[2], *map(float, sys.argv[3:])
log = MeasureLog(None)
log.path = pathlib.Path(path)  # (it only appends: the others' lines are not read)
print("ready", flush=True)
while time.time() < start:
    pass
for i in range(int(count)):
    log.append(LogRecord(f"{tag}{i}", "llvm", "local:test", [1e-6], 1.0,
                         stage={"pad": tag * int(size)}))
"""


def start_appenders(path, tags: str, count: int, size: int, delay: float = 0.0) -> list:
    """One process per letter of ``tags``, each appending ``count`` records (keys
    ``<tag><i>``, each padded with ``size`` copies of its tag) to the stage log ``path``,
    all starting at one moment, ``8 + delay`` seconds from now (tvm_ios imported by then);
    each prints ``ready`` once it has imported."""
    start = time.time() + 8 + delay
    return [subprocess.Popen([sys.executable, "-c", APPENDER, str(path), tag, str(count),
                              str(size), str(start)], stdout=subprocess.PIPE, text=True,
                             env=_env()) for tag in tags]


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def kill_when_written(proc: subprocess.Popen, path, lines: int = 1,
                      timeout: float = 900) -> int:
    """``kill -9`` ``proc``'s process group as soon as ``path`` holds ``lines`` complete
    lines; returns how many it holds then. Raises ``RuntimeError`` when ``proc`` ends first
    or ``timeout`` seconds pass."""
    path, deadline = Path(path), time.monotonic() + timeout
    while _lines(path) < lines:
        if proc.poll() is not None or time.monotonic() > deadline:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            raise RuntimeError(f"{path} held {_lines(path)} lines when the process ended "
                               f"(exit {proc.poll()}), {lines} awaited")
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    return _lines(path)


def add_partial_line(path) -> None:
    """Append the first half of ``path``'s first line, no newline: what a process killed
    while it wrote a record leaves."""
    path = Path(path)
    first = path.read_bytes().split(b"\n", 1)[0]
    with open(path, "ab") as out:
        out.write(first[:len(first) // 2])


def truncated(data: bytes, keep: float = 0.5) -> bytes:
    """The first ``keep`` of ``data``."""
    return data[:int(len(data) * keep)]


def flipped(data: bytes, count: int = 64, seed: int = 0) -> bytes:
    """``data`` with ``count`` bytes at random places (``seed``) inverted."""
    out = bytearray(data)
    for i in np.random.default_rng(seed).choice(len(out), count, replace=False):
        out[i] ^= 0xFF
    return bytes(out)


def first_error(stderr: str) -> str:
    """The first ``tvm-ios ...`` line of ``stderr`` (else its last line)."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    mine = [line for line in lines if line.startswith("tvm-ios ")]
    return (mine or lines[-1:] or [""])[0]


def tune_counts(stdout: str) -> dict:
    """``{"measured", "copied", "cached", "predicted"}`` of ``tvm-ios tune``'s last line."""
    found = re.search(r"(\d+) stages measured, (\d+) copied from equal builds, (\d+) from "
                      r"the log, (\d+) predicted", stdout)
    if found is None:
        raise ValueError(f"no counts in tune's output: {stdout[-300:]!r}")
    return dict(zip(("measured", "copied", "cached", "predicted"), map(int, found.groups())))


def tuned_trials(stdout: str) -> tuple[int, int]:
    """``(trials measured now, records)`` of ``tvm-ios tune-kernels``' line of a variant."""
    found = re.search(r"(\d+) trials measured now, (\d+) records", stdout)
    if found is None:
        raise ValueError(f"no trials in tune-kernels' output: {stdout[-300:]!r}")
    return int(found.group(1)), int(found.group(2))


def log_keys(path) -> list[str]:
    """The keys of the stage log's lines that parse, in file order."""
    keys = []
    for line in Path(path).read_text(errors="replace").splitlines():
        try:
            keys.append(json.loads(line)["key"])
        except (ValueError, KeyError, TypeError):
            continue
    return keys


def pad_log(path, nbytes: int) -> None:
    """Start the stage log ``path`` with one valid record of about ``nbytes`` (another
    device's), so that a file-size limit just above it leaves room for a record or two."""
    record = {"key": "padding", "target": "llvm", "device_key": "local:padding",
              "run_secs": [1e-6], "median_us": 1.0, "stage": {"pad": "x" * nbytes}}
    Path(path).write_text(json.dumps(record) + "\n")


def corrupt_kernel_db(path) -> Path:
    """A kernel database of this machine whose parallel records file holds one line, cut
    mid-write (not JSON); returns that file."""
    from ..tuning.kernel_db import KernelDB, host_target

    KernelDB(path, host_target(), create=True)
    (Path(path) / "parallel").mkdir(exist_ok=True)
    (Path(path) / "parallel" / "database_workload.json").write_text("")
    records = Path(path) / "parallel" / "database_tuning_record.json"
    records.write_text('[0, [[["Sample", {"cut mid-write\n')
    return records
