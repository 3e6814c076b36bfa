"""One persistent GPU kernel per rProgram, in TIR, for CUDA and OpenCL alike.

``blockIdx.x`` is the vEU. The rProgram is encoded in int32 tables (per vEU a range of
entries; per entry kind, op, rTask index; per barrier a range of ``(vEU, step)`` waits), so
the kernel does not grow with the number of vEUs. Each block loops over its entries:

* a barrier-rTask: its first threads poll one awaited step each (acquire), for at most
  ``wait_bound`` microseconds of the GPU's ``%globaltimer`` on CUDA (polls on OpenCL);
  then a block barrier;
* a compute rTask: a call of the device function of the op's TVM kernel for that rTask
  index (masked to the rTask's threads, every barrier reached by all:
  :mod:`tvm_ios.kernels.gpu.rtask_mask`; one function per distinct kernel:
  :mod:`tvm_ios.kernels.gpu.device_functions`; one call for the ops of one kernel:
  :mod:`tvm_ios.kernels.gpu.shared_bodies`); then a block barrier and thread 0 publishes
  ``step[vEU] = k + 1`` (release).

The step array is a workspace the caller passes as the last (output) argument; the
function zeroes it with a small kernel before the persistent one, so every call has its own
zeroed steps whatever memory it is given. Its words (:class:`Workspace`): the steps of the
vEUs, a done counter, and an error record. A poll that passes its bound sets the record
(waiting vEU, awaited vEU, awaited step) with a compare-and-swap and leaves; a vEU that sees
the record while polling leaves too, so a program whose waits can never be met ends, with
the record set, instead of spinning forever. After its last entry each block bumps the done
counter; the last one zeroes the steps again when no error is recorded.

The synchronisation operations are the only target-specific part
(:mod:`tvm_ios.kernels.gpu.sync`).
"""
from __future__ import annotations

import logging

from ... import _tvm
from ..bounded_wait import DEFAULT_WAIT_BOUND
from ..rprogram import RProgram
from ..veu_memory import shared_views
from .device_functions import DeviceFunctions
from .shared_bodies import body_groups, op_bodies
from ..tir_util import i32, launch, seq
from ..tvm_kernels import tensor_buffer
from ..vdevice import VDevice

__all__ = ["build_persistent_primfunc", "encode_tables", "Workspace", "TABLES", "ZERO_THREADS"]

logger = logging.getLogger(__name__)
tirx = _tvm.tirx

COMPUTE, BARRIER = 0, 1
#: The kernel's int32 tables, in parameter order (``config`` holds the wait bound).
TABLES = ("offsets", "entries", "wait_offsets", "waits", "config")
ZERO_THREADS = 128  #: threads of the one-block kernel that zeroes the workspace


class Workspace:
    """Word layout of the step workspace of a program with ``num_veus`` vEUs."""

    def __init__(self, num_veus: int):
        self.num_veus = num_veus
        self.done = num_veus          # blocks that finished
        self.error = num_veus + 1     # 1 once a wait passed its bound
        self.waiter = num_veus + 2    # the vEU whose wait passed the bound
        self.awaited = num_veus + 3   # the vEU it waited for
        self.step = num_veus + 4      # the step it waited for
        self.words = num_veus + 5

    def error_of(self, words) -> tuple[int, int, int] | None:
        """``(waiting vEU, awaited vEU, step)`` of a recorded failure, or None."""
        if not int(words[self.error]):
            return None
        return int(words[self.waiter]), int(words[self.awaited]), int(words[self.step])


def encode_tables(program: RProgram, op_ids: dict, wait_bound: int = DEFAULT_WAIT_BOUND
                  ) -> dict:
    """The int32 tables of ``program`` (:data:`TABLES`): ``offsets``, ``entries`` (kind, op,
    index, 0), ``wait_offsets``, ``waits`` (vEU, step) and ``config`` (the wait bound, 0)."""
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
            "waits": waits or [0, 0], "config": [int(wait_bound), 0]}


