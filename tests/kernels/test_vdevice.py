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


def test_each_claimed_arch_has_a_preset_with_published_limits():
    from tvm_ios import _tvm
    from tvm_ios.kernels.vdevice import target_vdevice

    found = {arch: target_vdevice(_tvm.make_target({"kind": "cuda", "arch": arch}))
             for arch in ("sm_80", "sm_86", "sm_89", "sm_90")}
    assert {a: (v.name, v.sms) for a, v in found.items()} == {
        "sm_80": ("a100", 108), "sm_86": ("a10", 72), "sm_89": ("l4", 58),
        "sm_90": ("h100", 132)}
    assert target_vdevice(_tvm.make_target("nvidia/nvidia-h100")).name == "h100"  # sm_90a
    assert found["sm_89"].smem_per_sm == 100 * 1024 and found["sm_89"].max_threads_per_sm == 1536
    assert all(v.reserved_smem_per_block == 1024 for v in found.values())
    with pytest.raises(ValueError, match="no vDevice preset for CUDA arch 'sm_75'"):
        target_vdevice(_tvm.make_target({"kind": "cuda", "arch": "sm_75"}))


def test_reserved_shared_memory_per_block_counts():
    a100 = VDEVICES["a100"]  # 164 KB per SM: 41 KB blocks fit 4 times, 41 + 1 KB only 3
    assert a100.blocks_per_sm(64, smem_bytes=41 * 1024) == (3, "shared memory")
    assert a100.blocks_per_sm(64, smem_bytes=40 * 1024)[0] == 4


def test_opencl_vdevice_takes_the_targets_work_group_limits():
    from tvm_ios import _tvm
    from tvm_ios.kernels.vdevice import OPENCL_UNITS, target_vdevice

    vdev = target_vdevice(_tvm.make_target("opencl"))
    assert vdev.max_veus(256, smem_bytes=8 * 1024) == OPENCL_UNITS
    assert vdev.max_veus(256, smem_bytes=32 * 1024) == 0  # over the 16 KB of local memory
