"""rOperators from TVM's own GPU kernels: dlight-scheduled, lowered, cut at ``blockIdx``.

An op's PrimFunc (from :func:`~tvm_ios.kernels.tvm_kernels.lower_bindings`) gets TVM's
default GPU schedule (dlight), then TVM's own default TIR pipeline up to and including
``MergeSharedMemoryAllocations`` (:func:`~tvm_ios.kernels.gpu.tir_pipeline.lower_to_merge`,
static shared memory merged into one dynamic buffer), but not its host/device split. The
launch attributes are read and stripped: the grid gives the number of rTasks, the block
the threads of one rTask, the merged buffer its shared memory.

Kernels are lowered with a warp size of one (``thread_warp_size=1``), so cross-thread
reductions go through shared memory rather than warp shuffles: the same TIR renders for
CUDA and for OpenCL (which has no portable shuffle), and an rTask's threads need not fill
whole warps. They are scheduled for at most :data:`RTASK_MAX_THREADS` threads.
:meth:`GPUROperator.task_body` substitutes ``blockIdx`` by an rTask index and ``threadIdx``
by the vEU's 1-D thread index; an rTask on fewer threads than its vEU is masked so that
every thread still reaches each of its barriers (:func:`~tvm_ios.kernels.gpu.rtask_mask.
mask_rtask`).

An rTask is one thread block of the op's kernel, unless the kernel has more than
:data:`RTASK_MAX_PER_OP` blocks: then an rTask runs ``grain`` consecutive blocks in turn
(dlight gives an average pool one block per output element, 352 800 blocks of nine adds
for one pool of Inception V3 at 299 px; as rTasks those made 2 million table entries, a
57 MB library and minutes of planning).
"""
from __future__ import annotations

import itertools
import logging
import math
from dataclasses import dataclass, field

import tvm

from ... import _tvm
from ..._tvm import DataType
from ..roperator import RKernel
from .rtask_mask import has_barrier, mask_rtask
from .tir_pipeline import lower_to_merge
from ..tir_util import seq
from ..tvm_kernels import KernelStep, UnsupportedKernel

__all__ = ["GPUROperator", "gpu_roperator", "lowered_kernel", "rtask_target",
           "RTASK_MAX_THREADS", "RTASK_MAX_PER_OP", "KERNEL_CACHE_SIZE"]

logger = logging.getLogger(__name__)
tirx = _tvm.tirx


#: Most threads of one rTask: a vEU has the threads of its program's widest rTask, so one
#: 1024-thread elementwise kernel would idle most threads of every conv rTask and cut the
#: resident vEUs to two per SM. dlight's fallback schedules honour the target's limit.
RTASK_MAX_THREADS = 256
#: Most rTasks of one op: a kernel of more thread blocks runs several of them per rTask.
#: About four times the most vEUs of the largest preset (an H100 holds 1056 vEUs of 256
#: threads) leaves the policies room to balance.
RTASK_MAX_PER_OP = 4096
#: Distinct lowered kernels kept per process (each a few kilobytes of TIR).
KERNEL_CACHE_SIZE = 8192


def rtask_target(target):
    """``target`` as rTask kernels are scheduled and lowered for: a warp size of one (no
    shuffles) and at most :data:`RTASK_MAX_THREADS` threads per block."""
    attrs = {k: v for k, v in _tvm.target_to_dict(target).items() if k != "tag"}
    threads = min(int(attrs.get("max_num_threads", RTASK_MAX_THREADS)), RTASK_MAX_THREADS)
    attrs.update(thread_warp_size=1, max_num_threads=threads)
    if "max_threads_per_block" in attrs:
        attrs["max_threads_per_block"] = threads
    return _tvm.make_target(attrs)


@tirx.transform.prim_func_pass(opt_level=0, name="tvm_ios.PadSmallShared")
class pad_small_shared:
    """Give every shared buffer of 32 bits or less a second element.

    ``MergeSharedMemoryAllocations`` never frees such buffers ("small arrays stay in
    registers") and so never gives them an offset: the merge fails with ``it !=
    scope.buffer_byte_offsets.end()`` on kernels with one-element shared buffers, such as the
    cross-thread reduction TVM makes of an average pool. The padding costs 4 bytes each.
    """

    def transform_function(self, func, mod, ctx):
        remap = {}

        def collect(stmt):
            buf = stmt.buffer
            if "shared" in str(buf.scope()) and len(buf.shape) == 1 and isinstance(
                    buf.shape[0], tirx.IntImm) and int(buf.shape[0]) * DataType(
                        str(buf.dtype)).bits <= 32:
                remap[buf] = tirx.decl_buffer((2 * int(buf.shape[0]),), buf.dtype, buf.name,
                                              scope=str(buf.scope()))
            return stmt
        _tvm.structural_map(func.body, (tirx.AllocBuffer, collect))
        if not remap:
            return func

        def alloc(stmt):
            new = remap.get(stmt.buffer, stmt.buffer)
            return stmt if new is stmt.buffer else tirx.AllocBuffer(new, stmt.annotations)
        return func.with_body(_substitute(func.body, remap, [(tirx.AllocBuffer, alloc)]))


