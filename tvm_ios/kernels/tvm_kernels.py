"""TVM's own kernels of an op: legalized and fused PrimFuncs, and their inlining by buffer.

An op (an extracted unit: conv + bias + relu, a pool, ...) is cut out of the model as a tiny
Relax function and lowered by TVM itself (``LegalizeOps``, ``FuseOps``, ``FuseTIR``): the
result is a short list of :class:`KernelStep` (a PrimFunc and the tensors it reads and
writes). :func:`inline_body` substitutes a step's parameter buffers by the buffers of the
combined rProgram function, so its body can be placed inside a vEU's rTask list.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import tvm
from tvm import relax

from .._tvm import tirx, tvm_ffi
from .. import _tvm
from .blocked_conv import register_blocked_conv2d

__all__ = ["KernelStep", "lower_bindings", "inline_body", "UnsupportedKernel", "tensor_buffer"]

logger = logging.getLogger(__name__)
register_blocked_conv2d()  # (a blocked graph's convolutions lower too)

LOWERING = (relax.transform.LegalizeOps, relax.transform.AnnotateTIROpPattern,
            relax.transform.FuseOps, relax.transform.FuseTIR,
            relax.transform.DeadCodeElimination)


class UnsupportedKernel(ValueError):
    """TVM's lowering of an op gives something that cannot become an rTask."""


@dataclass
class KernelStep:
    """One PrimFunc call: ``func(*inputs, output)`` in call_tir convention."""

    func: tirx.PrimFunc
    inputs: list  # Relax Vars or Constants (keys of the combined function's tensors)
    output: object  # the Relax Var the step writes


def lower_bindings(bindings, output_var, transform=None) -> list[KernelStep]:
    """Lower a unit's Relax bindings to TVM's fused PrimFuncs.

    Parameters
    ----------
    bindings : list of relax.VarBinding
        The unit's bindings in order.
    output_var : relax.Var
        The unit's output; the last step writes it.
    transform : callable, optional
        ``transform(mod)`` of the lowered module before its steps are read (how tuned
        kernels replace TVM's default ones: :func:`~.tuned_build.serial_kernels`).
    """
    defined = {b.var for b in bindings}
    params: list = []
    for binding in bindings:
        for var in relax.analysis.free_vars(binding.value):
            if var not in defined and var not in params:
                params.append(var)
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            for binding in bindings:
                bb.emit_normalized(binding)
            out = bb.emit_output(output_var)
        bb.emit_func_output(out)
    mod = tvm.transform.Sequential([p() for p in LOWERING])(bb.get())
    if transform is not None:
        mod = transform(mod)
    return _steps(mod, params, output_var)


def _steps(mod, params, output_var) -> list[KernelStep]:
    func = mod["main"]
    keys = dict(zip(func.params, params))
    steps = []
    for block in func.body.blocks:
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, relax.Var) and value in keys:
                keys[binding.var] = keys[value]
                continue
            value = _folded(value, keys)
            if _tvm.is_tensor_constant(value) or isinstance(value, relax.Tuple):
                keys[binding.var] = value  # weights packed at compile time (a folded call)
                continue
            if not (isinstance(value, relax.Call) and _tvm.op_name(value) == "relax.call_tir"):
                raise UnsupportedKernel(f"TVM lowers binding {_tvm.var_name(binding.var)!r} to "
                                        f"{type(value).__name__}, not a call_tir")
            gvar, args = value.args[0], value.args[1]
            inputs = [keys.get(a, a) for a in args.fields]
            if any(isinstance(a, relax.Var) and a not in keys.values() and a not in keys
                   for a in inputs):
                raise UnsupportedKernel("a lowered step reads a tensor that is not a step's "
                                        "output or the op's input")
            keys[binding.var] = binding.var
            steps.append(KernelStep(mod[gvar], inputs, binding.var))
    result = func.body.body
    if not steps or not isinstance(result, relax.Var):
        raise UnsupportedKernel("the op lowers to no kernel")
    final = keys.get(result, result)
    for step in steps:
        if step.output.same_as(final):
            step.output = output_var
        step.inputs = [output_var if isinstance(a, relax.Var) and a.same_as(final) else a
                       for a in step.inputs]
    return steps


def _folded(value, keys):
    """``value``, or the constant it names where it picks an item of a folded tuple."""
    if isinstance(value, relax.TupleGetItem) and isinstance(keys.get(value.tuple_value),
                                                           relax.Tuple):
        return keys[value.tuple_value].fields[value.index]
    return value


def tensor_buffer(shape, dtype: str, name: str):
    """A TIR buffer for a tensor of the combined function (int64 extents, as legalized)."""
    return tirx.decl_buffer([tirx.IntImm("int64", int(d)) for d in shape], dtype, name)


def inline_body(func: tirx.PrimFunc, buffers: list):
    """``func``'s body with its parameter buffers replaced, in order, by ``buffers``."""
    if len(func.params) != len(buffers):
        raise UnsupportedKernel(f"kernel takes {len(func.params)} buffers, got "
                                f"{len(buffers)}")
    pairs = list(zip(func.params, buffers))

    def remap(var):
        for param, buf in pairs:
            if var.same_as(param):
                return buf
        return var
    return tvm_ffi.structural_map(func.body, (tvm.ir.expr.Var, remap))
