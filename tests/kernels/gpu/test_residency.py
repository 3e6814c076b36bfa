"""Residency on a real GPU: the decision from the driver's numbers (injected here), and the
queries themselves on a GPU host (marked ``gpu``)."""
import pytest

from tvm_ios.kernels.gpu.residency import DeviceLimits, KernelUse, residency_verdict

KB = 1024
H100_SXM = DeviceLimits("NVIDIA H100 80GB HBM3", "sm_90", 132, 2048, 32, 65536, 228 * KB,
                        227 * KB, KB)
H100_PCIE = DeviceLimits("NVIDIA H100 PCIe", "sm_90", 114, 2048, 32, 65536, 228 * KB,
                         227 * KB, KB)
L4 = DeviceLimits("NVIDIA L4", "sm_89", 58, 1536, 24, 65536, 100 * KB, 99 * KB, KB)


def test_program_sized_for_the_sxm_part_is_refused_on_the_pcie_part():
    kernel = KernelUse("p", 256, 32, 20 * KB)  # 228 KB / 21 KB = 10, threads: 8 per SM
    ok, text = residency_verdict(H100_SXM, kernel, 1056)
    assert ok and "8 blocks per SM x 132 SMs = 1056" in text
    ok, text = residency_verdict(H100_PCIE, kernel, 1056)
    assert not ok and "8 blocks per SM x 114 SMs = 912" in text and "H100 PCIe" in text


def test_reserved_shared_memory_counts():
    kernel = KernelUse("p", 128, 32, 45 * KB)
    ok, text = residency_verdict(L4, kernel, 2 * 58)  # 100 KB / 46 KB = 2 blocks
    assert ok
    big = KernelUse("p", 128, 32, 50 * KB)  # 50 + 1 reserved: only 1 fits in 100 KB
    ok, text = residency_verdict(L4, big, 2 * 58)
    assert not ok and "+1024 B reserved" in text and "limited by shared memory" in text


def test_the_drivers_occupancy_figure_wins_when_smaller():
    kernel = KernelUse("p", 256, 32, 0, blocks_per_sm=3)  # e.g. registers the formula misses
    ok, text = residency_verdict(H100_SXM, kernel, 4 * 132)
    assert not ok and "driver's occupancy calculator" in text and "3 blocks per SM" in text


def test_no_cooperative_launch_is_refused():
    device = DeviceLimits("old", "sm_80", 108, 2048, 32, 65536, 164 * KB, 163 * KB, KB, False)
    assert not residency_verdict(device, KernelUse("p", 64, 32, 0), 1)[0]


@pytest.mark.gpu
def test_device_and_kernel_queries_on_this_gpu():
    from tvm_ios import _tvm
    from tvm_ios.kernels.gpu.programs import build_program, plan_programs
    from tvm_ios.kernels.gpu.build import build_kernels
    from tvm_ios.kernels.gpu.residency import check_program, query_device
    from tvm_ios.testing import dag_model

    device = query_device()
    assert device.sms > 0 and device.smem_per_sm >= device.smem_per_block > 0
    target = _tvm.make_target({"kind": "cuda", "arch": device.arch})
    regions, gpu, vdevice = plan_programs(dag_model(3, num_ops=4)[0], target, "wavefront")
    (ops, program), = regions
    kernel = build_program(program, ops, gpu, vdevice, target)
    text = check_program(kernel, build_kernels(kernel, target).source, target)
    assert "blocks per SM" in text
