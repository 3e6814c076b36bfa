"""Hardware presets: the paper's DSA and GPUs from tvm_ios.hardware."""
import pytest

from tvm_ios.hardware import get_device
from tvm_ios.graphturbo.hwspec import get_hw


def test_dsa_preset_is_the_papers_stcp920():
    dsa = get_hw("dsa")
    assert (dsa.clusters, dsa.cores, dsa.lb_bytes, dsa.gb_bytes) == (4, 8, 65536, 8 << 20)
    assert dsa.local_capacity == 8 * 65536


@pytest.mark.parametrize("name", ["h100", "a100"])
def test_gpu_presets_use_shared_memory_and_l2(name):
    dev, hw = get_device(name), get_hw(name)
    assert hw.lb_bytes == dev.shared_kb * 1024 and hw.gb_bytes == dev.l2_kb * 1024
    assert hw.cores == dev.units and hw.clusters == 1


def test_unknown_preset_is_named():
    with pytest.raises(ValueError, match="unknown GraphTurbo hardware 'tpu'"):
        get_hw("tpu")
