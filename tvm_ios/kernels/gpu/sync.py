"""The synchronisation of a persistent kernel, spelled per GPU target in one place.

The persistent rProgram kernel (:mod:`tvm_ios.kernels.gpu.persistent`) is one TIR function for
every GPU target; only the few operations below differ, and each target's spelling is a
small strategy object:

=================  =====================================  ========================================
operation          CUDA                                   OpenCL 1.2
=================  =====================================  ========================================
poll (acquire)     ``ld.acquire.gpu.global.s32``          ``atomic_or(p, 0)``, then a global fence
signal (release)   ``st.release.gpu.global.s32``          global fence, then ``atomic_xchg``
atomics            ``atomicAdd``, ``atomicCAS``           ``atomic_add``, ``atomic_cmpxchg``
fence              ``__threadfence()``                    ``mem_fence(CLK_GLOBAL_MEM_FENCE)``
block barrier      ``__syncthreads()``                    ``barrier(CLK_LOCAL | CLK_GLOBAL)``
pause in a poll    ``__nanosleep(64)``                    (none)
wait bound         ``%globaltimer`` (microseconds)        a poll count (no clock to read)
shared memory      ``shared.dyn`` (``extern __shared__``)  ``shared`` (``__local``, sized)
launch             cooperative, ``__launch_bounds__``     (plain)
op's tensors       chosen pointers and offsets            chosen offsets of kept tensors only
=================  =====================================  ========================================

The block barrier between rTasks orders *global* memory too: an rTask reads what the
previous rTask of its vEU wrote to global memory with other threads, and OpenCL's
``barrier(CLK_LOCAL_MEM_FENCE)`` (what TVM prints for ``tvm_storage_sync``) does not order
global memory (Oclgrind reported races inside blocks until the barrier fenced it).
CUDA's ``__syncthreads`` orders both already. OpenCL's fence flags are passed as their
values from the OpenCL C specification (``CLK_LOCAL_MEM_FENCE`` = 1,
``CLK_GLOBAL_MEM_FENCE`` = 2): TVM's codegen prints calls, not macro names, and these
are the values every OpenCL C compiler defines.

Ops of one kernel share one body where their tensors can be chosen by op
(:mod:`tvm_ios.kernels.gpu.shared_bodies`). A tensor in global memory is chosen as a data
pointer, which TVM's OpenCL codegen declares without its address space (``float*`` is
``__private`` in OpenCL 1.2, and assigning a ``__global`` pointer to it is an error): on
OpenCL only views into kept shared memory (an element offset) are chosen.
"""
from __future__ import annotations

import logging

from ... import _tvm
from ..tir_util import i32 as _i32

__all__ = ["GLOBALTIMER", "GPU_KINDS", "CudaSync", "OpenCLSync", "sync_for"]

logger = logging.getLogger(__name__)
tirx, T = _tvm.tirx, _tvm.T

CLK_LOCAL_MEM_FENCE = 1
CLK_GLOBAL_MEM_FENCE = 2
GPU_KINDS = ("cuda", "opencl")
#: The device helper the CUDA kernel reads its clock with (declared in the kernel source).
GLOBALTIMER = "tvm_ios_globaltimer"
_GLOBALTIMER_SOURCE = f"""
__forceinline__ __device__ unsigned long long {GLOBALTIMER}() {{
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}}
"""


def _extern(dtype: str, name: str, *args):
    return tirx.call_extern(dtype, name, *args)


