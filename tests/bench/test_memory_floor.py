"""The memory floor: a model's weight bytes, read again and again by a real TVM kernel
(``bench/memory_floor.py``), and the line the CPU table's doc prints from it."""
import numpy as np
import pytest
import tvm
from tvm import relax

from tvm_ios import _tvm
from tvm_ios.bench import memory_floor as mf

BASELINES = ("PyTorch eager", "ONNX Runtime sequential")


def _weighted(shared_twice: bool = True):
    """conv (8x4x3x3 weight) + bias (8), the bias added twice when ``shared_twice``."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 4, 6, 6), "float32"))
    w = relax.const(np.ones((8, 4, 3, 3), "float32"))
    b = relax.const(np.ones((1, 8, 1, 1), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.add(bb.emit(relax.op.nn.conv2d(x, w)), b))
            if shared_twice:
                y = bb.emit(relax.op.add(y, b))
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    return bb.get()


def test_weight_bytes_counts_each_constant_once():
    assert mf.weight_bytes(_weighted()) == (8 * 4 * 3 * 3 + 8) * 4


def test_the_read_kernel_reads_every_element():
    length, chunks = 5, 3
    lib = _tvm.tirx.build(tvm.IRModule({"read": mf.read_kernel(length, chunks)}), target="llvm")
    host = np.random.default_rng(1).random((chunks, length, mf.LANES), dtype=np.float32)
    out = _tvm.tensor(np.zeros((chunks, mf.LANES), "float32"))
    lib["read"](_tvm.tensor(host), out)
    np.testing.assert_allclose(out.numpy(), host.sum(axis=1), rtol=1e-5)


def test_bandwidth_is_measured_on_the_whole_buffer():
    read = mf.read_bandwidth(1 << 20, threads=1, repeat=3)
    assert read["bytes"] >= 1 << 20
    assert read["best_gbs"] >= read["median_gbs"] > 0


def test_a_kernel_that_skips_data_is_refused(monkeypatch):
    """The check on the sums fails when the kernel skips most of the buffer (so a
    bandwidth inflated by skipped reads is never reported)."""
    monkeypatch.setattr(mf, "read_kernel", lambda length, chunks=mf.CHUNKS:
                        _first_row_kernel(length, chunks))
    with pytest.raises(RuntimeError, match="did not read"):
        mf.read_bandwidth(1 << 16, threads=1, repeat=1)


def _first_row_kernel(length, chunks):
    """Reads one row of each chunk, not ``length``: a kernel that skips data."""
    T = _tvm.T

    @T.prim_func
    def read(a: T.Buffer((chunks, length, mf.LANES), "float32"),
             b: T.Buffer((chunks, mf.LANES), "float32")):
        for c, v in T.grid(chunks, mf.LANES):
            b[c, v] = a[c, 0, v]
    return read


def test_the_floor_is_the_weights_over_the_fastest_read():
    mod = _weighted()
    floor = mf.memory_floor(mod, threads=1, repeat=3)
    expected = mf.weight_bytes(mod) / (floor["bandwidth_gbs"] * 1e9) * 1e3
    assert floor["floor_ms"] == pytest.approx(expected, rel=0.02)
    assert floor["bandwidth_gbs"] >= floor["median_gbs"]


def test_a_module_without_weights_has_no_floor():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 4), "float32"))
    with bb.function("main", [x]):
        bb.emit_func_output(relax.op.nn.relu(x))
    with pytest.raises(ValueError, match="no bound weights"):
        mf.memory_floor(bb.get(), threads=1)



def test_the_doc_says_whether_the_goal_is_past_the_floor(bounds):
    floors = {"2": {"weight_mb": 95.3, "bandwidth_gbs": 22.0, "median_gbs": 20.0,
                    "floor_ms": 4.33, "threads": 2}}
    rows = {"2": {"ONNX Runtime sequential": {"median_ms": 6.0},
                  "PyTorch eager": {"median_ms": 20.0},
                  "TVM tuned sequential": {"median_ms": 8.66}}}
    text = " ".join(bounds.memory_lines("inception_v3", floors, rows, BASELINES))
    assert "less than **4.33 ms**" in text
    assert "ONNX Runtime sequential 1.39x it" in text
    assert "TVM tuned sequential 2.00x it" in text
    assert "1.5x the best baseline (4.00 ms) is below the floor" in text
    faster = {"2": {**floors["2"], "floor_ms": 2.0}}
    assert "is above it" in " ".join(bounds.memory_lines("m", faster, rows, BASELINES))
    broken = " ".join(bounds.memory_lines("m", {"1": {"error": "ValueError: x"}}, rows,
                                          BASELINES))
    assert "no memory floor (ValueError: x)" in broken
