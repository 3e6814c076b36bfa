"""Tests of the plain-data network definition: builders, names, shapes, copies."""
from __future__ import annotations

import json

import pytest

from tvm_ios.models.netdef import Net
from tvm_ios.models.shapes import window_out


def _small_net() -> Net:
    net = Net("small", meta={"num_classes": 10})
    x = net.input((2, 3, 18, 18))
    with net.scope("blk"):
        a = net.conv(x, 8, 3, stride=2, relu=True, name="c1")
        b = net.conv(x, 8, (1, 7), stride=2, padding=(0, 3), act="relu6")
        c = net.conv(net.max_pool(x, 3, 2, ceil_mode=True), 8, 1)
        s = net.add([a, b, c], name="sum")
        d = net.sepconv(net.relu(s), 16, 5)
        e = net.avg_pool(s, 3, 1, 1)
        g = net.mean([net.shift(e), e])
        h = net.concat([d, g, net.conv(s, 4, 3, dilation=2, groups=2)], name="cat")
    net.output(net.linear(net.flatten(net.global_avg_pool(h)), 10, name="fc"))
    return net


def test_shapes_and_names():
    net = _small_net()
    assert net["blk_c1"].shape == (2, 8, 9, 9)
    assert net["blk_conv1"].shape == (2, 8, 9, 9)  # auto-named, scope-prefixed
    assert net["blk_max_pool1"].shape == (2, 3, 9, 9)  # ceil mode: 17 -> 9
    assert net["blk_sepconv1_dw"].attrs["groups"] == 8
    assert net["blk_sepconv1_pw"].shape == (2, 16, 9, 9)
    assert net["blk_cat"].shape == (2, 16 + 8 + 4, 9, 9)
    assert net.output_node.name == "fc" and net.output_node.shape == (2, 10)
    assert net.batch_size == 2 and net.image_size == (18, 18)
    assert net["blk_c1"].params == {"w": (8, 3, 3, 3), "b": (8,)}
    assert net["blk_conv3"].params["w"] == (4, 4, 3, 3)  # groups=2 halves the input channels


def test_conv_same_padding_and_errors():
    net = Net("t")
    x = net.input((1, 4, 10, 10))
    assert net.conv(x, 4, 5).attrs["padding"] == (2, 2)
    assert net.conv(x, 4, 3, dilation=2).attrs["padding"] == (2, 2)
    with pytest.raises(ValueError, match="odd kernel"):
        net.conv(x, 4, 2)
    with pytest.raises(ValueError, match="groups"):
        net.conv(x, 4, 3, groups=3)
    with pytest.raises(ValueError, match="relu=True conflicts"):
        net.conv(x, 4, 3, relu=True, act="relu6")
    with pytest.raises(ValueError, match="too small"):
        net.conv(x, 4, 11, padding=0)
    with pytest.raises(ValueError, match="different shapes"):
        net.add([x, net.conv(x, 4, 3, stride=2)])
    with pytest.raises(ValueError, match="duplicate node name"):
        net.relu(x, name="data")
    with pytest.raises(ValueError, match="flatten"):
        net.linear(x, 3)


def test_window_out_matches_pytorch_ceil_rule():
    assert window_out(111, 3, 2, 0, ceil_mode=True) == 55
    assert window_out(17, 3, 2, 0, ceil_mode=True) == 8
    assert window_out(6, 3, 2, 1, ceil_mode=True) == 4
    assert window_out(5, 2, 2, 1, ceil_mode=True) == 3  # last window would start in padding
    assert window_out(299, 3, 2, 0) == 149


def test_counts_and_param_shapes():
    net = _small_net()
    counts = net.op_counts()
    assert counts["conv"] == 6 and counts["input"] == 1 and counts["linear"] == 1
    shapes = net.param_shapes()
    assert list(shapes)[:2] == ["blk_c1_w", "blk_c1_b"]
    assert net.num_params() == sum(int(__import__("math").prod(s)) for s in shapes.values())
    assert "6 conv" not in str(net) and "conv=6" in str(net)


def test_dict_roundtrip_and_resize():
    net = _small_net()
    copy = Net.from_dict(net.to_dict())
    assert copy == net
    assert Net.from_dict(json.loads(json.dumps(net.to_dict()))) == net
    big = net.resized(34, batch_size=1)
    assert big.input_node.shape == (1, 3, 34, 34)
    assert big["blk_c1"].shape == (1, 8, 17, 17)
    assert big.param_shapes() == net.param_shapes()
    assert net.resized() is net
    with pytest.raises(ValueError, match="too small"):
        net.resized(1)


def test_resize_rejects_size_dependent_params():
    net = Net("flat")
    x = net.input((1, 2, 4, 4))
    net.linear(net.flatten(x), 3)
    with pytest.raises(ValueError, match="depend on the input size"):
        net.resized(8)
