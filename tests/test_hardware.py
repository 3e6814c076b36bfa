"""One table of hardware: the vDevices and the analytical GPU presets come from GPU_PARTS."""
from tvm_ios.hardware import DEVICES, GPU_PARTS
from tvm_ios.kernels.vdevice import ARCH_PRESETS, VDEVICES, get_vdevice


def test_vdevices_are_the_parts_table():
    for name, vdev in VDEVICES.items():
        part = GPU_PARTS[name]
        assert (vdev.sms, vdev.smem_per_sm, vdev.smem_per_block, vdev.arch) == \
            (part.sms, part.smem_per_sm_kb * 1024, part.smem_per_block_kb * 1024, part.arch)
        assert vdev.cost_device in DEVICES


def test_the_h100_is_written_once():
    assert get_vdevice("h100").sms == DEVICES["h100"].units == 132
    assert get_vdevice("h100").smem_per_sm == DEVICES["h100"].shared_kb * 1024 == 228 * 1024
    assert ARCH_PRESETS["sm_90a"] == "h100" and VDEVICES["a100"].arch == "sm_80"
