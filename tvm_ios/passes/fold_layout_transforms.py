"""``FoldLayoutTransforms``: the layout transforms of constant weights, folded with numpy.

:class:`~tvm_ios.passes.blocked_layout.BlockedLayout` leaves a ``relax.layout_transform``
on every bound weight and bias it blocks (``OIHW`` -> ``OIHW16i16o``), to be folded into
constants at compile time. Relax's ``FoldConstant`` folds each by compiling and running a
kernel for it: 6.2-6.6 s for Inception V3's 186 transforms on this project's Zen 4, paid by
every build that takes a graph into a blocked database's layout. This pass computes the
same constants with numpy (the transform's index map evaluated on the source's indices,
the elements scattered to where it sends them): well under a second.

A transform whose index map uses an expression this pass does not evaluate is left as it
is (for ``FoldConstant``), as is one of a non-constant tensor.
"""
from __future__ import annotations

import logging

import numpy as np
from tvm import relax

from .. import _tvm

__all__ = ["FoldLayoutTransforms", "fold_layout_transform"]

logger = logging.getLogger(__name__)

_LAYOUT_TRANSFORM = "relax.layout_transform"

#: Index-map expressions evaluated here, by node class name (numpy on int64 index arrays).
_BINARY = {
    "FloorDiv": np.floor_divide, "FloorMod": np.mod, "Add": np.add, "Sub": np.subtract,
    "Mul": np.multiply,
}


class _Unsupported(Exception):
    """An index-map expression this pass does not evaluate."""


def _evaluate(expr, env: dict):
    kind = type(expr).__name__
    if kind == "Var":
        for var, value in env.items():
            if expr.same_as(var):
                return value
        raise _Unsupported(f"free variable {expr}")
    if kind == "IntImm":
        return np.int64(int(expr.value))
    if kind in _BINARY:
        return _BINARY[kind](_evaluate(expr.a, env), _evaluate(expr.b, env))
    raise _Unsupported(kind)


def fold_layout_transform(call, tensor=None) -> np.ndarray | None:
    """The value of ``relax.layout_transform(constant)`` as a numpy array (None where the
    call's tensor, or ``tensor`` given for it, is not a constant or its index map holds an
    expression this module does not evaluate)."""
    tensor = call.args[0] if tensor is None else tensor
    if not _tvm.is_tensor_constant(tensor) or _tvm.shape_of(call) is None:
        return None
    source = _tvm.constant_numpy(tensor)
    index_map = call.attrs.index_map
    grid = np.indices(source.shape, dtype=np.int64)
    env = dict(zip(index_map.initial_indices, grid))
    try:
        where = tuple(np.broadcast_to(_evaluate(e, env), source.shape)
                      for e in index_map.final_indices)
    except _Unsupported as unsupported:
        logger.debug("layout transform left to FoldConstant: %s", unsupported)
        return None
    pad = call.attrs.pad_value
    out = np.full(_tvm.shape_of(call), 0 if pad is None else float(pad.value), source.dtype)
    out[where] = source
    return out


@_tvm.mutator
class _Folder(_tvm.PyExprMutator):
    """Replaces each foldable ``relax.layout_transform`` of a constant by its value."""

    def __init__(self, mod):
        super().__init__(mod)
        self.folded = 0

    def visit_call_(self, call):
        call = super().visit_call_(call)
        if not isinstance(call.op, _tvm.Op) or call.op.name != _LAYOUT_TRANSFORM:
            return call
        tensor = call.args[0]
        if isinstance(tensor, relax.Var):  # (a variable bound to a constant: its value)
            tensor = self.lookup_binding(tensor)
        value = fold_layout_transform(call, tensor)
        if value is None:
            return call
        self.folded += 1
        return relax.const(value, str(value.dtype))


@_tvm.module_pass(opt_level=0, name="tvm_ios.FoldLayoutTransforms")
class FoldLayoutTransforms:
    """Fold ``relax.layout_transform`` calls of constant tensors into constants (numpy).

    Examples
    --------
    >>> mod = relax.transform.ConvertLayout({"relax.nn.conv2d": ["NCHW16c", "OIHW16i16o"]})(mod)
    >>> mod = FoldLayoutTransforms()(mod)   # the weights packed, no kernel compiled
    """

    def __init__(self):
        self.folded = 0  # transforms folded by the last run

    def transform_module(self, mod, ctx):
        folder = _Folder(mod)
        out = _tvm.rewrite_functions(folder, mod)
        self.folded = folder.folded
        logger.info("FoldLayoutTransforms: %d transforms of constants folded", self.folded)
        return out if self.folded else mod