def _substitute(node, remap: dict, hooks=()):
    """``node`` with every variable (or buffer) of ``remap`` replaced, and further
    ``(type, function)`` rewrite hooks of ``structural_map`` applied."""
    return _tvm.structural_map(node, [(tvm.ir.expr.Var, lambda v: remap.get(v, v)),
                                      *hooks])


@dataclass
class GPUROperator:
    """An op's TVM GPU kernel, ready to run as rTasks on persistent blocks."""

    op: str
    body: object
    params: list
    grid: tuple
    block: tuple
    launch_vars: dict = field(default_factory=dict)  # thread tag -> Var
    smem_bytes: int = 0
    smem_var: object = None
    grain: int = 1  # thread blocks run by one rTask, in turn
    kernel: int | None = None  # the lowered kernel's number in this process (one per kernel)

    @property
    def blocks(self) -> int:
        """The kernel's thread blocks."""
        return math.prod(self.grid)

    @property
    def num_tasks(self) -> int:
        """rTasks: the kernel's thread blocks, ``grain`` to an rTask."""
        return -(-self.blocks // self.grain)

    @property
    def threads(self) -> int:
        """Threads of one rTask."""
        return math.prod(self.block)

    def rkernel(self, task_us: float) -> RKernel:
        """The rKernel of this kernel (``task_us`` is an estimate: no GPU timing here)."""
        return RKernel(f"tvm:{self.op}", self.num_tasks, self.threads, task_us,
                       self.smem_bytes, 32, "tvm")

    def task_body(self, rtask, tid, veu_threads: int, buffers: list, smem, barrier=None):
        """The body for rTask index ``rtask`` and vEU thread ``tid`` over ``buffers``.

        With fewer threads than the vEU's ``veu_threads``, the work is masked to the first
        :attr:`threads` threads and every barrier is still reached by all of them. With a
        ``grain`` above one the rTask loops over its blocks; ``barrier`` (the block barrier
        statement) then separates blocks that share memory.
        """
        if self.grain == 1:
            return self._block_body(rtask, tid, veu_threads, buffers, smem)
        g = tirx.Var(f"{self.op}_block", "int32")
        block = rtask * tirx.IntImm("int32", self.grain) + g
        body = tirx.IfThenElse(block < tirx.IntImm("int32", self.blocks), self._block_body(
            block, tid, veu_threads, buffers, smem), None)  # the same for the whole block
        if barrier is not None and (self.smem_var is not None or has_barrier(self.body)):
            body = seq([body, barrier])
        return tirx.For(g, tirx.IntImm("int32", 0), tirx.IntImm("int32", self.grain),
                        tirx.ForKind.SERIAL, body)

    def _block_body(self, rtask, tid, veu_threads: int, buffers: list, smem):
        """The body of thread block ``rtask`` of the kernel (see :meth:`task_body`)."""
        masked, active = self.threads < veu_threads, tid < self.threads
        binds = []
        if masked and has_barrier(self.body):  # idle threads form thread 0's addresses
            clamped = tirx.Var(f"{self.op}_tid", "int32")
            binds.append(tirx.Bind(clamped, tirx.Select(active, tid, tirx.IntImm("int32", 0))))
            tid = clamped
        gx, gy, _ = self.grid
        nx, ny, _ = self.block
        index = {"blockIdx.x": rtask % gx, "blockIdx.y": (rtask // gx) % gy,
                 "blockIdx.z": rtask // (gx * gy), "threadIdx.x": tid % nx,
                 "threadIdx.y": (tid // nx) % ny, "threadIdx.z": tid // (nx * ny)}
        remap = {}
        for tag, var in self.launch_vars.items():
            dtype = str(var.ty.dtype)
            remap[var] = tirx.Cast(dtype, index[tag]) if dtype != "int32" else index[tag]
        for param, buf in zip(self.params, buffers):
            remap[param] = buf
        if self.smem_var is not None:
            remap[self.smem_var] = smem
        body = _substitute(self.body, remap)
        if masked:
            body = mask_rtask(body, active)
        return seq(binds + [body])


_NUMBERS = itertools.count(1)  # of lowered kernels, unique in the process


class _LoweredKernels:
    """TVM's scheduled and lowered kernel of each distinct PrimFunc, for this process.

    GraphTurbo's instances of one layer are mostly the same kernel on other tensors
    (Inception V3 at 299 px: 3574 ops, a few hundred distinct kernels), and one model's
    rProgram variants lower the same ops again; dlight and the TIR pipeline cost about
    40 ms a kernel here. Keyed by the structural hash of the kernel (its name aside) and the
    target, confirmed by structural equality; a hit is returned with fresh definitions
    (:func:`~tvm_ios._tvm.renew_defs`), so that two ops' bodies in one rProgram kernel
    share no variable.
    """

    def __init__(self, size: int = KERNEL_CACHE_SIZE):
        self.size, self.kept = size, {}
        self.hits = self.misses = 0

    def get(self, func, target):
        """``(number, lowered)``: the kernel's number (the same for one kernel while it is
        kept) and its lowering, with fresh definitions on a hit."""
        func = func.with_attr("global_symbol", "rtask")
        key = (_tvm.structural_hash(func), str(target))
        entry = self.kept.get(key)
        if entry is not None and _tvm.structural_equal(entry[0], func):
            self.hits += 1
            return entry[2], _tvm.renew_defs(entry[1])
        self.misses += 1
        lowered = _lower(func, target)
        if len(self.kept) >= self.size:  # the oldest goes
            self.kept.pop(next(iter(self.kept)))
        number = next(_NUMBERS)
        self.kept[key] = (func, lowered, number)
        return number, lowered


def _lower(func, target):
    """dlight's default GPU schedule of ``func`` and TVM's pipeline up to the merge."""
    mod = tvm.IRModule({"rtask": func})
    dl = _tvm.dlight
    with target:
        mod = dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(),
                                      dl.gpu.GeneralReduction(), dl.gpu.Fallback())(mod)
    mod = tirx.transform.BindTarget(target)(mod)
    return lower_to_merge(mod, {"tirx.merge_static_smem": True}, [pad_small_shared()])["rtask"]


_KERNELS = _LoweredKernels()


def lowered_kernel(func, target):
    """``func`` scheduled by dlight for ``target`` (an :func:`rtask_target`) and lowered up
    to ``MergeSharedMemoryAllocations``, from this process's cache where it was lowered
    before."""
    return _KERNELS.get(func, target)[1]


def gpu_roperator(op: str, step: KernelStep, target,
                  max_tasks: int | None = None) -> GPUROperator:
    """TVM's default GPU kernel of ``step`` as a :class:`GPUROperator` of at most
    ``max_tasks`` rTasks (default :data:`RTASK_MAX_PER_OP`)."""
    number, func = _KERNELS.get(step.func, rtask_target(target))
    found = {"launch": {}, "smem": []}

    def strip_launch(stmt):
        if stmt.attr_key == "thread_extent":
            tag = stmt.node.thread_tag
            found["launch"][tag] = (stmt.node.var, int(stmt.value))
            return stmt.body
        return stmt

    def strip_smem(stmt):
        if "shared" in str(stmt.buffer.scope()):
            found["smem"].append(stmt.buffer)
            return tirx.Evaluate(tirx.IntImm("int32", 0))
        return stmt
    body = _tvm.structural_map(func.body, [(tirx.AttrStmt, strip_launch),
                                           (tirx.AllocBuffer, strip_smem)])
    launch = found["launch"]
    if not any(tag.startswith("blockIdx") for tag in launch):
        raise UnsupportedKernel(f"TVM gives op {op} no GPU schedule (no blockIdx)")
    if len(found["smem"]) > 1:
        raise UnsupportedKernel(f"{op}: shared memory was not merged into one buffer")
    smem = found["smem"][0] if found["smem"] else None
    grid = tuple(launch.get(f"blockIdx.{a}", (None, 1))[1] for a in "xyz")
    block = tuple(launch.get(f"threadIdx.{a}", (None, 1))[1] for a in "xyz")
    smem_bytes = 0
    if smem is not None:
        smem_bytes = math.prod(int(d) for d in smem.shape) * DataType(
            str(smem.dtype)).bits // 8
    return GPUROperator(op, body, list(func.params), grid, block,
                        {tag: var for tag, (var, _) in launch.items() if "Idx" in tag},
                        smem_bytes, smem,
                        grain=-(-math.prod(grid) // max(1, max_tasks or RTASK_MAX_PER_OP)),
                        kernel=number)
