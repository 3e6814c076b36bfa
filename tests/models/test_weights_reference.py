"""Tests of the NumPy reference executor and the deterministic, calibrated weights."""
from __future__ import annotations

import numpy as np
import pytest

from tvm_ios.models import reference
from tvm_ios.models.netdef import Net
from tvm_ios.models.weights import init_params


def _naive_conv(x, w, b, stride, pad, dil, groups):
    n, _, h, wd = x.shape
    o, cg, kh, kw = w.shape
    og = o // groups
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0],) * 2, (pad[1],) * 2))
    oh = (h + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    for oc in range(o):
        g = oc // og
        for i in range(oh):
            for j in range(ow):
                y0, x0 = i * stride[0], j * stride[1]
                patch = xp[:, g * cg:(g + 1) * cg, y0:y0 + dil[0] * (kh - 1) + 1:dil[0],
                           x0:x0 + dil[1] * (kw - 1) + 1:dil[1]]
                out[:, oc, i, j] = (patch * w[oc]).sum(axis=(1, 2, 3)) + b[oc]
    return out


@pytest.mark.parametrize("cin,cout,kernel,stride,pad,dil,groups", [
    (4, 6, (3, 3), 1, (1, 1), 1, 1),
    (4, 6, (1, 3), 2, (0, 1), 1, 2),
    (6, 6, (5, 5), 2, (2, 2), 1, 6),    # depthwise
    (6, 12, (3, 3), 1, (2, 2), 2, 3),   # dilated, grouped
    (8, 4, (1, 1), 2, (0, 0), 1, 1),    # strided pointwise fast path
])
def test_conv2d_matches_naive(cin, cout, kernel, stride, pad, dil, groups):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, cin, 9, 9)).astype(np.float32)
    w = rng.standard_normal((cout, cin // groups) + kernel).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32)
    got = reference.conv2d(x, w, b, (stride,) * 2, pad, (dil,) * 2, groups)
    np.testing.assert_allclose(got, _naive_conv(x, w, b, (stride,) * 2, pad, (dil,) * 2, groups),
                               rtol=1e-4, atol=1e-4)


def test_pools_and_shift():
    net = Net("p")
    x = net.input((1, 1, 4, 4))
    net.avg_pool(x, 3, 1, 1, count_include_pad=False, name="avg_ex")
    net.avg_pool(x, 3, 1, 1, count_include_pad=True, name="avg_in")
    net.max_pool(x, 3, 2, ceil_mode=True, name="max")
    net.shift(x, 1, 1, name="shift")
    data = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    corner = {"avg_ex": (0 + 1 + 4 + 5) / 4, "avg_in": (0 + 1 + 4 + 5) / 9}
    for name, value in corner.items():
        node = net[name]
        assert reference.run_node(node, [data], {})[0, 0, 0, 0] == pytest.approx(value)
    assert reference.run_node(net["max"], [data], {})[0, 0].tolist() == [[10, 11], [14, 15]]
    shifted = reference.run_node(net["shift"], [data], {})[0, 0]
    assert shifted[0].tolist() == [5, 6, 7, 0] and shifted[3].tolist() == [0, 0, 0, 0]


def _deep_net() -> Net:
    """A deep multi-branch net whose plain He weights blow activations up."""
    net = Net("deep")
    x = net.conv(net.input((1, 3, 16, 16)), 16, 3)
    prev = x
    for i in range(12):
        a = net.sepconv(net.relu(x), 16, 3)
        b = net.conv(net.relu(prev), 16, 1)
        prev, x = x, net.add([a, b, x], name=f"sum{i}")
    net.linear(net.flatten(net.global_avg_pool(x)), 5)
    return net


def test_weights_deterministic_and_seeded():
    net = _deep_net()
    p1, p2, p3 = init_params(net, 0), init_params(net, 0), init_params(net, 1)
    assert list(p1) == list(net.param_shapes())
    for name, shape in net.param_shapes().items():
        assert p1[name].shape == shape and p1[name].dtype == np.float32
        np.testing.assert_array_equal(p1[name], p2[name])
    assert not np.array_equal(p1["linear1_w"], p3["linear1_w"])


def test_calibration_keeps_activations_order_one():
    net = _deep_net()
    data = np.random.default_rng(3).standard_normal(net.input_node.shape).astype(np.float32)
    raw = reference.run(net, init_params(net, 0, calibrate_weights=False), data)
    calibrated = reference.run(net, init_params(net, 0), data)
    assert np.abs(raw).max() > 1e2  # why calibration exists
    assert 1e-2 < calibrated.std() < 10 and np.abs(calibrated).max() < 20
