"""Activation traffic counted on the code: a two-unit chain checked by hand."""
import numpy as np
from tvm import relax

from tvm_ios.kernels.traffic import activation_traffic


def conv_block(bb, inp, kernel, padding, rng):
    """conv2d + bias + relu on 4 channels: one unit (three bindings)."""
    w = relax.const(rng.standard_normal((4, 4, *kernel)).astype("float32"))
    b = relax.const(rng.standard_normal((1, 4, 1, 1)).astype("float32"))
    y = bb.emit(relax.op.nn.conv2d(inp, w, padding=padding))
    return bb.emit(relax.op.nn.relu(bb.emit(relax.op.add(y, b))))


def _chain():
    rng = np.random.default_rng(0)
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 4, 8, 8), "float32"))  # 1024 B
    with bb.function("main", [x]):
        with bb.dataflow():
            y = conv_block(bb, x, (3, 3), (1, 1), rng)  # bindings 0-2
            z = conv_block(bb, y, (1, 1), (0, 0), rng)  # bindings 3-5
            out = bb.emit_output(z)
        bb.emit_func_output(out)
    return bb.get()["main"]


def test_two_units_write_once_and_read_their_inputs():
    t = activation_traffic(_chain())
    # unit a reads x and writes y; unit b reads y and writes z (epilogues are fused)
    assert t == {"bytes": 4096, "written": 2048, "read": 2048, "kernels": 2, "kept_bytes": 0}


def test_a_tensor_kept_on_its_veu_costs_nothing():
    t = activation_traffic(_chain(), local={2})
    assert t == {"bytes": 2048, "written": 1024, "read": 1024, "kernels": 2,
                 "kept_bytes": 1024}
