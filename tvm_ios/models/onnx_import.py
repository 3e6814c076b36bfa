"""Import an ONNX model as a Relax module with separate parameters.

Wraps ``tvm.relax.frontend.onnx.from_onnx`` (TVM 0.27) with ``keep_params_in_input=True``: the
initializers become parameters of ``main`` after the ``num_input`` graph inputs, and their values
come back as a name -> numpy dict, the same contract as :func:`tvm_ios.models.get`. The
frontend stores the values in the function attribute ``params``, which is removed here.

Files as users have them are first prepared (:mod:`.onnx_prepare`): initializers also listed
as graph inputs are weights, constant subgraphs (``ConstantOfShape`` weights, ...) are folded
into initializers. Parameters that ``main`` no longer reads (shape tensors the frontend
resolved statically) are dropped. The file's opset is kept (the frontend converts opset 9
and up); ops the scheduler does not know (``LRN``, ``BatchNormalization``, ...) stay in the
module, and the op-graph extractor keeps them as unschedulable units.
"""
from __future__ import annotations

import logging
import os
from typing import Mapping, Sequence

import numpy as np

from .onnx_prepare import import_onnx, prepare

logger = logging.getLogger(__name__)

__all__ = ["from_onnx"]


def from_onnx(path: str | os.PathLike, shape_dict: Mapping[str, Sequence[int]] | None = None,
              opset: int | None = None):
    """Read an ONNX file and convert it to Relax.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.onnx`` file.
    shape_dict : mapping of str to sequence of int, optional
        Static shapes for graph inputs (needed when the file has symbolic dimensions).
    opset : int, optional
        Override the opset the file declares.

    Returns
    -------
    mod : tvm.IRModule
        ``main(<inputs...>, <params...>)`` with the attribute ``num_input``.
    params : dict of str to numpy.ndarray
        Initializer values by parameter name, in the order of ``main``'s parameters.

    Raises
    ------
    FileNotFoundError
        When ``path`` does not exist.
    ImportError
        When the ``onnx`` package is not installed.
    ValueError
        When the file is not a readable ONNX model, or TVM's ONNX frontend rejects it (an
        op it lacks: the message names the op(s) and the frontend).
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"ONNX model file not found: {path!r}")
    onnx = import_onnx()
    from tvm.relax.frontend.onnx import from_onnx as _relax_from_onnx

    try:
        model = prepare(onnx.load(path))
    except Exception as err:
        raise ValueError(f"{path}: not a readable ONNX model: {err}") from err
    shapes = {k: list(v) for k, v in shape_dict.items()} if shape_dict else None
    try:
        mod = _relax_from_onnx(model, shape_dict=shapes, opset=opset, keep_params_in_input=True)
    except Exception as err:
        first = next((line for line in str(err).splitlines() if line.strip()), repr(err))
        raise ValueError(f"{path}: TVM's Relax ONNX frontend rejects the model: "
                         f"{first.strip()}") from err
    func = mod["main"]
    values = list(func.attrs["params"]) if func.attrs and "params" in func.attrs else []
    num_input = int(func.attrs["num_input"])
    param_vars = list(func.params)[num_input:]
    if len(param_vars) != len(values):
        raise RuntimeError(f"{path}: {len(param_vars)} parameter variables but "
                           f"{len(values)} values from the ONNX frontend")
    params = {var.name: np.asarray(val.numpy()) for var, val in zip(param_vars, values)}
    if values:
        mod["main"] = func.without_attr("params")
    mod, params = _drop_unused_params(mod, params, num_input)
    logger.info("imported %s: %d inputs, %d parameters", path, num_input, len(params))
    return mod, params


def _drop_unused_params(mod, params: dict, num_input: int):
    """``main`` without the parameters its body never reads (and ``params`` without them)."""
    from tvm import relax

    func = mod["main"]
    used = set(relax.analysis.free_vars(func.body))
    keep = list(func.params[:num_input]) + [v for v in func.params[num_input:] if v in used]
    if len(keep) == len(func.params):
        return mod, params
    new = relax.Function(keep, func.body, func.ret_ty, func.is_pure, func.attrs, func.span)
    mod = mod.clone()
    mod["main"] = new
    kept = {v.name for v in keep}
    return mod, {k: v for k, v in params.items() if k in kept}
