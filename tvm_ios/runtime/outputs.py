"""Outputs of a Relax VM call as a flat list of numpy arrays.

numpy only, no TVM import: the runtime-only runner of :mod:`tvm_ios.bench.run` uses it on
a GPU host where TVM's compiler is absent, as do the comparisons of :mod:`.compare`.
"""
from __future__ import annotations

import numpy as np

__all__ = ["flatten_outputs"]


def flatten_outputs(value) -> list[np.ndarray]:
    """Flatten a result (a numpy array, a TVM tensor, or nested tuples/lists of them) into
    a list of numpy arrays, depth first, in order."""
    if isinstance(value, np.ndarray):
        return [value]
    if hasattr(value, "numpy"):
        return [value.numpy()]
    return [a for v in value for a in flatten_outputs(v)]
