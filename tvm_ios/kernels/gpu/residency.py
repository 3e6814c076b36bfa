"""Can every vEU of a persistent kernel be resident on *this* GPU? The driver's numbers.

The presets (:data:`~tvm_ios.kernels.vdevice.VDEVICES`) size programs for one GPU per
architecture; the GPU a program runs on may have fewer SMs (an L4 has 58, an H100 PCIe 114)
or less shared memory. On a host with a CUDA device, :func:`check_program` reads the
device (SM count, shared memory per SM and per block, the driver's reserved shared memory
per block, registers, blocks and threads per SM) and the compiled kernel's occupancy
(``cuOccupancyMaxActiveBlocksPerMultiprocessor`` on its cubin) from the CUDA driver API
through ctypes, and refuses a program whose vEUs cannot all be resident: ``RProgramPass``
then runs that stage's own kernels instead and warns with the numbers. The decision itself
(:func:`residency_verdict`) is plain arithmetic on those numbers, tested with injected
figures; the queries run only where a GPU is.

Two more guards stand behind it: the kernels are launched cooperatively (the driver
refuses, with an error, a grid that cannot be co-resident), and every wait is bounded.
"""
from __future__ import annotations

import ctypes
import logging
from dataclasses import dataclass

from ..vdevice import ResidencyError, VDevice

__all__ = ["DeviceLimits", "KernelUse", "residency_verdict", "query_device",
           "query_kernel", "check_program"]

logger = logging.getLogger(__name__)

# CUdevice_attribute and CUfunction_attribute values (cuda.h)
_ATTRS = {"sms": 16, "max_threads_per_sm": 39, "smem_per_sm": 81, "regs_per_sm": 82,
          "smem_per_block": 97, "max_blocks_per_sm": 106, "reserved_smem_per_block": 111,
          "major": 75, "minor": 76, "cooperative": 95}
_FUNC_NUM_REGS, _FUNC_STATIC_SMEM, _FUNC_MAX_DYNAMIC_SMEM = 4, 1, 8


@dataclass(frozen=True)
class DeviceLimits:
    """A CUDA device's residency limits, as the driver reports them."""

    name: str
    arch: str
    sms: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    regs_per_sm: int
    smem_per_sm: int
    smem_per_block: int
    reserved_smem_per_block: int
    cooperative: bool = True

    def vdevice(self) -> VDevice:
        """These limits as a :class:`VDevice`."""
        return VDevice(self.name, self.sms, self.max_threads_per_sm, self.max_blocks_per_sm,
                       self.regs_per_sm, self.smem_per_sm, self.smem_per_block, "gpu",
                       self.arch, self.reserved_smem_per_block)


@dataclass(frozen=True)
class KernelUse:
    """What one block of the compiled kernel uses; ``blocks_per_sm`` is the driver's
    occupancy figure for it (None where no cubin could be loaded)."""

    name: str
    threads: int
    registers: int
    dynamic_smem: int
    static_smem: int = 0
    blocks_per_sm: int | None = None


def residency_verdict(device: DeviceLimits, kernel: KernelUse, num_veus: int
                      ) -> tuple[bool, str]:
    """Whether ``num_veus`` blocks of ``kernel`` can all be resident on ``device``, and why.

    The per-SM count is the smaller of the occupancy arithmetic on the device's limits and
    the driver's own figure when there is one.
    """
    smem = kernel.dynamic_smem + kernel.static_smem
    per_sm, resource = device.vdevice().blocks_per_sm(kernel.threads, kernel.registers, smem)
    if kernel.blocks_per_sm is not None and kernel.blocks_per_sm < per_sm:
        per_sm, resource = kernel.blocks_per_sm, "the driver's occupancy calculator"
    if smem > device.smem_per_block:
        per_sm, resource = 0, f"shared memory per block (at most {device.smem_per_block} B)"
    limit = per_sm * device.sms
    text = (f"{kernel.name}: {num_veus} vEUs of {kernel.threads} threads, "
            f"{kernel.registers} registers/thread, {smem} B shared memory "
            f"(+{device.reserved_smem_per_block} B reserved) on {device.name} ({device.arch}, "
            f"{device.sms} SMs, {device.smem_per_sm} B shared memory and "
            f"{device.regs_per_sm} registers per SM): {per_sm} blocks per SM x {device.sms} "
            f"SMs = {limit} resident at most (limited by {resource})")
    return num_veus <= limit and device.cooperative, text


