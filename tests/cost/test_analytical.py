"""The roofline model: hand-checkable blocks, waves and SM sharing."""
import pytest

from tvm_ios.cost.analytical import AnalyticalCostModel, Kernel
from tvm_ios.cost.devices import DeviceSpec


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
