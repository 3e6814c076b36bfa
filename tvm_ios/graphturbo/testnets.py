"""Hand-built Relax networks for GraphTurbo's tests and CLI until the model zoo lands.

ResNet-50 (v1.5, batch norm folded into a bias), MobileNet-v2 and SqueezeNet-1.1, built
with ``relax.BlockBuilder`` in NCHW with weights as parameters after the single data input
(``num_input = 1``). :func:`get` returns ``(IRModule, params)`` with seeded random weights
scaled to keep activations near unit size. ``tvm_ios.models.get`` is preferred where it
exists (see :func:`tvm_ios.cli.graphturbo.load_model`).
"""
from __future__ import annotations

import numpy as np
from tvm import relax

__all__ = ["get", "names"]


class _Net:
    def __init__(self, batch: int, image: int, seed: int = 0):
        self.bb = relax.BlockBuilder()
        self.data = relax.Var("data", relax.TensorType((batch, 3, image, image), "float32"))
        self.weights: list = []
        self.params: dict = {}
        self.rng = np.random.default_rng(seed)
        self.count = 0

    def _param(self, shape, fan_in):
        name = f"w{self.count}"
        self.count += 1
        var = relax.Var(name, relax.TensorType(shape, "float32"))
        self.weights.append(var)
        scale = np.sqrt(2.0 / max(1, fan_in))
        self.params[name] = (self.rng.standard_normal(shape) * scale).astype("float32")
        return var

    def conv(self, x, cout, k, stride=1, groups=1, act="relu"):
        cin = x.ty.shape.values[1].value
        w = self._param((cout, cin // groups, k, k), cin // groups * k * k)
        b = self._param((1, cout, 1, 1), 1)
        pad = k // 2
        y = self.bb.emit(relax.op.nn.conv2d(x, w, strides=stride, padding=pad, groups=groups))
        y = self.bb.emit(relax.op.add(y, b))
        if act == "relu":
            y = self.bb.emit(relax.op.nn.relu(y))
        elif act == "relu6":
            y = self.bb.emit(relax.op.clip(y, 0.0, 6.0))
        return y

    def head(self, x, classes=10):
        x = self.bb.emit(relax.op.nn.adaptive_avg_pool2d(x, (1, 1)))
        batch, cin = (int(v.value) for v in x.ty.shape.values[:2])
        x = self.bb.emit(relax.op.reshape(x, (batch, cin)))
        w = self._param((cin, classes), cin)
        return self.bb.emit(relax.op.matmul(x, w))

    def build(self, body):
        with self.bb.function("main", [self.data]):
            with self.bb.dataflow():
                out = self.bb.emit_output(body(self, self.data))
            self.bb.emit_func_output(out)
        func = self.bb.get()["main"]
        func = func.with_attr("num_input", 1)
        new_params = list(func.params) + self.weights
        func = relax.Function(new_params, func.body, func.ret_ty, func.is_pure, func.attrs)
        mod = self.bb.get()
        mod["main"] = func
        return mod, self.params


def _resnet50(net, x):
    x = net.conv(x, 64, 7, 2)
    x = net.bb.emit(relax.op.nn.max_pool2d(x, 3, 2, 1))
    cin = 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            s = stride if i == 0 else 1
            y = net.conv(x, width, 1)
            y = net.conv(y, width, 3, s)
            y = net.conv(y, width * 4, 1, act=None)
            short = net.conv(x, width * 4, 1, s, act=None) if i == 0 else x
            x = net.bb.emit(relax.op.nn.relu(net.bb.emit(relax.op.add(y, short))))
            cin = width * 4
    del cin
    return net.head(x)


def _mobilenet_v2(net, x):
    x = net.conv(x, 32, 3, 2, act="relu6")
    cin = 32
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)):
        for i in range(n):
            stride = s if i == 0 else 1
            y = net.conv(x, cin * t, 1, act="relu6") if t != 1 else x
            y = net.conv(y, cin * t, 3, stride, groups=cin * t, act="relu6")
            y = net.conv(y, c, 1, act=None)
            x = net.bb.emit(relax.op.add(x, y)) if stride == 1 and cin == c else y
            cin = c
    x = net.conv(x, 1280, 1, act="relu6")
    return net.head(x)


def _squeezenet(net, x):
    x = net.conv(x, 64, 3, 2)
    x = net.bb.emit(relax.op.nn.max_pool2d(x, 3, 2, 1))
    for i, (sq, ex) in enumerate(((16, 64), (16, 64), (32, 128), (32, 128), (48, 192),
                                  (48, 192), (64, 256), (64, 256))):
        if i in (2, 4):
            x = net.bb.emit(relax.op.nn.max_pool2d(x, 3, 2, 1))
        s = net.conv(x, sq, 1)
        x = net.bb.emit(relax.op.concat([net.conv(s, ex, 1), net.conv(s, ex, 3)], axis=1))
    x = net.conv(x, 10, 1)
    return net.head(x)


_NETS = {"resnet50": _resnet50, "mobilenet_v2": _mobilenet_v2, "squeezenet": _squeezenet}


def names() -> list[str]:
    """Names of the stand-in networks."""
    return sorted(_NETS)


def get(name: str, batch_size: int = 1, image_size: int | None = None, seed: int = 0):
    """Build a stand-in network: ``(IRModule, params)``."""
    if name not in _NETS:
        raise ValueError(f"unknown network {name!r}; known: {names()}")
    net = _Net(batch_size, image_size or 224, seed)
    return net.build(_NETS[name])
