"""Import a PyTorch model as a Relax module with separate parameters.

:func:`from_torch` runs ``torch.export.export`` and TVM 0.27's ``from_exported_program``
(``keep_params_as_input=True``, ``unwrap_unit_return_tuple=True``): the module's parameters
become parameters of ``main`` after the ``num_input`` example inputs, their values come back
as a name -> numpy dict, the same contract as :func:`tvm_ios.models.get`. Then, so that the
op graph the scheduler sees has the zoo's form:

* every op is named after its weights, its torch module or its producer
  (``inception3a_branch2_1_conv``, ``maxpool1``, ``inception3a_cat`` rather than ``lv20``;
  :mod:`.torch_names`), so op-graph units and stages read like the torch module;
* the inference batch norms are folded into their convolutions
  (:mod:`.fold_batch_norm`) with the weights bound; the convolution weights and biases that
  come out are parameters again, named ``<conv>_weight`` / ``<conv>_bias``.

:func:`load_exported` reads an ExportedProgram saved with ``torch.export.save`` (``.pt2``).
Errors a user can fix (torch.export rejects the module, the frontend lacks an op) are
raised as one-line :class:`ValueError` naming the op or the export error.
"""
from __future__ import annotations

import contextlib
import logging
import os
import re
import warnings

import numpy as np
from tvm import relax

from .. import _tvm
from .fold_batch_norm import fold_batch_norm
from .torch_names import FxNames, name_bindings, unique_name

logger = logging.getLogger(__name__)

__all__ = ["from_torch", "from_exported", "load_exported"]

_UNSUPPORTED = re.compile(r"Unsupported function types? (\[.*?\])", re.S)


def _torch():
    import torch

    return torch


def from_torch(module, example_inputs, fold: bool = True):
    """Export ``module`` with ``torch.export`` and convert it to Relax.

    Parameters
    ----------
    module : torch.nn.Module
        The model; put in eval mode here (inference batch norms).
    example_inputs : tuple of torch.Tensor
        Inputs of the shapes ``main`` takes (static shapes).
    fold : bool
        Fold the batch norms into their convolutions (default True).

    Returns
    -------
    mod : tvm.IRModule
        ``main(<inputs...>, <params...>)`` with the attribute ``num_input``.
    params : dict of str to numpy.ndarray
        Parameter values by name, in the order of ``main``'s parameters.

    Raises
    ------
    ValueError
        When ``torch.export`` rejects the module or TVM's frontend lacks one of its ops.
    """
    torch = _torch()
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    module = module.eval()
    name = type(module).__name__
    try:
        with torch.no_grad():
            program = torch.export.export(module, tuple(example_inputs))
    except Exception as err:
        raise ValueError(f"torch.export rejected {name}: {_first_line(err)}") from err
    return from_exported(program, name=name, fold=fold)


def load_exported(path: str | os.PathLike, fold: bool = True):
    """``(mod, params)`` of an ExportedProgram saved with ``torch.export.save`` (``.pt2``).

    Raises
    ------
    FileNotFoundError
        When ``path`` does not exist.
    ValueError
        When it is not a readable ExportedProgram, or TVM's frontend lacks one of its ops.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"torch model file not found: {path!r}")
    torch = _torch()
    try:
        with _quiet():
            program = torch.export.load(path)
    except Exception as err:
        raise ValueError(f"{path}: not a readable torch.export program: {_first_line(err)}") \
            from err
    return from_exported(program, name=os.path.basename(path), fold=fold)


def from_exported(program, name: str = "model", fold: bool = True):
    """``(mod, params)`` of a ``torch.export.ExportedProgram`` (see :func:`from_torch`)."""
    from tvm.relax.frontend.torch import from_exported_program

    names = FxNames()
    try:
        with _quiet():
            mod = from_exported_program(program, keep_params_as_input=True,
                                        unwrap_unit_return_tuple=True,
                                        custom_convert_map=names.convert_map())
    except Exception as err:
        raise ValueError(f"{name}: TVM's PyTorch frontend cannot convert it: "
                         f"{_frontend_error(err)}") from err
    mod, values = relax.frontend.detach_params(mod)
    func = mod["main"]
    num_input = int(func.attrs["num_input"])
    params = {_tvm.var_name(v): np.asarray(t.numpy())
              for v, t in zip(func.params[num_input:], values.get("main", []))}
    mod, wanted = name_bindings(mod, names.hints(mod["main"]))
    if fold:
        mod, params = _folded(mod, params, num_input, wanted)
    logger.info("imported %s: %d inputs, %d parameters", name, num_input, len(params))
    return mod, params


@contextlib.contextmanager
def _quiet():
    """torch 2.13's pytree deprecation warning (``LeafSpec``), which torch's own unpickling
    and TVM 0.27's frontend trigger, kept off the user's terminal."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
        yield


def _first_line(err: Exception) -> str:
    text = str(err).strip() or type(err).__name__
    return text.splitlines()[0][:300]


def _frontend_error(err: Exception) -> str:
    """The ops the frontend lacks (its "Unsupported function types [...]"), else line one."""
    found = _UNSUPPORTED.search(str(err))
    return f"unsupported op(s) {found.group(1)}" if found else _first_line(err)


def _folded(mod, params: dict, num_input: int, wanted: dict):
    """Batch norms folded with the weights bound; the constants of ``main`` that are
    weights again become its parameters (named after their binding, which is named before
    and after)."""
    mod, folded = fold_batch_norm(_tvm.bind_params(mod, params))
    mod = relax.transform.FoldConstant()(mod)
    mod, wanted = name_bindings(mod, wanted)
    mod, params = _lift_constants(mod, num_input)
    mod, _ = name_bindings(mod, wanted)
    logger.info("folded %d batch norms into their convolutions", folded)
    return mod, params


def _lift_constants(mod, num_input: int):
    """``main`` with its weight constants (conv / matmul operands, bias adds, of 2 or more
    elements) lifted to parameters ``<binding>_weight`` / ``<binding>_bias``."""
    func = mod["main"]
    consts: dict = {}
    for block in func.body.blocks:
        for binding in block.bindings:
            value = binding.value
            if not isinstance(value, relax.Call):
                continue
            base = _tvm.var_name(binding.var)
            for arg in value.args:
                if _tvm.is_tensor_constant(arg) and _tvm.constant_nbytes(arg) > 4 \
                        and arg not in consts:
                    consts[arg] = unique_name(_const_name(base, value), set(consts.values()))
    if not consts:
        return mod, {}
    new_params = [relax.Var(n, c.ty) for c, n in consts.items()]
    body = _ConstReplacer(dict(zip(consts, new_params))).visit_expr(func.body)
    lifted = relax.Function(list(func.params[:num_input]) + new_params, body, func.ret_ty,
                            func.is_pure, func.attrs, func.span)
    mod = mod.clone()
    mod["main"] = lifted
    return mod, {n: _tvm.constant_numpy(c) for c, n in consts.items()}


def _const_name(base: str, call) -> str:
    """``<conv>_bias`` for the constant of a bias add, else ``<binding>_weight``."""
    if _tvm.op_name(call) != "relax.add":
        return f"{base}_weight"
    tensors = [a for a in call.args if isinstance(a, relax.Var)]
    return f"{_tvm.var_name(tensors[0]) if tensors else base}_bias"


@_tvm.mutator
class _ConstReplacer(_tvm.PyExprMutator):
    def __init__(self, mapping):
        super().__init__()
        self.mapping = mapping

    def visit_generic_const_(self, const):
        return self.mapping.get(const, const)
