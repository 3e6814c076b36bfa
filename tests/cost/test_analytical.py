"""The analytical model: concurrency helps small ops, not large ones; merge pricing."""
import pytest

from tvm_ios.cost.analytical import AnalyticalCostModel
from tvm_ios.cost.base import check_cost_model
from tvm_ios.cost.devices import get_device
from tvm_ios.graph.opgraph import OpGraph, OpNode


def node(name, flops, outputs, **attrs):
    return OpNode(name, kind="conv2d", shape=(1, outputs, 1, 1), flops=flops,
                  bytes=flops // 10, attrs=attrs)


def test_small_ops_gain_from_concurrency_large_ones_do_not():
    model = AnalyticalCostModel("v100")
    small = OpGraph([node("a", 10 ** 6, 2048), node("b", 10 ** 6, 2048)], [])
    seq = sum(model.stage_latency(small, [[i]]) for i in range(2))
    assert model.stage_latency(small, [[0], [1]]) < 0.7 * seq
    big = OpGraph([node("a", 10 ** 11, 10 ** 7), node("b", 10 ** 11, 10 ** 7)], [])
    seq = sum(model.stage_latency(big, [[i]]) for i in range(2))
    assert model.stage_latency(big, [[0], [1]]) >= 0.99 * seq


def test_merged_latency_only_for_mergeable_ops():
    model = AnalyticalCostModel()
    attrs = dict(input="%1", kernel=[1, 1], strides=[1, 1], padding=[0, 0, 0, 0],
                 dilation=[1, 1], groups=1, channels=8, in_channels=8, epilogue=[],
                 bias=False, data_layout="NCHW", kernel_layout="OIHW", in_shape=[1, 8, 4, 4])
    a = OpNode("a", "conv2d", (1, 8, 4, 4), flops=2048, bytes=1024, attrs=dict(attrs))
    b = OpNode("b", "conv2d", (1, 8, 4, 4), flops=2048, bytes=1024, attrs=dict(attrs))
    graph = OpGraph([a, b], [])
    merged = model.merged_latency(graph, [0, 1])
    assert merged is not None and merged < model.stage_latency(graph, [[0], [1]])
    graph.nodes[1].attrs["input"] = "%2"
    assert model.merged_latency(graph, [0, 1]) is None


def test_protocol_and_devices():
    assert check_cost_model(AnalyticalCostModel("h100")).device.units == 132
    with pytest.raises(TypeError, match="not a cost model"):
        check_cost_model(object())
    with pytest.raises(ValueError, match="unknown device"):
        get_device("tpu")