class _Kernel:
    """Buffers and variables of one persistent kernel, and its pieces."""

    def __init__(self, program, tables, threads, smem_bytes, sync):
        self.program, self.threads, self.sync = program, threads, sync
        self.ws = Workspace(program.num_veus)
        self.tab = {n: tirx.decl_buffer((len(v),), "int32", f"rp_{n}")
                    for n, v in tables.items()}
        self.steps = tirx.decl_buffer((self.ws.words,), "int32", "rp_steps")
        # float32 words, the type of the rTasks' shared views: TVM's C codegen prints a
        # gathered (non-unit-stride) vector load from a view of another type as a cast
        # without the address space (``((float*)rp_smem)[i.s0]``), which OpenCL rejects for
        # ``__local`` memory; views of the allocation's own type need no cast at all.
        self.smem = tirx.decl_buffer((max(-(-smem_bytes // 4), 4),), "float32", "rp_smem",
                                     scope=sync.smem_scope)
        # two words: TVM declares a one-element buffer as a scalar, which has no address
        self.ctl = tirx.decl_buffer((2,), "int32", "rp_abort", scope="shared")
        self.dst = tirx.decl_buffer((1,), "int32", "rp_poll", scope="local")
        self.err = tirx.decl_buffer((1,), "int32", "rp_err", scope="local")
        self.polls = tirx.decl_buffer((1,), "int32", "rp_polls", scope="local")
        self.t0 = tirx.decl_buffer((1,), "uint64", "rp_wait_t0", scope="local")
        self.veu, self.tid = tirx.Var("blockIdx_x", "int32"), tirx.Var("threadIdx_x", "int32")
        self.e = tirx.Var("entry", "int32")

    def word(self, index, mode="rw"):
        return self.steps.access_ptr(mode, offset=index)

    def table(self, name, index):
        return tirx.BufferLoad(self.tab[name], [index])

    def abort(self):
        """Tell the block to leave after the barrier, and leave the poll loop."""
        return seq([tirx.Evaluate(self.sync.atomic_add(self.ctl.access_ptr("rw"), 1)),
                    tirx.Break()])

    def record(self, awaited, step):
        """The first vEU past its bound records who waited for what."""
        ws = self.ws
        stores = [tirx.BufferStore(self.steps, value, [i32(index)]) for index, value in
                  ((ws.waiter, self.veu), (ws.awaited, awaited), (ws.step, step))]
        won = self.sync.atomic_cas(self.word(i32(ws.error)), 0, 1) == i32(0)
        return tirx.IfThenElse(won, seq(stores + [self.sync.fence()]), None)

    def _bound(self):
        """The wait's start, its per-poll update and its test of the bound: on CUDA
        ``config[0]`` microseconds of ``%globaltimer`` since the wait began, elsewhere
        ``config[0]`` polls."""
        bound = self.table("config", i32(0))
        if self.sync.timed_wait:
            t0, clock = self.t0, self.sync.clock_ns
            over = (clock() - t0[0]) > tirx.Cast("uint64", bound) * tirx.const(1000, "uint64")
            return tirx.BufferStore(t0, clock(), [i32(0)]), None, over
        polls = self.polls
        return (tirx.BufferStore(polls, i32(0), [i32(0)]),
                tirx.BufferStore(polls, polls[0] + i32(1), [i32(0)]), polls[0] > bound)

    def bounded_poll(self, awaited, step):
        """Poll ``step[awaited] >= step`` within the bound (:meth:`_bound`), watching the
        record."""
        sync = self.sync
        start, count, over = self._bound()
        give_up = seq([self.record(awaited, step), self.abort()])
        body = seq([s for s in (
            sync.poll(self.err, self.word(i32(self.ws.error))),
            tirx.IfThenElse(self.err[0] != i32(0), self.abort(), None),
            count,
            tirx.IfThenElse(over, give_up, None),
            sync.pause(),
            sync.poll(self.dst, self.word(awaited))) if s is not None])
        return seq([start, sync.poll(self.dst, self.word(awaited)),
                    tirx.While(self.dst[0] < step, body)])

    def wait_entry(self):
        """The first threads each wait for one ``(vEU, step)``; a loop when more waits."""
        e, tid, threads = self.e, self.tid, self.threads
        first = self.table("wait_offsets", e)
        count = self.table("wait_offsets", e + i32(1)) - first
        j = tirx.Var("wave", "int32")
        w = first + j * i32(threads) + tid
        poll = self.bounded_poll(self.table("waits", w * i32(2)),
                                 self.table("waits", w * i32(2) + i32(1)))
        rounds = tirx.floordiv(count + i32(threads - 1), i32(threads))
        waits = tirx.For(j, i32(0), rounds, tirx.ForKind.SERIAL,
                         tirx.IfThenElse(j * i32(threads) + tid < count, poll, None))
        aborted = tirx.Var("aborted", "int32")  # read by all between two barriers: uniform
        return seq([waits, self.sync.block_barrier(), tirx.Bind(aborted, self.ctl[0]),
                    self.sync.block_barrier(),
                    tirx.IfThenElse(aborted != i32(0), tirx.Break(), None)])

    def compute_entry(self, bodies: list):
        """The op's body for the entry's rTask, a block barrier, then the release store."""
        start = self.table("offsets", self.veu)
        signal = tirx.IfThenElse(self.tid == i32(0), self.sync.signal(
            self.word(self.veu, "w"), self.e - start + i32(1)), None)
        return seq(bodies + [self.sync.block_barrier(), signal])

    def reset(self):
        """The last block to finish zeroes the steps (unless an error is recorded)."""
        ws, sync = self.ws, self.sync
        old, v = tirx.Var("done_before", "int32"), tirx.Var("v", "int32")
        zero = tirx.For(v, i32(0), i32(ws.done + 1), tirx.ForKind.SERIAL,  # atomic stores:
                        sync.signal(self.word(v, "w"), i32(0)))  # others polled these words
        clean = seq([sync.poll(self.err, self.word(i32(ws.error))),
                     tirx.IfThenElse(self.err[0] == i32(0), seq([zero, sync.fence()]), None)])
        last = tirx.IfThenElse(old == i32(ws.num_veus - 1), clean, None)
        bump = sync.atomic_add(self.word(i32(ws.done)), 1)
        return tirx.IfThenElse(self.tid == i32(0), seq([tirx.Bind(old, bump), last]), None)

    def zero_kernel(self):
        """A one-block kernel that zeroes the workspace before the persistent kernel."""
        tid, k = tirx.Var("threadIdx_x", "int32"), tirx.Var("k", "int32")
        index = k * i32(ZERO_THREADS) + tid
        rounds = -(-self.ws.words // ZERO_THREADS)
        body = tirx.For(k, i32(0), i32(rounds), tirx.ForKind.SERIAL, tirx.IfThenElse(
            index < i32(self.ws.words), tirx.BufferStore(self.steps, i32(0), [index]), None))
        return launch("blockIdx.x", 1, launch("threadIdx.x", ZERO_THREADS, body, tid),
                      tirx.Var("blockIdx_x", "int32"))


def build_persistent_primfunc(program: RProgram, rops: dict, tensors: dict, inputs: list,
                              outputs: list, vdevice: VDevice, args_of: dict, sync,
                              wait_bound: int = DEFAULT_WAIT_BOUND, kept=None):
    """``(func, tables, bodies, functions)``: the persistent-kernel PrimFunc (lowered form)
    of ``program``, its tables, how many op bodies it holds (ops of one kernel share one:
    :mod:`~tvm_ios.kernels.gpu.shared_bodies`) and the device functions they call (name ->
    private PrimFunc: :mod:`~tvm_ios.kernels.gpu.device_functions`).

    Parameters
    ----------
    rops : dict
        Op name -> :class:`~tvm_ios.kernels.gpu.roperator.GPUROperator`.
    tensors : dict
        Tensor key -> ``(name, shape, dtype)``. The parameters are ``inputs``, the int32
        tables (:data:`TABLES`), ``outputs`` and the step workspace ``rp_steps``:
        destination-passing order, for ``call_dps_packed``.
    args_of : dict
        Op name -> tensor keys of its kernel's parameters (call_tir order).
    sync : CudaSync or OpenCLSync
        The target's synchronisation (:func:`~tvm_ios.kernels.gpu.sync.sync_for`).
    kept : ScratchPlan, optional
        Tensors (neither inputs nor outputs) kept in a static shared-memory buffer of every
        block (:func:`~tvm_ios.kernels.veu_memory.shared_views`), read by the rTasks of the
        block that wrote them (GraphTurbo's LB scope).
    """
    threads = max(rops[op].threads for op in program.ops)
    smem_bytes = max(rops[op].smem_bytes for op in program.ops)
    kept_bytes = 4 * max(kept.sizes, default=0) if kept is not None else 0
    vdevice.check(program.num_veus, threads, 32, smem_bytes + kept_bytes,
                  what=f"rProgram {program.name!r}")
    bufs = {key: tensor_buffer(shape, dtype, name) for key, (name, shape, dtype)
            in tensors.items()}
    kept_allocs, arena = [], None
    if kept is not None and kept.offsets:
        arena, views = shared_views(kept, bufs, "float32")
        bufs.update(views)
        kept_allocs = [tirx.AllocBuffer(arena)]
    groups = body_groups(program.ops, rops, args_of, bufs)
    op_ids = {op: i for i, op in enumerate(op for group in groups for op in group)}
    tables = encode_tables(program, op_ids, wait_bound)
    k = _Kernel(program, tables, threads, smem_bytes, sync)
    kind, rtask = (k.table("entries", k.e * i32(4) + i32(j)) for j in (0, 2))
    op = tirx.Var("op", "int32")  # uniform in the block: the entry's op
    functions = DeviceFunctions(threads, sync.smem_scope, sync.block_barrier())
    bodies = op_bodies(groups, op_ids, rops, args_of, bufs, op, lambda rop, buffers:
                       functions.call(rop, buffers, arena, rtask, k.tid, k.smem), arena,
                       sync.chosen_pointers)
    entry = tirx.IfThenElse(kind == i32(BARRIER), k.wait_entry(), seq([
        tirx.Bind(op, k.table("entries", k.e * i32(4) + i32(1))), k.compute_entry(bodies)]))
    start, end = k.table("offsets", k.veu), k.table("offsets", k.veu + i32(1))
    loop = tirx.For(k.e, start, end - start, tirx.ForKind.SERIAL, entry)
    init = tirx.IfThenElse(k.tid == i32(0), tirx.BufferStore(k.ctl, i32(0), [i32(0)]), None)
    bound = tirx.AllocBuffer(k.t0 if sync.timed_wait else k.polls)  # the wait's clock
    body = seq([tirx.AllocBuffer(k.smem), tirx.AllocBuffer(k.ctl), tirx.AllocBuffer(k.dst),
                tirx.AllocBuffer(k.err), bound, *kept_allocs, init,
                sync.block_barrier(), loop, sync.block_barrier(), k.reset()])
    body = sync.launch_bounds(body, -(-program.num_veus // vdevice.sms))
    body = launch("blockIdx.x", program.num_veus,
                  launch("threadIdx.x", threads, body, k.tid), k.veu)
    params = ([bufs[key] for key in inputs] + [k.tab[n] for n in tables]
              + [bufs[key] for key in outputs] + [k.steps])
    func = tirx.PrimFunc(params, seq([k.zero_kernel(), body]))
    func = func.with_attr("global_symbol", program.name).with_attr("tirx.noalias", True)
    return sync.kernel_attrs(func), tables, len(bodies), functions.functions
