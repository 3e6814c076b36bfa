"""A small residual CNN in Relax for the pipeline tests (reduced size, weights as params)."""
import numpy as np
from tvm import relax


def tiny_cnn(size: int = 16, channels: int = 8, seed: int = 0):
    """(mod, params): conv-relu, conv-relu + residual add, pool, conv, mean, dense."""
    rng = np.random.default_rng(seed)
    shapes = {"w0": (channels, 3, 3, 3), "w1": (channels, channels, 3, 3),
              "w2": (channels, channels, 3, 3), "w3": (2 * channels, channels, 1, 1),
              "fc": (10, 2 * channels)}
    params = {k: (rng.standard_normal(s) * 0.2).astype("float32") for k, s in shapes.items()}
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 3, size, size), "float32"))
    ws = [relax.Var(k, relax.TensorType(s, "float32")) for k, s in shapes.items()]
    with bb.function("main", [x] + ws, attrs={"num_input": 1}):
        with bb.dataflow():
            a = bb.emit(relax.op.nn.relu(relax.op.nn.conv2d(x, ws[0], padding=1)))
            b = bb.emit(relax.op.nn.relu(relax.op.nn.conv2d(a, ws[1], padding=1)))
            c = bb.emit(relax.op.nn.conv2d(b, ws[2], padding=1))
            d = bb.emit(relax.op.nn.relu(relax.op.add(c, a)))
            e = bb.emit(relax.op.nn.max_pool2d(d, pool_size=2, strides=2))
            f = bb.emit(relax.op.nn.relu(relax.op.nn.conv2d(e, ws[3])))
            g = bb.emit(relax.op.mean(f, axis=[2, 3]))
            h = bb.emit(relax.op.matmul(g, relax.op.permute_dims(ws[4])))
            out = bb.emit_output(h)
        bb.emit_func_output(out)
    return bb.get(), params
