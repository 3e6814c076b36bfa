"""The CPU vDevice backend: one rProgram as one TIR PrimFunc for ``llvm``.

Each vEU is one iteration of a parallel loop, i.e. one worker of TVM's thread pool (an
iteration per worker as long as there are no more vEUs than workers, which the caller and
the kernel's prologue check). A vEU runs its rTasks in order: a compute rTask is the
inlined body of TVM's own kernel(s) of the op; a barrier-rTask polls the step array.

The step array lives in the kernel's workspace (each call allocates its own) and is zeroed
in the kernel's prologue, so no host reset is needed between runs. A vEU signals
``step[v] = k + 1`` after entry ``k`` with a full fence before a volatile store (release); a
waiter spins on a volatile load with a pause hint and fences after it (acquire). The fences
are ``mfence`` on x86-64 (the only CPU this backend emits code for; others are refused with
a clear error). A wait is bounded (:mod:`~tvm_ios.kernels.bounded_wait`): past ``wait_bound``
polls the vEU records which wait failed in the workspace's last word and skips the rest of
its entries, the other vEUs stop at their next entry or poll, and after the parallel loop
the kernel raises :class:`~tvm_ios.kernels.bounded_wait.BoundedWaitError` naming the
program, the vEU and the step it waited for.
"""
from __future__ import annotations

import logging
import platform

import tvm

from ..._tvm import s_tir, tirx
from ..bounded_wait import DEFAULT_WAIT_BOUND, wait_message
from ..rprogram import RProgram
from .slicing import SLICES, slice_kernel, sliceable
from ..tir_util import i32 as _i32
from ..tir_util import seq as _seq
from ..tuned_build import strip_parallel
from ..tvm_kernels import inline_body, tensor_buffer

__all__ = ["build_cpu_primfunc", "CPUBackendError"]

logger = logging.getLogger(__name__)

FENCE = "llvm.x86.sse2.mfence"
PAUSE = "llvm.x86.sse2.pause"


class CPUBackendError(ValueError):
    """The CPU vDevice backend cannot emit this rProgram here."""


def _intrin(name: str):
    return tirx.Evaluate(tirx.call_llvm_intrin("void", name))


class _Barriers:
    """Step-array signalling with release/acquire ordering built from fences, and bounded
    waits: word ``num_veus`` of the array records the first wait that passed its bound."""

    def __init__(self, num_veus: int, wait_bound: int = DEFAULT_WAIT_BOUND):
        self.num_veus, self.bound = num_veus, wait_bound
        self.steps = tirx.decl_buffer((num_veus + 1,), "int32", "rprogram_steps")
        self.sites: list[tuple[int, int, int]] = []  # (waiting vEU, awaited vEU, step)

    def _volatile(self, stmt):
        return tirx.AttrStmt(self.steps.data, "volatile_scope", _i32(1), stmt)

    def _load(self, index: int):
        return tirx.BufferLoad(self.steps, [_i32(index)])

    def ok(self):
        """No wait has failed (a volatile read of the record)."""
        return self._load(self.num_veus) == _i32(0)

    def signal(self, veu: int, value: int):
        store = tirx.BufferStore(self.steps, _i32(value), [_i32(veu)])
        return tirx.SeqStmt([_intrin(FENCE), self._volatile(store)])

    def wait(self, veu: int, awaited: int, value: int, polls):
        """Poll ``step[awaited] >= value`` at most ``wait_bound`` times (counting in the
        vEU's local ``polls``); record a failure."""
        self.sites.append((veu, awaited, value))
        pending = tirx.all(self._load(awaited) < _i32(value), self.ok())
        spin = tirx.While(tirx.all(pending, polls[0] < _i32(self.bound)), _seq([
            _intrin(PAUSE), tirx.BufferStore(polls, polls[0] + _i32(1), [_i32(0)])]))
        record = tirx.BufferStore(self.steps, _i32(len(self.sites)), [_i32(self.num_veus)])
        return tirx.SeqStmt([tirx.BufferStore(polls, _i32(0), [_i32(0)]),
                             self._volatile(spin),
                             self._volatile(tirx.IfThenElse(pending, record, None)),
                             _intrin(FENCE)])

    def guard(self, stmt):
        """``stmt`` unless a wait has failed (then the vEU skips it)."""
        return self._volatile(tirx.IfThenElse(self.ok(), stmt, None))

    def reset(self):
        k = tirx.Var("k", "int32")
        store = tirx.BufferStore(self.steps, _i32(0), [k])
        return tirx.For(k, _i32(0), _i32(self.num_veus + 1), tirx.ForKind.SERIAL, store)

    def report(self, program: str):
        """After the vEUs: raise :class:`BoundedWaitError` naming the failed wait."""
        failed = self._load(self.num_veus)
        return [tirx.AssertStmt(failed != _i32(i + 1), tvm.ir.expr.StringImm("BoundedWaitError"),
                                [tvm.ir.expr.StringImm(wait_message(program, *site, self.bound))])
                for i, site in enumerate(self.sites)]


