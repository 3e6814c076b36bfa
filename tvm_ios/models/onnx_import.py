"""Import an ONNX model as a Relax module with separate parameters.

Wraps ``tvm.relax.frontend.onnx.from_onnx`` (TVM 0.27) with ``keep_params_in_input=True``: the
initializers become parameters of ``main`` after the ``num_input`` graph inputs, and their values
come back as a name -> numpy dict, the same contract as :func:`tvm_ios.models.get`. The
frontend stores the values in the function attribute ``params``, which is removed here.
"""
from __future__ import annotations

import logging
import os
from typing import Mapping, Sequence

import numpy as np

logger = logging.getLogger(__name__)

__all__ = ["from_onnx"]


def _load_onnx():
    try:
        import onnx
    except ImportError as err:
        raise ImportError("tvm_ios.models.from_onnx needs the 'onnx' package: "
                          "pip install onnx (or tvm-ios[onnx])") from err
    return onnx


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
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"ONNX model file not found: {path!r}")
    onnx = _load_onnx()
    from tvm.relax.frontend.onnx import from_onnx as _relax_from_onnx

    model = onnx.load(path)
    shapes = {k: list(v) for k, v in shape_dict.items()} if shape_dict else None
    mod = _relax_from_onnx(model, shape_dict=shapes, opset=opset, keep_params_in_input=True)
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
    logger.info("imported %s: %d inputs, %d parameters", path, num_input, len(params))
    return mod, params
