"""CUDA codegen of an rProgram through TIR: one persistent kernel, ``blockIdx.x`` = vEU.

The rProgram is encoded in int32 tables (per vEU a range of entries; per entry kind, op,
rTask index; per barrier a range of ``(vEU, step)`` waits), so the kernel's size does not
grow with the number of vEUs. Each block loops over its entries:

* a barrier-rTask: its first threads poll one awaited step each with
  ``T.cuda.wait_until`` (relaxed polls with back-off, closed by an acquire load), then
  ``__syncthreads``;
* a compute rTask: the op's TVM kernel body for that rTask index, on the first ``n``
  threads, with ``bar.sync 1, n`` for its syncs when ``n`` is below the block size; then
  ``__syncthreads`` and thread 0 publishes ``step[vEU] = k + 1`` with ``st.release.gpu``.

Shared memory is one dynamic buffer sized to the largest rTask. After its last entry each
block bumps a done counter (``step[V]``) with an atomic; the last one resets the array, so
no host reset is needed between launches. The vEU count is checked against occupancy.
"""
from __future__ import annotations

import logging

import tvm
from tvm import tirx
from tvm.script import tirx as T

from .rprogram import RProgram
from .tvm_kernels import tensor_buffer
from .vdevice import VDevice

__all__ = ["build_cuda_primfunc", "cuda_source", "finish_pipeline", "encode_tables",
           "register_budget"]

logger = logging.getLogger(__name__)

COMPUTE, BARRIER = 0, 1


def _i(v):
    return tirx.IntImm("int32", int(v))


def _seq(stmts):
    return stmts[0] if len(stmts) == 1 else tirx.SeqStmt(stmts)