class CudaSync:
    """CUDA: PTX release/acquire on the step words, ``__syncthreads``, dynamic shared memory."""

    kind = "cuda"
    smem_scope = "shared.dyn"
    #: The wait bound is microseconds of the GPU's global timer (``config[0]``).
    timed_wait = True
    #: A kernel body shared by ops may take its global tensors as chosen pointers.
    chosen_pointers = True

    def clock_ns(self):
        """``%globaltimer``: the GPU's nanosecond clock (uint64), through a helper that
        TVM's ``cuda.func_call`` declares in the kernel source."""
        from tvm.backend.cuda.op import cuda_func_call  # CUDA codegen only: on demand

        return cuda_func_call(GLOBALTIMER, source_code=_GLOBALTIMER_SOURCE,
                              return_type="uint64")

    def poll(self, dst, ptr):
        """``dst[0] = *ptr`` with acquire semantics at GPU scope."""
        return tirx.Evaluate(T.ptx.ld.acquire.gpu.global_.s32(dst[0], ptr))

    def signal(self, ptr, value):
        """``*ptr = value`` with release semantics at GPU scope."""
        return tirx.Evaluate(T.ptx.st.release.gpu.global_.s32(ptr, value))

    def atomic_add(self, ptr, value):
        """Atomic add (global or shared memory); the old value."""
        return T.cuda.atomic_add(ptr, _i32(value) if isinstance(value, int) else value)

    def atomic_cas(self, ptr, expected, desired):
        """Atomic compare-and-swap; the old value."""
        return T.cuda.atomic_cas(ptr, _i32(expected), _i32(desired))

    def fence(self):
        """A device-scope memory fence."""
        return tirx.Evaluate(T.cuda.thread_fence())

    def block_barrier(self):
        """Every thread of the block; orders shared and global memory within the block."""
        return tirx.Evaluate(T.tvm_storage_sync("shared"))

    def pause(self):
        """Back-off between two polls."""
        return tirx.Evaluate(T.cuda.nano_sleep(64))

    def launch_bounds(self, body, blocks_per_sm: int):
        """``__launch_bounds__(threads, blocks_per_sm)``: ptxas must fit the registers of
        ``blocks_per_sm`` blocks per SM (this is what enforces the register budget)."""
        return tirx.AttrStmt(_i32(0), "tirx.launch_bounds_min_blocks_per_sm",
                             _i32(blocks_per_sm), body)

    def kernel_attrs(self, func):
        """A cooperative launch: the driver refuses (an error, not a hang) a grid whose
        blocks cannot all be resident at once."""
        return func.with_attr("tirx.kernel_launch_params", ["tirx.use_cooperative_launch"])


class OpenCLSync:
    """OpenCL 1.2: atomics and fences on ``__global int``, ``__local`` shared memory."""

    kind = "opencl"
    smem_scope = "shared"
    #: No clock to read: the wait bound is a poll count.
    timed_wait = False
    #: TVM declares a chosen pointer without ``__global``: one body per op instead.
    chosen_pointers = False

    def poll(self, dst, ptr):
        """An atomic read (``atomic_or(p, 0)``) followed by a global fence (acquire)."""
        return tirx.SeqStmt([
            tirx.BufferStore(dst, _extern("int32", "atomic_or", ptr, _i32(0)), [_i32(0)]),
            self.fence()])

    def signal(self, ptr, value):
        """A global fence followed by an atomic store (release)."""
        return tirx.SeqStmt([self.fence(),
                             tirx.Evaluate(_extern("int32", "atomic_xchg", ptr, value))])

    def atomic_add(self, ptr, value):
        """``atomic_add`` (global or local memory); the old value."""
        return _extern("int32", "atomic_add", ptr, _i32(value) if isinstance(value, int)
                       else value)

    def atomic_cas(self, ptr, expected, desired):
        """``atomic_cmpxchg``; the old value."""
        return _extern("int32", "atomic_cmpxchg", ptr, _i32(expected), _i32(desired))

    def fence(self):
        """``mem_fence(CLK_GLOBAL_MEM_FENCE)``."""
        return tirx.Evaluate(_extern("void", "mem_fence", _i32(CLK_GLOBAL_MEM_FENCE)))

    def block_barrier(self):
        """``barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)``."""
        return tirx.Evaluate(_extern("void", "barrier",
                                     _i32(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)))

    def pause(self):
        """OpenCL has no sleep: nothing between two polls."""
        return None

    def launch_bounds(self, body, blocks_per_sm: int):
        """OpenCL has no register budget attribute: the body as it is."""
        return body

    def kernel_attrs(self, func):
        """OpenCL has no cooperative launch: the function as it is."""
        return func


def sync_for(target) -> CudaSync | OpenCLSync:
    """The synchronisation strategy of a GPU target (``cuda`` or ``opencl``)."""
    kind = target.kind.name
    if kind == "cuda":
        return CudaSync()
    if kind == "opencl":
        return OpenCLSync()
    raise ValueError(f"no persistent-kernel synchronisation for target kind {kind!r} "
                     f"(GPU kinds: {GPU_KINDS})")
