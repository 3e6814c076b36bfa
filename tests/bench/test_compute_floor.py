"""The compute floor: a model's anchor FLOPs, over the rate a real TVM multiply-add kernel
reaches here (``bench/compute_floor.py``), and the line the CPU table's doc prints from it."""
import numpy as np
import pytest
import tvm
from tvm import relax

from tvm_ios import _tvm
from tvm_ios.bench import compute_floor as cf

BASELINES = ("PyTorch eager", "ONNX Runtime sequential")


def _conv_dense():
    """conv 4->8 3x3 on 6x6 (out 4x4) + relu, a separable 1x1 conv (depthwise, then
    pointwise 8->8), a 8*4*4 x 10 matmul."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 4, 6, 6), "float32"))
    w = relax.const(np.ones((8, 4, 3, 3), "float32"))
    d = relax.const(np.ones((8, 1, 1, 1), "float32"))
    p = relax.const(np.ones((8, 8, 1, 1), "float32"))
    m = relax.const(np.ones((128, 10), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.relu(bb.emit(relax.op.nn.conv2d(x, w))))
            y = bb.emit(relax.op.nn.conv2d(y, d, groups=8))  # depthwise 1x1 ...
            y = bb.emit(relax.op.nn.conv2d(y, p))  # ... and pointwise: one sepconv unit
            z = bb.emit(relax.op.matmul(bb.emit(relax.op.reshape(y, (1, 128))), m))
            out = bb.emit_output(z)
        bb.emit_func_output(out)
    return bb.get()


def test_model_flops_counts_convolutions_and_matmuls():
    conv = 2 * (8 * 4 * 4) * (4 * 3 * 3)  # 2 x output elements x (Cin x kh x kw)
    relu = 8 * 4 * 4  # the fused epilogue, one each
    separable = 2 * (8 * 4 * 4) * 1 + 2 * (8 * 4 * 4) * 8
    matmul = 2 * 10 * 128
    assert cf.model_flops(_conv_dense()) == conv + relu + separable + matmul


def test_the_kernel_runs_every_step():
    iters, chunks = 37, 3
    lib = _tvm.tirx.build(tvm.IRModule({"fma": cf.fma_kernel(iters, chunks)}), target="llvm")
    host = np.random.default_rng(1).random((chunks, cf.CHAINS, cf.LANES), dtype=np.float32)
    out = _tvm.tensor(np.zeros_like(host))
    lib["fma"](_tvm.tensor(host), out)
    np.testing.assert_allclose(out.numpy(), cf._expected(host.astype(np.float64), iters),
                               rtol=1e-5)


def test_a_kernel_that_skips_steps_is_refused(monkeypatch):
    """The closed-form check fails when the kernel runs fewer steps than it is timed for
    (so a rate inflated by skipped work is never reported)."""
    real = cf.fma_kernel
    monkeypatch.setattr(cf, "fma_kernel", lambda iters, chunks=cf.CHUNKS:
                        real(iters // 2, chunks))
    with pytest.raises(RuntimeError, match="did not run every step"):
        cf.peak_gflops(threads=1, iters=2000, repeat=1)


def test_the_floor_is_the_flops_over_the_fastest_run():
    mod = _conv_dense()
    floor = cf.compute_floor(mod, threads=1, repeat=3)
    expected = cf.model_flops(mod) / (floor["peak_gflops"] * 1e9) * 1e3
    assert floor["floor_ms"] == pytest.approx(expected, rel=0.02)
    assert floor["peak_gflops"] >= floor["median_gflops"] > 0


def test_a_module_without_arithmetic_is_refused():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 4), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(relax.op.nn.relu(x)))
        bb.emit_func_output(out)
    with pytest.raises(ValueError, match="no convolution or matmul"):
        cf.compute_floor(bb.get(), threads=1, repeat=1)



def test_the_doc_says_what_share_of_the_rate_each_build_used(bounds):
    floors = {"2": {"gflop": 0.4, "peak_gflops": 200.0, "median_gflops": 190.0,
                    "floor_ms": 2.0, "threads": 2, "live_weights": True}}
    rows = {"2": {"ONNX Runtime sequential": {"median_ms": 4.0},
                  "PyTorch eager": {"median_ms": 20.0},
                  "TVM tuned sequential": {"median_ms": 8.0},
                  "tvm-ios rProgram (tuned)": {"median_ms": 5.0}}}
    text = " ".join(bounds.compute_lines("inception_v3", floors, rows, BASELINES))
    assert "(dead taps cut), 0.4 GFLOP" in text
    assert "take at least **2.00 ms**" in text
    assert "ONNX Runtime sequential 50%, TVM tuned sequential 25%, " \
           "tvm-ios rProgram (tuned) 40% used" in text
    assert "1.5x the best baseline (2.67 ms) would use 75%" in text
    broken = " ".join(bounds.compute_lines("m", {"1": {"error": "ValueError: x"}}, rows,
                                              BASELINES))
    assert "no compute floor (ValueError: x)" in broken
