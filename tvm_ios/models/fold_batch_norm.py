"""Fold inference batch norms into the convolutions that feed them (a Relax pass).

PyTorch's frontends (``from_exported_program``, ``from_fx``) keep every ``nn.BatchNorm2d`` in
eval mode as ``relax.nn.batch_norm(conv, gamma, beta, mean, var)`` followed by ``[0]``. The
op-graph extractor does not know ``batch_norm``, so each one became an unschedulable unit
between its convolution and its ReLU. With the weights bound (all four statistics
constants), this pass rewrites::

    c = conv2d(x, W)            ->  c = conv2d(x, W * s)         s = gamma / sqrt(var + eps)
    y = batch_norm(c, ...)[0]       y = add(c, beta - mean * s)   (a (1, C, 1, 1) bias)

so that a convolution, its batch norm and its ReLU are one unit, as in the zoo; the new
bindings keep the names of the ones they replace. A batch norm that does not follow a
convolution with a constant weight (or whose convolution has other readers) is left to
TVM's ``DecomposeOpsForInference`` (elementwise ops, free in the op graph).
"""
from __future__ import annotations

import logging

import numpy as np
from tvm import relax

from .. import _tvm

logger = logging.getLogger(__name__)

__all__ = ["FoldBatchNorm", "fold_batch_norm"]

_BATCH_NORM = "relax.nn.batch_norm"
_CONV2D = "relax.nn.conv2d"


def _const(expr, lookup):
    """The numpy value of ``expr`` if it is (a variable bound to) a constant, else None."""
    if isinstance(expr, relax.Var):
        expr = lookup(expr)
    return _tvm.constant_numpy(expr) if _tvm.is_tensor_constant(expr) else None


def folded_weights(weight: np.ndarray, stats: list, epsilon: float):
    """``(weight * s, bias)`` of a conv (OIHW) followed by a batch norm of ``stats`` =
    ``[gamma, beta, mean, var]``: ``s = gamma / sqrt(var + epsilon)``,
    ``bias = beta - mean * s``, as float64 then cast back to the weight's dtype."""
    gamma, beta, mean, var = (np.asarray(v, np.float64) for v in stats)
    scale = gamma / np.sqrt(var + epsilon)
    new_w = weight.astype(np.float64) * scale.reshape((-1,) + (1,) * (weight.ndim - 1))
    bias = (beta - mean * scale).reshape(1, -1, 1, 1)
    return new_w.astype(weight.dtype), bias.astype(weight.dtype)


@_tvm.mutator
class _Folder(_tvm.PyExprMutator):
    """Rewrites ``batch_norm(conv2d(x, W), consts)[0]`` into ``conv2d(x, W') + b``."""

    def __init__(self, mod, uses):
        super().__init__(mod)
        self.uses, self.folded = uses, 0

    def visit_var_binding_(self, binding):
        value = binding.value
        if isinstance(value, relax.TupleGetItem) and value.index == 0:
            folded = self._fold(value.tuple_value)
            if folded is not None:
                conv_var, new_conv, bias = folded
                conv = self.builder_.emit(new_conv, name_hint=_tvm.var_name(conv_var))
                out = relax.op.add(conv, relax.const(bias, str(bias.dtype)))
                new_var = (self.builder_.emit if isinstance(binding.var, relax.DataflowVar)
                           else self.builder_.emit_output)(out, name_hint=_tvm.var_name(binding.var))
                self.set_var_remap(binding.var, new_var)
                self.folded += 1
                return
        super().visit_var_binding_(binding)

    def _fold(self, bn_var):
        """``(conv var, new conv call, bias)`` for a foldable batch norm, else None."""
        bn = self.lookup_binding(bn_var) if isinstance(bn_var, relax.Var) else None
        if not (isinstance(bn, relax.Call) and _tvm.op_name(bn) == _BATCH_NORM):
            return None
        conv_var = bn.args[0]
        conv = self.lookup_binding(conv_var) if isinstance(conv_var, relax.Var) else None
        if not (isinstance(conv, relax.Call) and _tvm.op_name(conv) == _CONV2D) \
                or self.uses.get(conv_var, 0) != 1 or int(bn.attrs.axis) != 1 \
                or str(conv.attrs.out_layout) != "NCHW" or str(conv.attrs.kernel_layout) != "OIHW":
            return None
        weight = _const(conv.args[1], self.lookup_binding)
        stats = [_const(a, self.lookup_binding) for a in bn.args[1:5]]
        if weight is None or any(s is None for s in stats):
            return None
        new_w, bias = folded_weights(weight, stats, float(bn.attrs.epsilon))
        data = self.visit_expr(conv.args[0])
        new_conv = relax.Call(conv.op, [data, relax.const(new_w, str(new_w.dtype))],
                              conv.attrs, conv.ty_args)
        return conv_var, new_conv, bias


def _use_counts(func) -> dict:
    counts: dict = {}

    def visit(node):
        if isinstance(node, relax.Var):
            counts[node] = counts.get(node, 0) + 1
    relax.analysis.post_order_visit(func.body, visit)
    return counts


def fold_batch_norm(mod):
    """``(mod, folded)``: ``mod`` with its foldable batch norms folded (see the module's
    docstring), the rest decomposed by ``DecomposeOpsForInference``, dead bindings removed;
    ``folded`` counts the batch norms folded into convolutions."""
    folder = _Folder(mod, _use_counts(mod["main"]))
    out = _tvm.rewrite_functions(folder, mod)
    out = relax.transform.DecomposeOpsForInference()(out)
    out = relax.transform.DeadCodeElimination()(out)
    logger.info("FoldBatchNorm: %d batch norms folded into their convolutions", folder.folded)
    return out, folder.folded


@_tvm.module_pass(opt_level=0, name="tvm_ios.FoldBatchNorm")
class FoldBatchNorm:
    """Fold inference batch norms into their convolutions (weights must be bound).

    Examples
    --------
    >>> mod = FoldBatchNorm()(_tvm.bind_params(mod, params))
    """

    def __init__(self):
        self.folded = 0  # batch norms folded by the last run

    def transform_module(self, mod, ctx):
        out, self.folded = fold_batch_norm(mod)
        return out
