"""Thin adapter over the TVM Python API.

TVM renamed ``tir``, dlight, StructInfo and tensor constructors within one year (0.25-0.27).
This is the one module of tvm-ios that imports TVM's moving parts (``tvm.tirx``,
``tvm.s_tir`` with dlight and meta_schedule, ``tvm_ffi``, ``tvm.runtime``, ``tvm.target``,
``tvm.support``, ``tvm.contrib``, ``tvm.rpc``, ``tvm.script``); the others reach them through
the names defined here (``_tvm.tirx``, ``_tvm.ms``, ``_tvm.T``, ``_tvm.tensor(...)``...), so
the next rename is a one-file change. ``tvm.relax``, ``tvm.ir`` and ``tvm.transform``, the
stable core, may be imported anywhere. ``tests/test_adapter.py`` checks the rule. Heavy
modules (meta_schedule, dlight, TVMScript, nvcc) are imported on first use.
"""
from __future__ import annotations

import contextlib
import importlib
import inspect
import logging
import os
import sys
from typing import Any, Iterator, Sequence

import numpy as np
import tvm
from tvm import relax, tirx  # tirx is re-exported
from tvm.relax.expr_functor import PyExprMutator, mutator  # noqa: F401  (re-exported)

Op = tvm.ir.Op  #: a primitive op (``relax.Call.op`` of ``R.nn.conv2d`` and the like)

logger = logging.getLogger(__name__)

IRModule = tvm.IRModule
TensorLoad = tvm.ir.expr.TensorLoad  # what tirx.BufferLoad makes in 0.27 (its buffer: .source)
Target = tvm.target.Target
DataType = tvm.runtime.DataType

#: Names imported on first use (``_tvm.ms`` or ``from .._tvm import ms``) -> their module.
_LAZY = {
    "s_tir": "tvm.s_tir",                     # schedulable TIR: dlight, meta_schedule, pipelines
    "s_tir_pipeline": "tvm.s_tir.pipeline",   # TVM's TIR pipelines (finalize_*_passes)
    "dlight": "tvm.s_tir.dlight",             # default GPU schedules
    "ms": "tvm.s_tir.meta_schedule",          # builders, runners, databases, tuning
    "T": "tvm.script.tirx",                   # TVMScript for TIR
    "nvcc": "tvm.support.nvcc",               # CUDA compilation with nvcc
    "tvm_ffi": "tvm_ffi",                     # the FFI package (structural_map, global funcs)
    "topi": "tvm.topi",                       # TVM's operator library (blocked convolutions)
}


def __getattr__(name: str):
    """Import a name of :data:`_LAZY` on first use."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(_LAZY[name])
    globals()[name] = module
    return module
module_pass = tvm.transform.module_pass
Sequential = tvm.transform.Sequential
PassContext = tvm.transform.PassContext
TVM_VERSION = tvm.__version__


def tensor(array: np.ndarray, device: Any = None):
    """Return a TVM runtime tensor holding ``array`` (``tvm.runtime.tensor`` in 0.27)."""
    return tvm.runtime.tensor(np.ascontiguousarray(array), device or tvm.cpu())


def to_numpy(value: Any) -> np.ndarray | list:
    """Convert a VM result (tensor or nested tuple of tensors) to numpy."""
    if hasattr(value, "numpy"):
        return value.numpy()
    return [to_numpy(v) for v in value]


def llvm_system_cpu() -> str:
    """The CPU name LLVM detects here (``znver4``): the ``mcpu`` of a tuned llvm target."""
    return str(tvm.target.codegen.llvm_get_system_cpu())


def llvm_cpu_features(target: Target) -> frozenset:
    """The LLVM features of an llvm target's ``mcpu`` (``mattr`` not included)."""
    return frozenset(str(f) for f in tvm.target.codegen.llvm_get_cpu_features(target))


def llvm_system_triple() -> str:
    """The LLVM target triple of this machine (``x86_64-pc-linux-gnu``)."""
    return str(tvm.target.codegen.llvm_get_system_triple())


def make_target(target: str | dict | Target) -> Target:
    """Build a Target from a tag, a kind name or a dict, with a clear error when impossible."""
    if isinstance(target, Target):
        return target
    try:
        return Target(target)
    except Exception as err:  # TVM raises several error types here
        raise ValueError(
            f"impossible target {target!r}: {err}. Use a kind ('llvm'), a tag "
            "('nvidia/nvidia-h100') or a dict ({'kind': 'cuda', 'arch': 'sm_90'})"
        ) from err


def target_to_dict(target: Target) -> dict:
    """A target's attributes as plain JSON-serialisable Python values."""
    return {str(k): _plain(v) for k, v in target.export().items()}


