"""Real measurements through meta_schedule's LocalRunner and RPCRunner on llvm."""
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from tvm_ios.cost.stage_timing import MeasureError, MeasureSettings, Measurer
from tvm_ios.runtime.rpc import RPCError, check_tracker
from tvm_ios.cost.measured import MeasuredCostModel
from tvm_ios.cost.stage_module import stage_module
from tvm_ios.graph.extract import extract

FAST = MeasureSettings(number=1, repeat=3, warmup=1, timeout_s=60, build_workers=2)


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def stages(tiny):
    ext = extract(tiny["main"])
    return [stage_module(ext, [[0]]), stage_module(ext, [[0], [1], [2]]),
            stage_module(ext, [[0], [1], [2]], merge=True)]


def test_local_runner_times_every_stage(measurer, stages):
    results = measurer.measure(stages)
    assert [r.key for r in results] == [s.key for s in stages]
    for result in results:
        assert result.error is None, result.error
        assert len(result.run_secs) == 2 and all(t > 0 for t in result.run_secs)
    # Which stage took longer is a benchmark's question, not a test's (it flipped under
    # the other xdist worker's load): here each stage is timed under its own key.
    assert len({r.key for r in results}) == len(stages)
    assert all(0 < r.median_us < 60e6 for r in results)


def test_cold_cache_settings_flush_before_each_call_and_log_apart(stages):
    cold = Measurer("llvm", settings=MeasureSettings(number=2, repeat=3, warmup=1,
                                                     flush_bytes=4 << 20))
    try:
        (result,) = cold.measure(stages[:1])
    finally:
        cold.close()
    assert result.error is None, result.error
    assert len(result.run_secs) == 3 and all(t > 0 for t in result.run_secs)
    assert cold.device_key.endswith(":cold") and not Measurer("llvm").device_key.endswith(
        ":cold")


@pytest.fixture(scope="module")
def rpc_tracker():
    """A tracker and one server with key ``tvm-ios-test`` on 127.0.0.1, stopped by PID."""
    port = _free_port()
    env = dict(os.environ, TVM_DEVICE_BACKEND_AUTOLOAD="0")
    procs = [subprocess.Popen([sys.executable, "-m", "tvm.exec.rpc_tracker", "--host",
                               "127.0.0.1", "--port", str(port), "--port-end",
                              str(port + 1)], env=env,
                              start_new_session=True, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)]
    server_port = _free_port()
    procs.append(subprocess.Popen([sys.executable, "-m", "tvm.exec.rpc_server", "--tracker",
                                   f"127.0.0.1:{port}", "--key", "tvm-ios-test", "--host",
                                   "127.0.0.1", "--port", str(server_port), "--port-end",
                                   str(server_port + 1)], env=env,
                                  start_new_session=True, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL))
    try:
        deadline = time.time() + 60
        while True:
            try:
                check_tracker("127.0.0.1", port, "tvm-ios-test", timeout_s=5)
                break
            except RPCError:
                if time.time() > deadline:
                    raise
                time.sleep(0.5)
        yield f"127.0.0.1:{port}"
    finally:
        for proc in procs:  # each was started in its own session: stop its group by PID
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)


def test_rpc_runner_through_tracker_and_server(rpc_tracker, stages):
    measurer = Measurer("llvm", rpc_tracker, "tvm-ios-test", FAST)
    try:
        assert measurer.device_key == "rpc:tvm-ios-test"
        results = measurer.measure(stages[:1])
    finally:
        measurer.close()
    for result in results:
        assert result.error is None, result.error
        assert len(result.run_secs) == 3 and result.median_us > 0


def test_unreachable_tracker_fails_fast_with_a_clear_error(stages):
    port = _free_port()  # nothing listens there
    measurer = Measurer("llvm", f"127.0.0.1:{port}", "k", MeasureSettings(timeout_s=2))
    start = time.time()
    with pytest.raises(MeasureError, match=f"127.0.0.1:{port} is unreachable"):
        measurer.measure(stages[:1])
    assert time.time() - start < 10


def test_tracker_without_a_server_for_the_key(rpc_tracker):
    host, port = rpc_tracker.split(":")
    with pytest.raises(RPCError, match="no server with key 'nobody'"):
        check_tracker(host, int(port), "nobody", timeout_s=5)


def test_bad_tracker_and_target_arguments():
    with pytest.raises(ValueError, match="host:port"):
        Measurer("llvm", "localhost", "k")
    with pytest.raises(ValueError, match="--rpc-key"):
        Measurer("llvm", "127.0.0.1:9190", None)
    with pytest.raises(ValueError, match="impossible target"):
        Measurer("no-such-target")


@pytest.mark.skipif(__import__("tvm").cuda(0).exist, reason="this machine has a GPU")
def test_a_target_the_local_runner_cannot_run_is_refused_before_building(stages):
    measurer = Measurer({"kind": "cuda", "arch": "sm_90"}, settings=FAST)
    with pytest.raises(MeasureError, match="runs on cuda, which this machine does not have"):
        measurer.measure(stages[:1])


def test_a_target_the_builder_cannot_build_for_names_the_error_and_logs_nothing(tmp_path, tiny):
    bad = {"kind": "llvm", "mtriple": "nonexistent-unknown-none"}
    measurer = Measurer(bad, settings=MeasureSettings(number=1, repeat=1, build_workers=1))
    log = tmp_path / "bad.jsonl"
    model = MeasuredCostModel(tiny, measurer, log)
    graph = next(iter(model.extractions.values())).graph
    try:
        with pytest.raises(MeasureError, match=r"no stage could be measured.*build for .*"
                                               r"nonexistent-unknown-none.*failed: .*triple"):
            model.stage_latency(graph, [[0]])
    finally:
        measurer.close()
    assert not log.exists() and model.failed  # nothing logged; the stage is marked failed
    assert model.stage_latency(graph, [[0]]) == float("inf")  # not built or tried again


_BLOCKED_STAGE = '''
import sys
from tvm import relax
from tvm_ios.cost.stage_timing import build_stage
x = relax.Var("x", relax.TensorType((1, 1, 4, 4, 16), "float32"))
w = relax.Var("w", relax.TensorType((1, 1, 1, 1, 16, 16), "float32"))
bb = relax.BlockBuilder()
with bb.function("main", [x, w]):
    with bb.dataflow():
        y = bb.emit_output(relax.op.nn.conv2d(x, w, data_layout="NCHW16c",
                                              kernel_layout="OIHW16i16o"))
    bb.emit_func_output(y)
assert "tvm_ios.kernels.blocked_conv" not in sys.modules
build_stage(bb.get(), {"kind": "llvm"})
'''


def test_a_builder_worker_builds_a_blocked_layout_stage_first():
    # a fresh process, as a builder worker is: nothing else registered the legalization
    out = subprocess.run([sys.executable, "-c", _BLOCKED_STAGE], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