def build_cpu_primfunc(program: RProgram, steps_of: dict, tensors: dict,
                       inputs: list, outputs: list,
                       wait_bound: int = DEFAULT_WAIT_BOUND,
                       veu_scratch: bool = False) -> tirx.PrimFunc:
    """The PrimFunc running ``program`` on the CPU thread pool.

    Parameters
    ----------
    program : RProgram
        The plan; compute rTasks of CPU rKernels: one rTask per op, or, for an op whose
        rTasks come from the ``slices`` rKernel, rTask ``i`` of ``n`` is slice ``i`` of its
        tuned parallel loop (:mod:`~tvm_ios.kernels.cpu.slicing`).
    steps_of : dict
        Op name -> list of :class:`~tvm_ios.kernels.tvm_kernels.KernelStep` (the parallel
        kernels for a sliced op, serial ones otherwise).
    tensors : dict
        Tensor key (Relax Var or Constant) -> ``(name, shape, dtype)``.
    inputs, outputs : list
        Tensor keys of the parameters, in call_tir order (inputs then outputs).
    wait_bound : int
        Polls of one awaited step before the vEU gives up (BoundedWaitError).
    veu_scratch : bool
        Keep every other tensor in its vEU's region of one workspace arena, space reused
        by liveness (:mod:`~tvm_ios.kernels.veu_memory`), instead of a buffer of its own.
    """
    if platform.machine().lower() not in ("x86_64", "amd64"):
        raise CPUBackendError(f"the CPU vDevice emits x86-64 fences; this machine is "
                              f"{platform.machine()}")
    buffers = {key: tensor_buffer(shape, dtype, name)
               for key, (name, shape, dtype) in tensors.items()}
    params = [buffers[k] for k in list(inputs) + list(outputs)]
    passed = set(inputs) | set(outputs)
    scratch = [b for k, b in buffers.items() if k not in passed]
    decls = []
    if veu_scratch and scratch:
        scratch, decls = _veu_scratch(program, steps_of, buffers, scratch)
    barriers = _Barriers(program.num_veus, wait_bound)
    awaited = {(u, s) for tasks in program.prog for t in tasks for u, s in t.waits}
    veu = tirx.Var("veu", "int32")
    branches = []
    entries = _Entries(steps_of, buffers, sliced_ops(program))
    for v, tasks in enumerate(program.prog):
        body = _veu_body(v, tasks, entries, barriers, awaited)
        if body:
            branches.append(tirx.IfThenElse(veu == _i32(v), _seq(body), None))
    loop = tirx.For(veu, _i32(0), _i32(program.num_veus), tirx.ForKind.PARALLEL,
                    _seq(branches))
    root = s_tir.SBlock([], [], [], "root",
                        tirx.SeqStmt(decls + [_pool_guard(program), barriers.reset(), loop,
                                              *barriers.report(program.name)]),
                        alloc_buffers=[barriers.steps] + scratch)
    func = tirx.PrimFunc(params, s_tir.SBlockRealize([], True, root))
    return func.with_attr("tirx.noalias", True).with_attr("tvm_ios.rprogram", program.name)