def cpu():
    """The host CPU device."""
    return tvm.cpu()


def device_for(target: Target):
    """Return the runtime device a target's code runs on (``llvm`` and ``c`` run on the CPU)."""
    kind = target.kind.name
    return tvm.cpu() if kind in ("llvm", "c") else tvm.device(kind, 0)


def device_exists(target: Target) -> bool:
    """Whether this process sees the device ``target``'s code runs on (always for CPUs)."""
    try:
        return bool(device_for(target).exist)
    except Exception:  # noqa: BLE001  (no runtime for that device kind at all)
        return False


def _affinity() -> set:
    import os

    return set(os.sched_getaffinity(0))


#: The cores this process may use, read when tvm-ios is imported: TVM's thread pool, in its
#: default mode, later pins the calling thread to one core, and the affinity then reads 1.
_CORES_AT_IMPORT = _affinity()


def usable_cores() -> list[int]:
    """The cores this process may use (as at import, unless more are allowed now)."""
    now = _affinity()
    return sorted(now if len(now) > len(_CORES_AT_IMPORT) else _CORES_AT_IMPORT)


def config_threads(num_threads: int, cores: Sequence[int] = ()) -> None:
    """Size the TVM thread pool of the calling thread (each Python thread has its own) and
    let its threads share ``cores`` (default: every core this process may use). TVM's
    default mode would pin the calling thread to core 0 in every pool."""
    cpus = [str(c) for c in (cores or usable_cores())]
    # mode -3: kSpecifyThreadShareAllCore, all threads of the pool share the listed cores
    tvm.get_global_func("runtime.config_threadpool")(-3, int(num_threads), cpus)


def shape_of(expr: relax.Expr) -> tuple[int, ...] | None:
    """Static shape of a Relax tensor expression, or None when unknown or dynamic."""
    ty = expr.ty
    if not isinstance(ty, relax.TensorType) or ty.shape is None:
        return None
    if not hasattr(ty.shape, "values"):
        return None
    dims = []
    for dim in ty.shape.values:
        if not isinstance(dim, tvm.tirx.IntImm):
            return None
        dims.append(int(dim.value))
    return tuple(dims)


def dtype_of(expr: relax.Expr) -> str | None:
    """Element type of a Relax tensor expression, or None for non-tensors."""
    ty = expr.ty
    return str(ty.dtype) if isinstance(ty, relax.TensorType) else None


def op_name(call: relax.Expr) -> str | None:
    """Operator name of a Relax call (``relax.nn.conv2d``), or None for other expressions."""
    if isinstance(call, relax.Call) and isinstance(call.op, tvm.ir.Op):
        return str(call.op.name)
    return None


def attrs_dict(call: relax.Call) -> dict[str, Any]:
    """Attributes of a Relax call as plain Python values."""
    if call.attrs is None:
        return {}
    base = set(dir(tvm.ir.Attrs))
    keys = [k for k in dir(call.attrs) if not k.startswith("_") and k not in base]
    return {key: _plain(getattr(call.attrs, key)) for key in keys}


