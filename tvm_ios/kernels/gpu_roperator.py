"""rOperators from TVM's own GPU kernels: dlight-scheduled, lowered, cut at ``blockIdx``.

An op's PrimFunc (from :func:`~tvm_ios.kernels.tvm_kernels.lower_bindings`) gets TVM's
default GPU schedule (dlight), then TVM's own lowering passes up to and including
``ThreadSync`` and ``MergeSharedMemoryAllocations`` (with static shared memory merged into
one dynamic buffer), but before ``SplitHostDevice``. The launch attributes are read and
stripped: the grid gives the number of rTasks, the block the threads of one rTask, the
merged buffer its shared memory. :meth:`GPUROperator.task_body` substitutes ``blockIdx`` by
an rTask index and ``threadIdx`` by the vEU's 1-D thread index, and turns the kernel's
``__syncthreads`` into a named barrier when the rTask uses fewer threads than the vEU.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import tvm

from .._tvm import DataType, T, s_tir, tirx, tvm_ffi
from .._tvm import dlight as dl
from .roperator import RKernel
from .tvm_kernels import KernelStep, UnsupportedKernel

__all__ = ["GPUROperator", "gpu_roperator", "lowering_passes"]

logger = logging.getLogger(__name__)

TASK_BARRIER_ID = 1  # named barrier of an rTask with fewer threads than its vEU (0 = block)


def lowering_passes() -> list:
    """TVM's s_tir lowering passes up to MergeSharedMemoryAllocations (before host split)."""
    st, tx = s_tir.transform, tirx.transform
    return [st.CanonicalizeLoop(), st.LowerCrossThreadReduction(), st.LowerInitBlock(),
            st.PlanAndUpdateBufferAllocationLocation(), st.ConvertBlocksToOpaque(),
            st.LiftThreadBinding(), st.ManifestSharedMemoryLocalStage(),
            st.CompactBufferAllocation(), st.LowerAutoCopy(), st.UnifyThreadBinding(),
            st.LowerMatchBuffer(), st.StmtSimplify(), st.InjectPermutedLayout(),
            st.AnnotateIrregularLoop(), st.InjectSoftwarePipeline(),
            st.TransformMmaBufferLayout(), st.LowerOpaqueBlock(), tx.FlattenBuffer(),
            tx.BF16ComputeLegalize(), tx.NarrowDataType(32), st.LoopPartition(),
            tx.VectorizeLoop(True), st.InjectVirtualThread(), st.InjectDoubleBuffer(),
            tx.StorageRewrite(), st.HoistIfThenElse(), tx.UnrollLoop(),
            st.RenormalizeSplitPattern(), tx.StmtSimplify(), tx.RemoveNoOp(),
            st.RewriteUnsafeSelect(), tx.CommonSubexprElim(), tx.FP8ComputeLegalize(),
            tx.VerifyMemory(), st.ThreadSync("shared"), st.ThreadSync("shared.dyn"),
            st.ThreadSync("warp"), st.InferFragment(), st.LowerThreadAllreduce(),
            pad_small_shared(), st.MergeSharedMemoryAllocations()]


@tirx.transform.prim_func_pass(opt_level=0, name="tvm_ios.PadSmallShared")
class pad_small_shared:  # noqa: N801  (a pass factory, named like TVM's)
    """Give every shared buffer of 32 bits or less a second element.

    ``MergeSharedMemoryAllocations`` never frees such buffers ("small arrays stay in
    registers") and so never gives them an offset: the merge fails with ``it !=
    scope.buffer_byte_offsets.end()`` on kernels with one-element shared buffers, such as the
    cross-thread reduction TVM makes of an average pool. The padding costs 4 bytes each.
    """

    def transform_function(self, func, mod, ctx):  # noqa: D102  (tvm.transform protocol)
        remap = {}

        def collect(stmt):
            buf = stmt.buffer
            if "shared" in str(buf.scope()) and len(buf.shape) == 1 and isinstance(
                    buf.shape[0], tirx.IntImm) and int(buf.shape[0]) * DataType(
                        str(buf.dtype)).bits <= 32:
                remap[buf] = tirx.decl_buffer((2 * int(buf.shape[0]),), buf.dtype, buf.name,
                                              scope=str(buf.scope()))
            return stmt
        tvm_ffi.structural_map(func.body, (tirx.AllocBuffer, collect))
        if not remap:
            return func

        def alloc(stmt):
            new = _lookup(remap, stmt.buffer)
            return stmt if new is stmt.buffer else tirx.AllocBuffer(new, stmt.annotations)
        return func.with_body(_substitute(func.body, remap, [(tirx.AllocBuffer, alloc)]))


def _lookup(remap: dict, var):
    for old, new in remap.items():
        if var.same_as(old):
            return new
    return var


def _substitute(node, remap: dict, hooks=()):
    """``node`` with every variable (or buffer) of ``remap`` replaced, and further
    ``(type, function)`` rewrite hooks of ``tvm_ffi.structural_map`` applied."""
    return tvm_ffi.structural_map(node, [(tvm.ir.expr.Var, lambda v: _lookup(remap, v)),
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

    @property
    def num_tasks(self) -> int:
        """rTasks: the kernel's thread blocks."""
        return math.prod(self.grid)

    @property
    def threads(self) -> int:
        """Threads of one rTask."""
        return math.prod(self.block)

    def rkernel(self, task_us: float) -> RKernel:
        """The rKernel of this kernel (``task_us`` is an estimate: no GPU timing here)."""
        return RKernel(f"tvm:{self.op}", self.num_tasks, self.threads, task_us,
                       self.smem_bytes, 32, "tvm")

    def task_body(self, rtask, tid, veu_threads: int, buffers: list, smem):
        """The body for rTask index ``rtask`` and vEU thread ``tid`` over ``buffers``."""
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
        named = self.threads < veu_threads
        if named and self.threads % 32:
            raise UnsupportedKernel(f"{self.op}: {self.threads} threads is not a multiple of a "
                                    "warp, so no named barrier can stand for its syncs")

        def call(c):
            if named and c.op.name == "tirx.tvm_storage_sync":
                return T.ptx.bar.sync(TASK_BARRIER_ID, self.threads)
            return c
        return _substitute(self.body, remap, [(tvm.ir.expr.Call, call)])


def gpu_roperator(op: str, step: KernelStep, target) -> GPUROperator:
    """TVM's default GPU kernel of ``step`` as a :class:`GPUROperator`."""
    mod = tvm.IRModule({op: step.func.with_attr("global_symbol", op)})
    with target:
        mod = dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(),
                                      dl.gpu.GeneralReduction(), dl.gpu.Fallback())(mod)
    mod = tirx.transform.BindTarget(target)(mod)
    with tvm.transform.PassContext(config={"tirx.merge_static_smem": True}):
        mod = tvm.transform.Sequential(lowering_passes())(mod)
    func = mod[op]
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
    body = tvm_ffi.structural_map(func.body, [(tirx.AttrStmt, strip_launch),
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
                        smem_bytes, smem)
