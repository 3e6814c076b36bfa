"""Random multi-branch CNNs for differential fuzzing: a seed -> an op spec -> a Relax module.

:func:`random_spec` draws a plain op list (:mod:`tvm_ios.testing.cnn_spec`): convolutions of
every shape users bring (1x1 to 5x5 and 1x3/3x1 kernels, strides 1 and 2, same, valid and
asymmetric padding, dilation 2, grouped and depthwise), separable convolutions (depthwise +
pointwise), max/avg and global pools (1x1 maps), concatenations, residual adds, and ops the
graph extractor does not know (a sigmoid gate ``x * sigmoid(x)``, a clip). Ops often share
their input with the op before, so IOS finds concurrent stages and same-input merges.
:func:`build_cnn` emits the spec like the zoo's models: ``main(x, <weights...>)`` with
``num_input = 1`` and the weights returned separately, bound-able with ``bind_params``. The
weights of op ``i`` are drawn from ``(seed, i)``, so a shrunk spec keeps its ops' weights.
"""
from __future__ import annotations

import numpy as np
from tvm import relax

from .cnn_spec import infer_shapes, resolve, sinks

__all__ = ["random_cnn", "random_spec", "build_cnn"]

_KIND_WEIGHTS = {"conv": 6, "sepconv": 2, "maxpool": 1, "avgpool": 1, "gap": 0.3,
                 "concat": 1.5, "add": 1.5, "gate": 0.7, "clip": 0.7, "relu": 0.5}
_KERNELS = [(1, 1), (1, 1), (3, 3), (3, 3), (5, 5), (1, 3), (3, 1), (2, 2)]