def _plain(value: Any) -> Any:
    if isinstance(value, tvm.tirx.IntImm):
        return int(value.value)
    if isinstance(value, tvm.tirx.FloatImm):
        return float(value.value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if hasattr(value, "__len__") and not isinstance(value, str):
        try:
            return [_plain(v) for v in value]
        except TypeError:
            pass
    return str(value)


def compile_module(mod: IRModule, target: str | dict | Target = "llvm", pipeline: Any = "default"):
    """Compile a Relax module with ``tvm.compile``; returns the executable."""
    tgt = make_target(target)
    return tvm.compile(mod, target=tgt, relax_pipeline=pipeline)


def virtual_machine(executable, device=None):
    """Create a Relax VM for an executable (on the CPU by default)."""
    return relax.VirtualMachine(executable, device or tvm.cpu())


def set_vm_instrument(vm, instrument) -> None:
    """Call ``instrument(func, name, before_run, ret_value, *args)`` around every call a
    Relax VM makes (it returns 0 to run the call); ``None`` removes it."""
    vm.set_instrument(instrument)


def bind_params(mod: IRModule, params: dict[str, np.ndarray], func: str = "main") -> IRModule:
    """Bind named parameters of ``func`` as constants."""
    if not params:
        return mod
    return relax.transform.BindParams(func, {k: tensor(v) for k, v in params.items()})(mod)


def structural_hash(node: Any, map_free_vars: bool = False) -> int:
    """Structural hash of an IR node (stable within one TVM version; names do not count).

    ``map_free_vars`` hashes variables by position, not identity: a PrimFunc whose body
    reads variables it does not define (an rProgram's, after inlining) hashes the same in
    every process only so. ``tvm.ir.structural_hash`` moved to ``tvm_ffi.structural_hash``
    in 0.27.
    """
    return int(__getattr__("tvm_ffi").structural_hash(node, map_free_vars=map_free_vars))


def structural_equal(lhs: Any, rhs: Any, map_free_vars: bool = False) -> bool:
    """Structural equality of two IR nodes (``tvm_ffi.structural_equal`` in 0.27)."""
    return bool(__getattr__("tvm_ffi").structural_equal(lhs, rhs, map_free_vars=map_free_vars))


def renew_defs(func):
    """A copy of a PrimFunc with fresh variables and buffers for everything it defines
    (``s_tir.RenewDefs``): two copies can sit in one function without sharing a variable."""
    return __getattr__("s_tir").renew_defs(func)


def select_pointer(cond, then, otherwise):
    """``cond ? then : otherwise`` of two data pointers (``Select`` takes no handles in
    0.27: the ``if_then_else`` intrinsic, only the chosen side evaluated)."""
    return tirx.call_intrin(then.ty, "prim.if_then_else", cond, then, otherwise)


def relax_functions(mod: IRModule) -> Sequence[tuple[str, relax.Function]]:
    """The Relax functions of a module, by global name."""
    return [(gv.name_hint, f) for gv, f in mod.functions.items() if isinstance(f, relax.Function)]


def rewrite_functions(rewriter, mod: IRModule) -> IRModule:
    """``mod`` with each of its Relax functions visited by ``rewriter`` (a ``PyExprMutator``
    built on ``mod``), as a module pass returns it."""
    for gv, func in list(mod.functions.items()):
        if isinstance(func, relax.Function):
            rewriter.builder_.update_func(gv, rewriter.visit_expr(func))
    return rewriter.builder_.get()


def is_tensor_constant(expr: Any) -> bool:
    """True for a constant tensor of rank >= 1 (``tvm.ir.Constant`` in 0.27, was relax's)."""
    return isinstance(expr, tvm.ir.Constant) and bool(shape_of(expr))


def _constant_data(expr: Any):
    """A constant tensor's data (0.27: ``tvm.ir.Constant.value``, was ``.data``)."""
    return expr.value if hasattr(expr, "value") else expr.data


def constant_numpy(expr: Any) -> np.ndarray:
    """A constant tensor's data as numpy."""
    return _constant_data(expr).numpy()


def constant_nbytes(expr: Any) -> int:
    """Bytes of a constant tensor's data."""
    data = _constant_data(expr)
    return int(np.prod([int(d) for d in data.shape])) * np.dtype(str(data.dtype)).itemsize


def node_address(node: Any) -> int:
    """The address of the object a node refers to: equal for two references to one node
    (Python wrappers of it are made afresh on each visit)."""
    return int(node.__chandle__())


def var_name(var: relax.Var) -> str:
    """Name of a Relax variable (``name`` in 0.27, ``name_hint`` before)."""
    return str(getattr(var, "name", None) or getattr(var, "name_hint", ""))


def register_error(cls: type) -> type:
    """Let an exception class cross TVM's FFI (pass boundaries) without becoming RuntimeError."""
    return __getattr__("tvm_ffi").register_error(cls.__name__, cls)


def string_imm(value: str):
    """A string constant of the IR (``tvm.ir.StringImm``), e.g. what a Relax function returns."""
    return tvm.ir.StringImm(value)


def float_imm(value: float, dtype: str = "float32"):
    """A float constant of the IR (``tvm.tirx.FloatImm``), e.g. a run time of a record."""
    return tvm.tirx.FloatImm(dtype, value)


def load_module(path: str):
    """Load an exported library (``tvm.runtime.load_module``)."""
    return tvm.runtime.load_module(path)


def current_target() -> Target | None:
    """The target of the enclosing ``with target:`` (``tvm.compile`` enters one), or None."""
    return Target.current(allow_none=True)


def structural_map(node: Any, hooks) -> Any:
    """``node`` rebuilt bottom-up with ``(type, function)`` rewrite hooks
    (``tvm_ffi.structural_map``; TVM 0.27 has no ``stmt_functor``)."""
    return __getattr__("tvm_ffi").structural_map(node, hooks)


def compile_cuda(source: str, target, target_format: str = "cubin") -> bytes:
    """CUDA source compiled by nvcc for ``target``'s arch (``tvm.support.nvcc``)."""
    from tvm.support import nvcc

    with make_target(target):
        return bytes(nvcc.compile_cuda(source, target_format=target_format, compiler="nvcc"))


def ms_workload(func) -> IRModule:
    """A PrimFunc as meta_schedule keys its database by (``tune_context._normalize_mod``)."""
    from tvm.s_tir.meta_schedule.tune_context import _normalize_mod

    return _normalize_mod(func)


def worker_threads(num_threads: int) -> int:
    """The pool size of worker processes started from now on (builders, runners): TVM sizes
    a new process's pool from ``TVM_NUM_THREADS`` or, unset, half the cores on x86 (it
    assumes hyper-threads: one thread on a 2-core VM). Sets it to ``num_threads`` unless the
    user chose; returns the size the workers get."""
    import os

    chosen = os.environ.setdefault("TVM_NUM_THREADS", str(int(num_threads)))
    if int(chosen) != int(num_threads):
        logger.warning("TVM_NUM_THREADS=%s: workers run %s threads, not %d", chosen, chosen,
                       num_threads)
    return int(chosen)


def remove_layout_rewrite_block(mod: IRModule) -> IRModule:
    """``mod`` with meta_schedule's weight layout rewrite block taken out and the weight
    parameter given the rewritten layout (what a tuned candidate with the ``RewriteLayout``
    post-processor is built as; the rewrite itself runs once, at compile time). A module
    without such a block is returned as it is."""
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    return RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)


