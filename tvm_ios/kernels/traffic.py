"""Activation traffic through global memory of a Relax function run kernel by kernel.

The figure GraphTurbo's report models (off-core bytes), measured on the code instead: every
kernel of the function (an op of the op graph with its epilogue, a glue op, or any other
call on activations, such as a slice of the input) writes its output tensor to global
memory once and reads each activation tensor it takes from another kernel once, whole.
Tensors an rProgram keeps on a vEU (``local``) cost nothing; weights are not counted (the
paper leaves them out too: they are read by one layer, not passed between layers).
"""
from __future__ import annotations

import math

from tvm import relax

from .. import _tvm
from ..graph.extract import extract
from ..graph.opinfo import itemsize
from .program_regions import _sources, augment, binding_deps

__all__ = ["activation_traffic", "tensor_bytes"]


def tensor_bytes(expr) -> int:
    """Bytes of a tensor-typed Relax expression (0 for anything else)."""
    shape = _tvm.shape_of(expr)
    return math.prod(shape) * itemsize(_tvm.dtype_of(expr) or "float32") if shape else 0


def activation_traffic(func: relax.Function, local: set = frozenset(),
                       name: str = "main") -> dict:
    """Bytes written and read by the kernels of ``func``.

    Parameters
    ----------
    func : relax.Function
        The function (before an rProgram rewrite: its ops are the kernels).
    local : set of int
        Binding indices (of the extracted dataflow block) whose tensors stay on a vEU.

    Returns
    -------
    dict
        ``bytes`` (written + read), ``written``, ``read``, ``kernels`` and ``kept_bytes``.
    """
    ext = extract(func, name=name)
    graph, members = augment(ext)
    bindings = list(ext.func.body.blocks[ext.block_index].bindings)
    deps = binding_deps(bindings)
    kernel_of = {b: k for k, node in enumerate(graph.nodes) for b in members[node.name]}
    params = _inputs(func)
    acts = set()
    for b, binding in enumerate(bindings):
        if any(d in acts for d in deps[b]) or _reads(binding.value, params):
            acts.add(b)
            if b not in kernel_of and isinstance(binding.value, relax.Call):
                kernel_of[b] = len(graph) + b
    outputs: dict[int, int] = {}
    for b, k in kernel_of.items():
        outputs[k] = max(outputs.get(k, b), b)
    written = sum(tensor_bytes(bindings[b].var) for b in outputs.values() if b not in local)
    read = 0
    for k in outputs:
        mine = [b for b, kk in kernel_of.items() if kk == k]
        sources: set = set()
        for b in mine:
            sources |= _sources(b, deps, {i: i for i in kernel_of})  # kernel outputs it reads
            read += sum(tensor_bytes(p) for p in params if _reads(bindings[b].value, {p}))
        read += sum(tensor_bytes(bindings[s].var) for s in sources
                    if kernel_of[s] != k and s not in local)
    kept = sum(tensor_bytes(bindings[b].var) for b in local)
    return {"bytes": written + read, "written": written, "read": read,
            "kernels": len(outputs), "kept_bytes": kept}


def _inputs(func) -> list:
    params = list(func.params)
    if func.attrs is not None and "num_input" in func.attrs:
        return params[: int(func.attrs["num_input"])]
    return params[:1]


def _reads(value, params) -> bool:
    found = []
    relax.analysis.post_order_visit(value, lambda n: found.append(n)
                                    if isinstance(n, relax.Var) and n in set(params) else None)
    return bool(found)
