"""The roofline model: hand-checkable blocks, waves and SM sharing."""
import pytest

from tvm_ios.cost.analytical import AnalyticalCostModel, Kernel
from tvm_ios.hardware import DeviceSpec
from tvm_ios.cost.pricing import check_cost_model
from tvm_ios.hardware import get_device
from tvm_ios.graph.opgraph import OpGraph, OpNode


@pytest.fixture
def model():
    # 4 SMs x 2 blocks, 1 GFLOP/s = 1 flop/ns, 1000 outputs per block, no launch or sync cost
    return AnalyticalCostModel(DeviceSpec("toy", 4, 1.0, 1e9, 0.0, 0.0, 1000, 96, 1, 2))


def test_waves_and_tail(model):
    one_block = Kernel(flops=1000.0, bytes=0.0, outputs=1000)  # 1 us of work on full device
    assert model.blocks(one_block) == 1
    assert model.kernel_time(one_block) == pytest.approx(8.0)  # one slot of eight busy
    full_wave = Kernel(8000.0, 0.0, 8000)
    assert model.kernel_time(full_wave) == pytest.approx(8.0)
    nine = Kernel(9000.0, 0.0, 9000)  # one block more than a wave: two waves
    assert model.kernel_time(nine) == pytest.approx(2 * 9.0 * 8 / 9)


def test_small_groups_share_the_device_large_ones_do_not(model):
    small = [Kernel(2000.0, 0.0, 2000)]  # 2 blocks, 8 us alone
    assert model.groups_latency([small, small]) == pytest.approx(8.0)  # side by side
    big = [Kernel(8000.0, 0.0, 8000)]  # a full wave each: they split the slots
    assert model.groups_latency([big, big]) == pytest.approx(16.0)
    assert model.shares([big, big]) == [4, 4]


def test_devices_without_concurrency_run_groups_back_to_back():
    cpu = AnalyticalCostModel("llvm")
    work = [Kernel(1e6, 1e3, 8192)]
    assert cpu.groups_latency([work, work]) == pytest.approx(2 * cpu.groups_latency([work]))


# -- basics kept from the first analytical model --------------------------------
def _node(name, flops, outputs, **attrs):
    return OpNode(name, kind="conv2d", shape=(1, outputs, 1, 1), flops=flops,
                  bytes=flops // 10, attrs=attrs)


def test_small_ops_gain_from_concurrency_large_ones_do_not():
    model = AnalyticalCostModel("v100")
    small = OpGraph([_node("a", 10 ** 6, 2048), _node("b", 10 ** 6, 2048)], [])
    seq = sum(model.stage_latency(small, [[i]]) for i in range(2))
    assert model.stage_latency(small, [[0], [1]]) < 0.7 * seq
    big = OpGraph([_node("a", 10 ** 11, 10 ** 7), _node("b", 10 ** 11, 10 ** 7)], [])
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


@pytest.mark.parametrize("device", ["v100", "h100", "llvm"])
def test_batch_prices_equal_single_prices_bit_for_bit(device):
    import random

    import numpy as np

    rng = random.Random(device)
    nodes = [OpNode(f"op{i}", "conv2d", (1, rng.choice((8, 64, 512)), 14, 14),
                    flops=rng.randint(10 ** 4, 10 ** 9), bytes=rng.randint(10 ** 3, 10 ** 7))
             for i in range(40)]
    graph = OpGraph(nodes, [])
    model = AnalyticalCostModel(device)
    stages = []
    for _ in range(300):
        ops = rng.sample(range(40), 24)
        stages.append([sorted(ops[3 * g:3 * g + rng.randint(1, 3)])
                       for g in range(rng.randint(1, 8))])
    batch = np.full((len(stages), 8, 3), -1)
    for k, stage in enumerate(stages):
        for g, group in enumerate(stage):
            batch[k, g, :len(group)] = group
    single = [model.stage_latency(graph, stage) for stage in stages]
    assert model.stage_latencies(graph, batch).tolist() == single
