"""Thin adapter over the TVM Python API.

TVM renamed ``tir``, dlight, StructInfo and tensor constructors within one year (0.25-0.27).
Every other module of tvm-ios reaches TVM through the names defined here, so the next rename
is a one-file change.
"""
from __future__ import annotations

import logging
from typing import Any, Sequence

import numpy as np
import tvm
from tvm import relax, tirx  # noqa: F401  (tirx re-exported)
from tvm.relax.expr_functor import PyExprMutator, mutator  # noqa: F401  (re-exported)

Op = tvm.ir.Op  #: a primitive op (``relax.Call.op`` of ``R.nn.conv2d`` and the like)

logger = logging.getLogger(__name__)

IRModule = tvm.IRModule
Target = tvm.target.Target
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


def __getattr__(name: str):
    """Heavy TVM parts, imported on first use: ``_tvm.ms`` is ``tvm.s_tir.meta_schedule``."""
    if name == "ms":
        from tvm.s_tir import meta_schedule  # noqa: PLC0415

        return meta_schedule
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    import os  # noqa: PLC0415

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
    import os  # noqa: PLC0415

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


def bind_params(mod: IRModule, params: dict[str, np.ndarray], func: str = "main") -> IRModule:
    """Bind named parameters of ``func`` as constants."""
    if not params:
        return mod
    return relax.transform.BindParams(func, {k: tensor(v) for k, v in params.items()})(mod)


def structural_hash(node: Any) -> int:
    """Structural hash of an IR node (stable within one TVM version; names do not count).

    ``tvm.ir.structural_hash`` moved to ``tvm_ffi.structural_hash`` in 0.27.
    """
    import tvm_ffi  # noqa: PLC0415  (only where hashing is needed)

    return int(tvm_ffi.structural_hash(node))


def relax_functions(mod: IRModule) -> Sequence[tuple[str, relax.Function]]:
    """The Relax functions of a module, by global name."""
    return [(gv.name_hint, f) for gv, f in mod.functions.items() if isinstance(f, relax.Function)]


def is_tensor_constant(expr: Any) -> bool:
    """True for a constant tensor of rank >= 1 (``tvm.ir.Constant`` in 0.27, was relax's)."""
    return isinstance(expr, tvm.ir.Constant) and bool(shape_of(expr))


def var_name(var: relax.Var) -> str:
    """Name of a Relax variable (``name`` in 0.27, ``name_hint`` before)."""
    return str(getattr(var, "name", None) or getattr(var, "name_hint", ""))


def register_error(cls: type) -> type:
    """Let an exception class cross TVM's FFI (pass boundaries) without becoming RuntimeError."""
    import tvm_ffi  # noqa: PLC0415

    return tvm_ffi.register_error(cls.__name__, cls)