def _driver():
    lib = ctypes.CDLL("libcuda.so.1")
    _check(lib.cuInit(0), "cuInit")
    return lib


def _check(code: int, what: str) -> None:
    if code != 0:
        raise RuntimeError(f"CUDA driver call {what} failed with CUresult {code}")


def query_device(ordinal: int = 0) -> DeviceLimits:
    """The residency limits of CUDA device ``ordinal`` (driver API, needs a GPU)."""
    lib = _driver()
    dev = ctypes.c_int()
    _check(lib.cuDeviceGet(ctypes.byref(dev), ordinal), "cuDeviceGet")
    values = {}
    for key, attr in _ATTRS.items():
        value = ctypes.c_int()
        _check(lib.cuDeviceGetAttribute(ctypes.byref(value), attr, dev), f"attribute {key}")
        values[key] = value.value
    name = ctypes.create_string_buffer(256)
    _check(lib.cuDeviceGetName(name, 256, dev), "cuDeviceGetName")
    arch = f"sm_{values.pop('major')}{values.pop('minor')}"
    return DeviceLimits(name.value.decode(), arch, cooperative=bool(values.pop("cooperative")),
                        **values)


def query_kernel(cubin: bytes, name: str, threads: int, dynamic_smem: int,
                 ordinal: int = 0) -> KernelUse:
    """Registers, static shared memory and the driver's occupancy (blocks per SM) of
    kernel ``name`` in ``cubin`` launched with ``threads`` and ``dynamic_smem`` bytes."""
    lib = _driver()
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    _check(lib.cuDeviceGet(ctypes.byref(dev), ordinal), "cuDeviceGet")
    _check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    module, func = ctypes.c_void_p(), ctypes.c_void_p()
    try:
        _check(lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        _check(lib.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(bytes(cubin))),
               "cuModuleLoadData")
        _check(lib.cuModuleGetFunction(ctypes.byref(func), module, name.encode()),
               f"cuModuleGetFunction({name})")
        if dynamic_smem > 48 * 1024:
            _check(lib.cuFuncSetAttribute(func, _FUNC_MAX_DYNAMIC_SMEM, dynamic_smem),
                   "cuFuncSetAttribute")
        regs, static, blocks = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        _check(lib.cuFuncGetAttribute(ctypes.byref(regs), _FUNC_NUM_REGS, func), "registers")
        _check(lib.cuFuncGetAttribute(ctypes.byref(static), _FUNC_STATIC_SMEM, func), "smem")
        _check(lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(
            ctypes.byref(blocks), func, threads, ctypes.c_size_t(dynamic_smem)), "occupancy")
        return KernelUse(name, threads, regs.value, dynamic_smem, static.value, blocks.value)
    finally:
        if module.value:
            lib.cuModuleUnload(module)
        lib.cuDevicePrimaryCtxRelease_v2(dev)


def check_program(kernel, source: str, target, ordinal: int = 0) -> str:
    """Check a built persistent kernel against CUDA device ``ordinal``.

    Compiles ``source`` to a cubin for the device (nvcc, as TVM does), reads its occupancy
    and the device's limits, and raises :class:`ResidencyError` with the numbers when its
    vEUs cannot all be resident. Returns the verdict's text otherwise.
    """
    from ... import _tvm  # noqa: PLC0415

    from .build import persistent_kernel  # noqa: PLC0415

    device = query_device(ordinal)
    _, name = persistent_kernel(source, kernel.program.name)
    smem = -(-max(r.smem_bytes for r in kernel.rops.values()) // 4) * 4
    cubin = _tvm.compile_cuda(source, _tvm.make_target({"kind": "cuda", "arch": device.arch}))
    use = query_kernel(cubin, name, kernel.threads, smem, ordinal)
    ok, text = residency_verdict(device, use, kernel.program.num_veus)
    if not ok:
        raise ResidencyError(f"refused on this GPU: {text}")
    logger.info("resident on this GPU: %s", text)
    return text
