"""vDevice occupancy: vEU counts from per-SM limits, refusal with the numbers."""
import pytest

from tvm_ios.kernels.vdevice import VDEVICES, ResidencyError, cpu_vdevice


def test_h100_occupancy_by_limit():
    h100 = VDEVICES["h100"]
    assert h100.blocks_per_sm(256) == (8, "threads")            # 2048 / 256
    assert h100.max_veus(256) == 8 * 132
    assert h100.blocks_per_sm(128, regs_per_thread=128) == (4, "registers")  # 65536/16384
    assert h100.blocks_per_sm(64, smem_bytes=100 * 1024) == (2, "shared memory")
    assert h100.blocks_per_sm(64, smem_bytes=230 * 1024)[0] == 0  # over the per-block cap


def test_too_many_veus_refused_with_numbers():
    with pytest.raises(ResidencyError) as err:
        VDEVICES["a100"].check(1000, threads=256, smem_bytes=64 * 1024)
    text = str(err.value)
    assert "1000" in text and "2 per SM x 108 SMs = 216" in text and "shared memory" in text
    VDEVICES["a100"].check(216, threads=256, smem_bytes=64 * 1024)


def test_cpu_vdevice_is_one_veu_per_worker():
    cpu = cpu_vdevice(3)
    assert cpu.max_veus(1) == 3
    with pytest.raises(ResidencyError, match="4 resident vEUs"):
        cpu.check(4)