def estimate_flops(func) -> float:
    """Floating-point operations of a PrimFunc (``tvm.s_tir.analysis.estimate_tir_flops``,
    which takes a module)."""
    from tvm.s_tir.analysis import estimate_tir_flops

    return float(estimate_tir_flops(IRModule({"main": func})))


#: The logger meta_schedule configures (``tvm.s_tir.meta_schedule.logging.create_loggers``).
MS_LOGGER = "tvm.s_tir.meta_schedule"


@contextlib.contextmanager
def foreign_ms_handlers_detached() -> Iterator[list]:
    """Run meta_schedule's logger set-up with the user's own handlers taken off its logger.

    ``create_loggers`` lists the names of the handlers already on ``tvm.s_tir.meta_schedule``
    and hands them to ``logging.config.dictConfig``, which knows only its own: an unnamed
    handler (``None``: "'NoneType' object has no attribute 'format'") or one named by the user
    ("Unable to configure logger") makes every tuning call fail. pytest 9.2 puts its unnamed
    capture handler on every non-propagating logger, and a notebook or an application's
    log-capture tool can do the same. The foreign handlers are detached for the set-up and put
    back after it, so the user's logging sees meta_schedule's records as before.
    """
    log = logging.getLogger(MS_LOGGER)
    foreign = [h for h in log.handlers if not (h.get_name() or "").startswith(MS_LOGGER)]
    for handler in foreign:
        log.removeHandler(handler)
    try:
        yield foreign
    finally:
        for handler in foreign:
            if handler not in log.handlers:
                log.addHandler(handler)


#: Files of frames that hold no module: :func:`inspect.getmodule` scans all of ``sys.modules``
#: for each such frame it is asked about (it caches only the files it finds).
_MODULELESS_FILES = ("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>",
                     "<string>", "<ast>")


def load_tensor_intrinsics() -> None:
    """Import ``tvm.s_tir.tensor_intrin`` (which every meta_schedule ``TuneContext`` imports)
    in seconds, not a minute: each of its ~250 TVMScript functions calls ``inspect.stack()``,
    and for each frame of the import machinery ``inspect.getmodule`` scanned the ~2000 modules
    loaded (59 s here, once per tuning process); told that those frames have no module (what
    the scan found), the import takes 7 s. Inspect's cache is left as it was."""
    if "tvm.s_tir.tensor_intrin" in sys.modules:
        return
    added = [f for f in (os.path.normcase(os.path.abspath(n)) for n in _MODULELESS_FILES)
             if f not in inspect.modulesbyfile]
    inspect.modulesbyfile.update(dict.fromkeys(added, "<no module>"))
    try:
        importlib.import_module("tvm.s_tir.tensor_intrin")
    finally:
        for file in added:
            inspect.modulesbyfile.pop(file, None)


def tune_contexts(tasks, work_dir: str, **kwargs):
    """``(contexts, weights)`` for extracted tasks
    (``ms.relax_integration.extracted_tasks_to_tune_contexts``), whatever handlers the user's
    logging has put on meta_schedule's logger (:func:`foreign_ms_handlers_detached`); TVM's
    tensor intrinsics loaded first (:func:`load_tensor_intrinsics`)."""
    load_tensor_intrinsics()
    with foreign_ms_handlers_detached():
        return __getattr__("ms").relax_integration.extracted_tasks_to_tune_contexts(
            tasks, work_dir, **kwargs)
