"""Tiny Relax models for the cost and tune tests: Inception-like blocks, repeated."""
import numpy as np
from tvm import relax


def _conv(bb, x, w, b, kernel, pad):
    y = bb.emit(relax.op.nn.conv2d(x, w, padding=pad))
    y = bb.emit(relax.op.add(y, b))
    return bb.emit(relax.op.nn.relu(y))


def inception_like(channels=8, size=8, blocks=2, constants=True, seed=0, head=False):
    """``blocks`` identical blocks of four branches (1x1, 3x3, 1x1->3x3, pool), concatenated.

    Weights are constants (``constants=True``) or parameters after the input; ``head`` adds
    a final 1x1 convolution to half the channels.
    """
    rng = np.random.default_rng(seed)
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, channels, size, size), "float32"))
    params, weights = [x], []

    def weight(shape):
        value = (rng.standard_normal(shape) * 0.1).astype("float32")
        if constants:
            return relax.const(value)
        var = relax.Var(f"p{len(weights)}", relax.TensorType(shape, "float32"))
        params.append(var)
        weights.append(value)
        return var

    c = channels
    specs = []
    for _ in range(blocks):
        specs.append([(weight((c // 4, c, 1, 1)), weight((1, c // 4, 1, 1)), 1, 0),
                      (weight((c // 4, c, 3, 3)), weight((1, c // 4, 1, 1)), 3, 1),
                      (weight((c // 4, c, 1, 1)), weight((1, c // 4, 1, 1)), 1, 0),
                      (weight((c // 4, c // 4, 3, 3)), weight((1, c // 4, 1, 1)), 3, 1)])
    with bb.function("main", params, attrs={"num_input": 1}):
        with bb.dataflow():
            h = x
            for spec in specs:
                a = _conv(bb, h, *spec[0])
                b = _conv(bb, h, *spec[1])
                t = _conv(bb, h, *spec[2])
                t = _conv(bb, t, *spec[3])
                p = bb.emit(relax.op.nn.max_pool2d(h, (3, 3), padding=(1, 1)))
                p = bb.emit(relax.op.strided_slice(p, [1], [0], [c // 4]))
                h = bb.emit(relax.op.concat([a, b, t, p], axis=1))
            if head:
                h = _conv(bb, h, weight((c // 2, c, 1, 1)), weight((1, c // 2, 1, 1)), 1, 0)
            out = bb.emit_output(h)
        bb.emit_func_output(out)
    mod = bb.get()
    names = [p.name_hint for p in params[1:]]
    return mod, dict(zip(names, weights))
