"""What the Relax VM calls for a program's checks, without TVM's compiler.

``RProgramPass`` checks each GPU rProgram's bounded-wait record with a Relax ``assert_op``,
which the VM runs as the global function ``relax.run.assert_op``. TVM registers that
function in ``tvm/relax/op/base.py``, which a runtime-only import (the GPU pack: no
``libtvm_compiler.so``, no ``tvm.relax``) never loads, so creating the VM fails with
"Cannot find ffi::Function relax.run.assert_op". :func:`register` installs the same
function (same signature, same ``AssertionError`` and message) where none is registered;
``bench_run`` calls it before loading an artifact.
"""
from __future__ import annotations

import logging

__all__ = ["ASSERT_OP", "assert_op", "register"]

logger = logging.getLogger(__name__)

#: The global function name the Relax VM looks up for ``R.assert_op``.
ASSERT_OP = "relax.run.assert_op"


def _render(value) -> str:
    """A format argument as text: a tensor as its values, a tuple element-wise."""
    numpy = getattr(value, "numpy", None)
    if callable(numpy):
        array = numpy()
        return str(array.item() if array.ndim == 0 else array)
    if isinstance(value, (list, tuple)) or type(value).__name__ == "Array":
        return "(" + ", ".join(_render(v) for v in value) + ")"
    return str(value)


def _truth(condition) -> bool:
    if isinstance(condition, (bool, int)):
        return bool(condition)
    dtype, shape = getattr(condition, "dtype", None), getattr(condition, "shape", None)
    if dtype is None:
        raise ValueError("The condition for relax assert must be a bool, int, or Tensor, "
                         f"but received a {type(condition)}.")
    if str(dtype) != "bool":
        raise ValueError(f"The condition must be a bool scalar, but given a {dtype} tensor")
    if len(shape) != 0:
        raise ValueError(f"The condition must be a scalar, but it has a shape of {shape}")
    return bool(condition.numpy())


def assert_op(condition, format_str: str, *format_args) -> None:
    """TVM's ``relax.run.assert_op``: raise ``AssertionError`` unless ``condition``.

    Parameters
    ----------
    condition : bool, int or Tensor
        A boolean scalar.
    format_str : str
        ``str.format`` text of the message (empty: the arguments joined by commas). The
        VM passes it after the condition, as TVM's own implementation takes it.
    format_args : objects
        Values for the message.
    """
    if not isinstance(format_str, str):
        raise ValueError("The format string argument to assert must be a string, given "
                         f"{type(format_str)})")
    if _truth(condition):
        return
    message = "Assertion Failed"
    if format_args or format_str != "":
        rendered = [_render(a) for a in format_args]
        message = format_str.format(*rendered) if format_str else ", ".join(rendered)
    raise AssertionError(message)


def register() -> bool:
    """Register :func:`assert_op` as ``relax.run.assert_op`` unless one is registered
    (TVM's own, where ``tvm.relax`` is imported); True when this call registered it."""
    import tvm_ffi

    if tvm_ffi.get_global_func(ASSERT_OP, allow_missing=True) is not None:
        return False
    tvm_ffi.register_global_func(ASSERT_OP, assert_op)
    logger.debug("registered %s for the runtime-only VM", ASSERT_OP)
    return True