def register_budget(vdevice: VDevice, num_veus: int, threads: int) -> int:
    """Registers per thread the kernel may use so that ``num_veus`` blocks stay resident.

    The kernel must be compiled with ``-maxrregcount`` of this value (nvcc/NVRTC option);
    raises :class:`~tvm_ios.kernels.vdevice.ResidencyError` below 24 registers.
    """
    per_sm = -(-num_veus // vdevice.sms)
    budget = min(255, vdevice.regs_per_sm // max(per_sm * threads, 1)) // 8 * 8
    if budget < 24:
        from .vdevice import ResidencyError  # noqa: PLC0415

        raise ResidencyError(f"{num_veus} vEUs of {threads} threads on {vdevice.name} leave "
                             f"{budget} registers per thread ({per_sm} blocks per SM of "
                             f"{vdevice.regs_per_sm} registers); fewer vEUs are needed")
    return budget


def encode_tables(program: RProgram, op_ids: dict) -> dict:
    """The int32 tables of ``program``: ``offsets``, ``entries`` (kind, op, index, 0),
    ``wait_offsets`` and ``waits`` (vEU, step)."""
    offsets, entries, wait_offsets, waits = [0], [], [0], []
    for tasks in program.prog:
        for task in tasks:
            kind = BARRIER if task.kind == "barrier" else COMPUTE
            entries += [kind, op_ids.get(task.op, -1), task.index, 0]
            for veu, step in task.waits:
                waits += [veu, step]
            wait_offsets.append(len(waits) // 2)
        offsets.append(len(entries) // 4)
    return {"offsets": offsets, "entries": entries, "wait_offsets": wait_offsets,
            "waits": waits or [0, 0]}


def _launch(tag: str, extent: int, body, var):
    iv = tirx.IterVar(tvm.ir.Range(0, extent), var, 1, tag)
    return tirx.AttrStmt(iv, "thread_extent", _i(extent), body)


def build_cuda_primfunc(program: RProgram, rops: dict, tensors: dict, inputs: list,
                        outputs: list, vdevice: VDevice, args_of: dict, kept=None):
    """The persistent-kernel PrimFunc (lowered form) of ``program``.

    Parameters
    ----------
    rops : dict
        Op name -> :class:`~tvm_ios.kernels.gpu_roperator.GPUROperator`.
    tensors : dict
        Tensor key -> ``(name, shape, dtype)``. The parameters are ``inputs``, the int32
        tables (in the order of the returned dict), the step array ``rp_steps`` and
        ``outputs``: destination-passing order, for ``call_dps_packed``.
    args_of : dict
        Op name -> tensor keys of its kernel's parameters (call_tir order).
    kept : ScratchPlan, optional
        Tensors (neither inputs nor outputs) kept in a static shared-memory buffer of
        every block (:func:`~tvm_ios.kernels.scratch.shared_views`), read by the rTasks
        of the block that wrote them.
    """
    threads = max(rops[op].threads for op in program.ops)
    smem_bytes = max(rops[op].smem_bytes for op in program.ops)
    kept_bytes = 4 * max(kept.sizes, default=0) if kept is not None else 0
    vdevice.check(program.num_veus, threads, 32, smem_bytes + kept_bytes,
                  what=f"rProgram {program.name!r}")
    op_ids = {op: i for i, op in enumerate(program.ops)}
    tables = encode_tables(program, op_ids)
    bufs = {k: tensor_buffer(shape, dtype, name) for k, (name, shape, dtype) in tensors.items()}
    kept_allocs = []
    if kept is not None and kept.offsets:  # GraphTurbo's LB scope: the block's shared memory
        from .scratch import shared_views  # noqa: PLC0415

        buf, views, decls = shared_views(kept, bufs, "float32")
        bufs.update(views)
        kept_allocs = [tirx.AllocBuffer(buf)] + decls
    tab = {n: tirx.decl_buffer((len(v),), "int32", f"rp_{n}") for n, v in tables.items()}
    steps = tirx.decl_buffer((program.num_veus + 1,), "int32", "rp_steps")
    smem = tirx.decl_buffer((max(smem_bytes, 16),), "uint8", "rp_smem", scope="shared.dyn")
    dst = tirx.decl_buffer((1,), "int32", "rp_poll", scope="local")
    veu, tid = tirx.Var("blockIdx_x", "int32"), tirx.Var("threadIdx_x", "int32")
    e = tirx.Var("entry", "int32")
    kind, op, rtask = (tirx.BufferLoad(tab["entries"], [e * 4 + j]) for j in range(3))
    start = tirx.BufferLoad(tab["offsets"], [veu])
    sync = tirx.Evaluate(T.tvm_storage_sync("shared"))
    compute = []
    for name, i in op_ids.items():
        rop = rops[name]
        body = rop.task_body(rtask, tid, threads, [bufs[_find(bufs, k)] for k in args_of[name]],
                             smem)
        if rop.threads < threads:
            body = tirx.IfThenElse(tid < _i(rop.threads), body, None)
        compute.append(tirx.IfThenElse(op == _i(i), body, None))
    signal = tirx.IfThenElse(tid == _i(0), tirx.Evaluate(T.ptx.st.release.gpu.global_.s32(
        steps.access_ptr("w", offset=veu), e - start + _i(1))), None)
    entry = tirx.IfThenElse(kind == _i(BARRIER), _seq([_wait(tab, steps, dst, e, tid, threads),
                                                         sync]),
                            _seq(compute + [sync, signal]))
    end = tirx.BufferLoad(tab["offsets"], [veu + _i(1)])
    loop = tirx.For(e, start, end - start, tirx.ForKind.SERIAL, entry)
    body = _seq([tirx.AllocBuffer(smem), tirx.AllocBuffer(dst), *kept_allocs, loop, sync,
                 _reset(steps, program.num_veus, tid)])
    per_sm = -(-program.num_veus // vdevice.sms)  # every vEU resident: ptxas must fit them
    body = tirx.AttrStmt(_i(0), "tirx.launch_bounds_min_blocks_per_sm", _i(per_sm), body)
    body = _launch("blockIdx.x", program.num_veus, _launch("threadIdx.x", threads, body, tid),
                   veu)
    params = ([bufs[k] for k in inputs] + [tab[n] for n in tables] + [steps]
              + [bufs[k] for k in outputs])  # destination-passing order: outputs last
    func = tirx.PrimFunc(params, body).with_attr("global_symbol", program.name)
    return func.with_attr("tirx.noalias", True), tables


def _find(bufs: dict, key):
    for k in bufs:
        if k.same_as(key):
            return k
    raise KeyError(f"no buffer for {key}")


def _wait(tab, steps, dst, e, tid, threads):
    """The first threads each poll one awaited step (acquire), a loop when more waits."""
    first = tirx.BufferLoad(tab["wait_offsets"], [e])
    count = tirx.BufferLoad(tab["wait_offsets"], [e + _i(1)]) - first
    j = tirx.Var("wave", "int32")
    w = first + j * _i(threads) + tid
    poll = T.cuda.wait_until(dst, steps.access_ptr(
        "r", offset=tirx.BufferLoad(tab["waits"], [w * 2])),
        lambda v: v >= tirx.BufferLoad(tab["waits"], [w * 2 + 1]), ptx_type="s32", backoff_ns=64)
    guarded = tirx.IfThenElse(first + j * _i(threads) + tid < first + count,
                              tirx.Evaluate(poll), None)
    rounds = tirx.floordiv(count + _i(threads - 1), _i(threads))
    return tirx.For(j, _i(0), rounds, tirx.ForKind.SERIAL, guarded)


def _reset(steps, num_veus: int, tid):
    """The last block to finish zeroes the step array for the next launch."""
    old = tirx.Var("done_before", "int32")
    v = tirx.Var("v", "int32")
    zero = tirx.For(v, _i(0), _i(num_veus + 1), tirx.ForKind.SERIAL,
                    tirx.BufferStore(steps, _i(0), [v]))
    last = tirx.IfThenElse(old == _i(num_veus - 1),
                           _seq([zero, tirx.Evaluate(T.cuda.thread_fence())]), None)
    bump = T.cuda.atomic_add(steps.access_ptr("rw", offset=_i(num_veus)), _i(1))
    return tirx.IfThenElse(tid == _i(0), _seq([tirx.Bind(old, bump), last]), None)


PIPELINE = "tvm_ios_rprogram"


def finish_pipeline():
    """The passes after the merge (entry annotation, host/device split, packed API) and
    TVM's own finalisation passes, as a TIR pipeline factory's result."""
    from tvm.s_tir import pipeline as s_pipeline  # noqa: PLC0415

    tx = tirx.transform
    passes = tvm.transform.Sequential([tx.AnnotateEntryFunc(), tx.SplitHostDevice(),
                                       tx.MakePackedAPI(), tx.FP8StorageLegalize(),
                                       tx.BF16StorageLegalize()])
    return passes, s_pipeline.finalize_host_passes, s_pipeline.finalize_device_passes


tirx.register_tir_pipeline(PIPELINE, finish_pipeline)


def cuda_source(funcs, target) -> tuple[str, object]:
    """Build ``funcs`` (one PrimFunc or several, each named by its ``global_symbol``) for
    ``target`` through the finishing pipeline; (CUDA source, runtime module).

    Several kernels give one host module with one CUDA module holding all of them.
    """
    funcs = [funcs] if isinstance(funcs, tirx.PrimFunc) else list(funcs)
    mod = tvm.IRModule({f.attrs["global_symbol"]: f for f in funcs})
    mod = tirx.transform.BindTarget(target)(mod)
    lib = tvm.tirx.build(mod, target=target, pipeline=PIPELINE)
    cuda = [m for m in lib.imports if m.kind == "cuda"]
    if not cuda:
        names = ", ".join(str(f.attrs["global_symbol"]) for f in funcs)
        raise RuntimeError(f"building {names} gave no CUDA module")
    return cuda[0].inspect_source(), lib