def _conv_wish(rng, channels) -> dict:
    kernel = _KERNELS[rng.integers(len(_KERNELS))]
    dilation = int(rng.choice([1, 1, 1, 2]))
    mode = str(rng.choice(["same", "same", "valid", "asym"]))
    half = [dilation * (k - 1) // 2 for k in kernel]
    if mode == "same":
        padding = (half[0], half[1], dilation * (kernel[0] - 1) - half[0],
                   dilation * (kernel[1] - 1) - half[1])
    elif mode == "valid":
        padding = (0, 0, 0, 0)
    else:
        padding = tuple(int(rng.integers(0, 2)) for _ in range(4))
    return {"out": int(rng.choice(channels)), "kernel": kernel, "stride": int(rng.choice([1, 1, 2])),
            "dilation": dilation, "padding": padding,
            "groups": str(rng.choice(["1", "1", "1", "group", "dw"])),
            "bias": bool(rng.random() < 0.7), "relu": bool(rng.random() < 0.6)}


def _pick(rng, count: int, previous: int) -> int:
    """An earlier ref: often the previous op's input (siblings), else a recent output."""
    if previous is not None and rng.random() < 0.45:
        return previous
    if count == 0 or rng.random() < 0.1:
        return -1
    return int(count - 1 - min(count - 1, rng.geometric(0.4) - 1))


def random_spec(seed: int, num_ops=(3, 10), size=(8, 24), channels=(4, 32)) -> dict:
    """The op spec of random CNN ``seed`` (see the module docstring).

    Parameters
    ----------
    seed : int
        Seed; the same seed gives the same spec.
    num_ops, size, channels : (int, int)
        Inclusive ranges of the op count, the input's spatial size and the channel counts.
    """
    rng = np.random.default_rng(seed)
    chans = [c for c in (4, 6, 8, 12, 16, 24, 32) if channels[0] <= c <= channels[1]] or [channels[0]]
    spec = {"seed": int(seed), "size": int(rng.integers(size[0], size[1] + 1)),
            "channels": int(rng.choice([3, 4, 8]) if channels[0] <= 8 else channels[0]),
            "ops": []}
    kinds, weights = zip(*_KIND_WEIGHTS.items())
    probs = np.array(weights) / sum(weights)
    previous = None
    for _ in range(int(rng.integers(num_ops[0], num_ops[1] + 1))):
        count = len(spec["ops"])
        kind = str(rng.choice(kinds, p=probs))
        src = _pick(rng, count, previous)
        op = {"op": kind, "in": [src]}
        if kind in ("conv", "sepconv"):
            op.update(_conv_wish(rng, chans))
        elif kind in ("maxpool", "avgpool"):
            op.update(kernel=int(rng.choice([2, 3])), stride=int(rng.choice([1, 2])),
                      padding=int(rng.integers(0, 2)))
        elif kind in ("concat", "add"):
            op["in"] = [src, *_partners(rng, spec, src, kind)]
            if kind == "add" and len(op["in"]) == 1:  # a residual block: src + conv(src)
                spec["ops"].append(_residual_conv(rng, spec, src))
                op["in"] = [src, count]
        spec["ops"].append(op)
        previous = src
    return spec


def _residual_conv(rng, spec: dict, src: int) -> dict:
    """A shape-keeping convolution of ``src`` (the branch of a residual add)."""
    shapes = infer_shapes(spec)
    cin = spec["channels"] if src < 0 else shapes[src][0]
    k = int(rng.choice([1, 3]))
    return {"op": "conv", "in": [src], "out": cin, "kernel": (k, k), "stride": 1, "dilation": 1,
            "padding": (k // 2,) * 4, "groups": str(rng.choice(["1", "dw"])),
            "bias": True, "relu": bool(rng.random() < 0.5)}


def _partners(rng, spec: dict, src: int, kind: str) -> list[int]:
    """Refs to join with ``src``: of its shape for an add, of its spatial size for a concat."""
    shapes = infer_shapes(spec)
    inp = (spec["channels"], spec["size"], spec["size"])
    want = inp if src < 0 else shapes[src]
    refs = [-1, *range(len(shapes))]
    same = [r for r in refs if r != src and
            ((inp if r < 0 else shapes[r]) == want if kind == "add"
             else (inp if r < 0 else shapes[r])[1:] == want[1:])]
    if not same:
        return [src] if kind == "concat" else []
    picks = rng.choice(same, size=min(len(same), 1 + int(kind == "concat" and rng.random() < 0.4)),
                       replace=False)
    return [int(r) for r in picks]


def random_cnn(seed: int, **ranges):
    """Random multi-branch CNN ``seed`` as ``(IRModule, params)`` (see :func:`random_spec`
    for ``ranges``); deterministic per seed. The module returns every output no op reads
    (a tuple when there are several)."""
    return build_cnn(random_spec(seed, **ranges))


def build_cnn(spec: dict):
    """Emit ``spec`` as ``(IRModule, params)``: ``main(x, <weights...>)``, ``num_input=1``."""
    emitter = _Emitter(spec)
    return emitter.build()


class _Emitter:
    """Emits a spec's ops with one BlockBuilder, collecting the weights as parameters."""

    def __init__(self, spec: dict):
        self.spec = spec
        self.params: dict[str, np.ndarray] = {}
        self.pvars: list = []

    def weight(self, index: int, tag: str, shape, scale: float):
        rng = np.random.default_rng([self.spec["seed"], index, len(tag), len(self.params)])
        name = f"p{index}_{tag}"
        self.params[name] = (rng.standard_normal(shape) * scale).astype("float32")
        var = relax.Var(name, relax.TensorType(shape, "float32"))
        self.pvars.append(var)
        return var

    def build(self):
        spec = self.spec
        shape = (1, spec["channels"], spec["size"], spec["size"])
        x = relax.Var("x", relax.TensorType(shape, "float32"))
        # Emit once to learn the weights' parameters, then for real inside the function.
        bb = relax.BlockBuilder()
        body = self._emit_all(bb, x, dry=True)
        del body
        bb = relax.BlockBuilder()
        with bb.function("main", [x, *self.pvars], attrs={"num_input": 1}):
            with bb.dataflow():
                outs = self._emit_all(bb, x, dry=False)
                tails = [outs[i] for i in sinks(spec)] or [x]
                res = tails[0] if len(tails) == 1 else bb.emit(relax.Tuple(tails))
                gv = bb.emit_output(res)
            bb.emit_func_output(gv)
        return bb.get(), dict(self.params)

    def _emit_all(self, bb, x, dry: bool):
        if not dry:
            self._pvar_iter = iter(self.pvars)
        else:
            self.params, self.pvars = {}, []
        self.dry = dry
        outs, shapes = [], []
        inp = (self.spec["channels"], self.spec["size"], self.spec["size"])
        for i, op in enumerate(self.spec["ops"]):
            ins = [(x, inp) if r < 0 else (outs[r], shapes[r]) for r in op["in"]]
            attrs, out_shape, keep = resolve(op, [s for _, s in ins])
            values = [ins[k][0] for k in keep]
            outs.append(self._emit(bb, i, op, attrs, values, ins[0][1]) if not dry else None)
            if dry:
                self._make_weights(i, op, attrs, ins[0][1])
            shapes.append(out_shape)
        return outs

    def _make_weights(self, i, op, attrs, shape):
        if attrs.get("alias"):
            return
        if op["op"] == "conv":
            self._conv_weights(i, "", attrs, shape[0], op.get("bias", False))
        elif op["op"] == "sepconv":
            self._conv_weights(i, "dw", attrs["dw"], shape[0], False)
            self._conv_weights(i, "pw", attrs["pw"], shape[0], True)

    def _conv_weights(self, i, tag, attrs, cin, bias):
        kh, kw = attrs["kernel"]
        fan = cin // attrs["groups"] * kh * kw
        self.weight(i, tag + "w", (attrs["out"], cin // attrs["groups"], kh, kw),
                    1.0 / np.sqrt(fan))
        if bias:
            self.weight(i, tag + "b", (1, attrs["out"], 1, 1), 0.1)

    def _next(self):
        return next(self._pvar_iter)

    def _conv(self, bb, x, attrs, bias, relu):
        y = bb.emit(relax.op.nn.conv2d(x, self._next(), strides=attrs["stride"],
                                       padding=attrs["padding"], dilation=attrs["dilation"],
                                       groups=attrs["groups"]))
        if bias:
            y = bb.emit(relax.op.add(y, self._next()))
        return bb.emit(relax.op.nn.relu(y)) if relu else y

    def _emit(self, bb, i, op, attrs, values, shape):
        kind, x = op["op"], values[0]
        if attrs.get("alias"):
            return x
        if kind == "conv":
            return self._conv(bb, x, attrs, op.get("bias", False), op.get("relu", False))
        if kind == "sepconv":
            return self._conv(bb, self._conv(bb, x, attrs["dw"], False, False), attrs["pw"],
                              True, True)
        if kind in ("maxpool", "avgpool"):
            pool = relax.op.nn.max_pool2d if kind == "maxpool" else relax.op.nn.avg_pool2d
            return bb.emit(pool(x, attrs["kernel"], attrs["stride"], attrs["padding"]))
        if kind == "gap":
            return bb.emit(relax.op.nn.adaptive_avg_pool2d(x, (1, 1)))
        if kind == "concat":
            return bb.emit(relax.op.concat(values, axis=1))
        if kind == "add":
            return bb.emit(relax.op.add(values[0], values[1]))
        if kind == "gate":
            return bb.emit(relax.op.multiply(x, bb.emit(relax.op.sigmoid(x))))
        if kind == "clip":
            return bb.emit(relax.op.clip(x, 0.0, 6.0))
        return bb.emit(relax.op.nn.relu(x))