def _veu_scratch(program, steps_of, buffers, scratch) -> tuple[list, list]:
    """Arena and views for the non-parameter tensors (one dtype), by vEU and liveness."""
    from ..veu_memory import cpu_views, pack  # noqa: PLC0415  (only for vEU-local programs)

    dtypes = {str(b.dtype) for b in scratch}
    if len(dtypes) != 1:
        raise CPUBackendError(f"vEU scratch holds one dtype; rProgram {program.name} has "
                              f"{sorted(dtypes)}")
    local = {id(b): b for b in scratch}
    key_of = {id(b): k for k, b in buffers.items()}
    events = []
    for tasks in program.prog:
        events.append([([id(buffers[s.output])],
                        [id(buffers[a]) for a in s.inputs])
                       for t in tasks if t.kind == "compute" for s in steps_of[t.op]])
    elements = {i: int(_prod(b.shape)) for i, b in local.items()}
    try:
        plan = pack(events, elements)
    except ValueError as err:
        raise CPUBackendError(f"rProgram {program.name}: {err}") from None
    arena, views, decls = cpu_views(plan, {i: buffers[key_of[i]] for i in local},
                                    dtypes.pop())
    for i, view in views.items():
        buffers[key_of[i]] = view
    return [arena], decls


def _prod(shape) -> int:
    out = 1
    for d in shape:
        out *= int(d)
    return out


def _pool_guard(program: RProgram):
    """Refuse to run, with the numbers, when the thread pool has fewer workers than vEUs.

    With fewer workers, one worker would run several vEUs in turn and a barrier could wait
    for a vEU that never starts.
    """
    workers = tirx.call_packed("runtime.NumThreads")
    message = (f"rProgram {program.name} needs {program.num_veus} resident vEUs (TVM "
               "thread-pool workers); set TVM_NUM_THREADS to at least that")
    if program.num_veus == 1:
        return tirx.Evaluate(_i32(0))
    return tirx.AssertStmt(workers >= _i32(program.num_veus),  # (condition, kind, parts)
                           tvm.ir.expr.StringImm("RuntimeError"),
                           [tvm.ir.expr.StringImm(message)])


def sliced_ops(program: RProgram) -> dict[str, int]:
    """Op -> number of rTasks, for the ops the program runs as slices of a parallel loop."""
    counts: dict[str, int] = {}
    for tasks in program.prog:
        for task in tasks:
            if task.kind == "compute" and task.kernel == SLICES:
                counts[task.op] = counts.get(task.op, 0) + 1
    return counts


class _Entries:
    """The inlined kernel bodies of compute rTasks."""

    def __init__(self, steps_of: dict, buffers: dict, slices: dict):
        self.steps_of, self.buffers, self.slices = steps_of, buffers, slices

    def _inline(self, func, step):
        return inline_body(func, [_buffer(self.buffers, a)
                                  for a in list(step.inputs) + [step.output]])

    def __call__(self, task) -> list:
        steps = self.steps_of[task.op]
        count = self.slices.get(task.op)
        if count is None:
            return [self._inline(step.func, step) for step in steps]
        if len(steps) == 1 and sliceable(steps[0].func, count):
            return [self._inline(slice_kernel(steps[0].func, task.index, count), steps[0])]
        if task.index:  # not sliceable: slice 0 runs the whole op, serially
            return []
        logger.info("op %s is not one parallel loop: it runs whole in its slice 0", task.op)
        return [self._inline(strip_parallel(step.func), step) for step in steps]


def _veu_body(v, tasks, entries: _Entries, barriers, awaited) -> list:
    """vEU ``v``'s entries, each skipped once a wait has failed anywhere."""
    polls = tirx.decl_buffer((1,), "int32", f"polls_{v}", scope="local")
    body = []
    for k, task in enumerate(tasks):
        if task.kind == "barrier":
            entry = [barriers.wait(v, u, s, polls) for u, s in task.waits]
        else:
            entry = entries(task)
        if (v, k + 1) in awaited:
            entry.append(barriers.signal(v, k + 1))
        body.append(barriers.guard(_seq(entry or [tirx.Evaluate(_i32(0))])))
    waits = any(task.kind == "barrier" for task in tasks)
    return [tirx.AllocBuffer(polls)] + body if waits else body


def _buffer(buffers: dict, expr):
    if expr not in buffers:
        raise CPUBackendError(f"rTask reads a tensor the rProgram function does not hold: "
                              f"{expr}")
    return buffers[expr]
