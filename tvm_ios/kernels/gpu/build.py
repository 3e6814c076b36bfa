"""Build persistent rProgram kernels into a runtime module: CUDA or OpenCL source through TVM.

The kernels are already lowered up to the merge (:mod:`tvm_ios.kernels.gpu.tir_pipeline`);
TVM's own pipeline after the cut splits host and device code and packs the API, and TVM's
codegen prints the device source. All kernels of a module go into one runtime module (one
host module importing one CUDA or OpenCL module), which ``RProgramPass`` attaches to the
Relax module as ``external_mods``; the device functions the kernels call go in with them
(:mod:`~tvm_ios.kernels.gpu.device_functions`).
"""
from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import dataclass

from ... import _tvm
from .device_functions import inline_functions, module_of, out_of_line
from .tir_pipeline import build_merged

__all__ = ["GPUModule", "build_kernels", "device_source", "device_sources", "kernel_signatures",
           "persistent_kernel"]

logger = logging.getLogger(__name__)
_SIGNATURE = re.compile(r"(?:__kernel|__global__) void (?:__launch_bounds__\([^)]*\) )?"
                        r"(\w+)\(([^)]*)\)\s*\{")


@dataclass
class GPUModule:
    """Built kernels: the runtime module and its device source (CUDA or OpenCL C)."""

    lib: object
    source: str
    kind: str


def device_sources(module, kind: str) -> list[str]:
    """Sources of the ``kind`` modules (``cuda``, ``opencl``) in ``module`` and everything it
    imports, breadth first (a library's own kernels before its external modules)."""
    found, queue = [], [module]
    while queue:
        module = queue.pop(0)
        if module.kind == kind:
            found.append(module.inspect_source(""))
        queue.extend(module.imports)
    return found


def device_source(lib, kind: str) -> str:
    """The ``kind`` (``cuda`` or ``opencl``) source of the device module ``lib`` imports."""
    found = device_sources(lib, kind)
    if not found:
        raise RuntimeError(f"the built module holds no {kind} module (imports: "
                           f"{[m.kind for m in lib.imports]})")
    return found[0]


def build_kernels(kernels, target, arg_checks: bool = True) -> GPUModule:
    """Build persistent kernels for a CUDA or OpenCL target.

    ``kernels``: one or more :class:`~tvm_ios.kernels.gpu.programs.PersistentKernel` (each
    with the device functions it calls; one function of a name is kept) or PrimFuncs that
    call none, named by ``global_symbol``. ``arg_checks=False`` leaves out the host stubs'
    checks of each argument (type, shape, dtype, device, offset): for kernels only a VM
    calls, with the tensors its module's types fix.
    """
    kernels = [kernels] if not isinstance(kernels, (list, tuple)) else list(kernels)
    funcs, functions, callers = [], {}, Counter()
    for kernel in kernels:
        funcs.append(getattr(kernel, "func", kernel))
        calls = getattr(kernel, "functions", {})
        functions.update(calls)
        callers.update(calls.keys())
    target = _tvm.make_target(target)
    if target.kind.name == "cuda":  # a body several kernels call is compiled once
        functions = {name: out_of_line(name, f) if callers[name] > 1 else f
                     for name, f in functions.items()}
    mod = module_of(funcs, functions)
    if target.kind.name != "cuda":  # OpenCL's codegen prints kernels only
        mod = inline_functions(mod)
    mod = _tvm.tirx.transform.BindTarget(target)(mod)
    lib = build_merged(mod, target, arg_checks)
    kind = target.kind.name
    return GPUModule(lib, device_source(lib, kind), kind)


def kernel_signatures(source: str) -> dict[str, list[str]]:
    """Kernel name -> parameter names (without TVM's ``_ptr`` suffix), from CUDA or OpenCL
    source."""
    kernels = {}
    for name, params in _SIGNATURE.findall(source):
        kernels[name] = [re.search(r"(\w+?)(?:_ptr)?$", p.strip()).group(1)
                         for p in params.split(",")]
    return kernels


def persistent_kernel(source: str, program: str) -> tuple[str, str]:
    """Names of ``program``'s zeroing kernel and persistent kernel in ``source``."""
    mine = {k: p for k, p in kernel_signatures(source).items() if k.startswith(program)}
    zero = [k for k, p in mine.items() if p == ["rp_steps"]]
    main = [k for k, p in mine.items() if "rp_offsets" in p]
    if len(zero) != 1 or len(main) != 1:
        raise RuntimeError(f"expected one zeroing and one persistent kernel of {program}, "
                           f"found {sorted(mine)}")
    return zero[0], main[0]
