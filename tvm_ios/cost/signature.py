"""Stage signatures: a stage's identity read off the model's bindings, without building it.

Building a stage's standalone module (:mod:`.stage_module`) to get its workload key costs
tens of milliseconds; the IOS DP prices up to millions of candidate stages. A *signature*
identifies the same thing as the workload key from what the module would be made of:

* the bindings the stage emits, in emission order (:meth:`StageSigner.order`, which is also
  what :func:`~.stage_module.stage_module` emits);
* for each binding, a *template*: its ops, attributes, constant shapes and dtypes, with the
  variables it reads left as holes;
* the wiring of the holes: an earlier binding of the stage (by position), or an outside
  tensor (numbered by first use, activation or weight, shape and dtype);
* the outputs, and whether the stage is merged (the merge rewrite is a function of the
  unmerged module).

Names and weight values do not count, as in the workload key, so identical blocks of a
model (and of different models) share a signature. The log keeps each record's signature,
so a stage measured once is found again without building anything.
"""
from __future__ import annotations

import hashlib
import logging
from typing import Sequence

from tvm import relax

from .. import _tvm
from ..graph.extract import Extraction

__all__ = ["StageSigner"]

logger = logging.getLogger(__name__)


class StageSigner:
    """Emission order and signatures of the stages of one extracted model.

    Parameters
    ----------
    ext : Extraction
        The model's function and its op graph; per-binding facts are cached here.
    """

    def __init__(self, ext: Extraction):
        self.ext = ext
        self.bindings = list(ext.func.body.blocks[ext.block_index].bindings)
        self.defined = {b.var: i for i, b in enumerate(self.bindings)}
        self.owner = {i: u for u, unit in enumerate(ext.units) for i in unit}
        func = ext.func
        num_input = len(func.params)
        if func.attrs is not None and "num_input" in func.attrs:
            num_input = int(func.attrs["num_input"])
        self.weights = set(list(func.params)[num_input:])
        self._cache: dict[int, tuple] = {}  # binding index -> _facts
        self._outside_ids: dict = {}  # a tensor not bound in the block -> its id
        self._outside: dict[int, tuple] = {}  # id -> (activation or weight, shape, dtype)

    def deps(self, index: int) -> list[int]:
        """Indices of the block's bindings read by binding ``index`` (first-use order)."""
        return self._facts(index)[0]

    def order(self, groups: Sequence[Sequence[int]]) -> tuple[list[int], list]:
        """Binding indices the stage emits (units group by group, with the free bindings
        between them that read something computed in the stage), and the indices of the
        bindings it returns."""
        units = self.ext.units
        inside = {i for group in groups for u in group for i in units[u]}
        memo: dict[int, bool] = {}

        def internal(index: int) -> bool:
            if index in inside:
                return True
            if index in self.owner:
                return False
            if index not in memo:
                memo[index] = any(internal(d) for d in self.deps(index))
            return memo[index]

        order: list[int] = []
        placed: set[int] = set()

        def emit(index: int) -> None:
            if index in placed:
                return
            for dep in self.deps(index):
                if internal(dep):
                    emit(dep)
            placed.add(index)
            order.append(index)

        for group in groups:
            for unit in sorted(group):
                for index in units[unit]:
                    emit(index)
        outputs = [units[u][-1] for group in groups for u in sorted(group)]
        return order, outputs

    def signature(self, groups: Sequence[Sequence[int]], merge: bool = False) -> str:
        """The stage's signature (see the module docstring)."""
        order, outputs = self.order(groups)
        position = {index: k for k, index in enumerate(order)}
        outside: dict = {}
        parts: list = [bool(merge)]
        for index in order:
            _, template, refs = self._facts(index)
            wiring = []
            for kind, ref in refs:
                if kind == "b" and ref in position:
                    wiring.append(position[ref])
                    continue
                if (kind, ref) not in outside:
                    outside[kind, ref] = (len(outside), self._describe(kind, ref))
                wiring.append(outside[kind, ref])
            parts.append((template, tuple(wiring)))
        parts.append(tuple(position[i] for i in outputs))
        return hashlib.sha1(repr(parts).encode()).hexdigest()[:24]

    def _describe(self, kind: str, ref: int) -> tuple:
        """(activation or weight, shape, dtype) of a tensor the stage reads from outside."""
        if kind == "o":
            return self._outside[ref]
        var = self.bindings[ref].var
        return ("a", _tvm.shape_of(var), _tvm.dtype_of(var))

    def _facts(self, index: int) -> tuple[list[int], str, list]:
        """Binding ``index``: the bindings it reads, its template's digest, and its holes
        in order, each ``("b", binding index)`` or ``("o", outside tensor id)``."""
        if index not in self._cache:
            value = self.bindings[index].value
            refs, deps = [], []
            for var in _var_refs(value):
                source = self.defined.get(var)
                if source is not None:
                    refs.append(("b", source))
                    if source not in deps:
                        deps.append(source)
                    continue
                if var not in self._outside_ids:
                    ident = len(self._outside_ids)
                    self._outside_ids[var] = ident
                    self._outside[ident] = ("w" if var in self.weights else "a",
                                            _tvm.shape_of(var), _tvm.dtype_of(var))
                refs.append(("o", self._outside_ids[var]))
            digest = hashlib.sha1(repr(_template(value)).encode()).hexdigest()[:16]
            self._cache[index] = (deps, digest, refs)
        return self._cache[index]


def _var_refs(expr) -> list:
    """Every Var read by ``expr``, in the order :func:`_template` meets its holes."""
    if isinstance(expr, relax.Var):
        return [expr]
    if isinstance(expr, relax.Call):
        return [v for a in expr.args for v in _var_refs(a)]
    if isinstance(expr, relax.Tuple):
        return [v for f in expr.fields for v in _var_refs(f)]
    if isinstance(expr, relax.TupleGetItem):
        return _var_refs(expr.tuple_value)
    return []


def _template(expr) -> tuple:
    """``expr`` with variables as holes and constants as their shape and dtype."""
    if isinstance(expr, relax.Var):
        return ("var",)
    if _tvm.is_tensor_constant(expr):
        return ("const", _tvm.shape_of(expr), _tvm.dtype_of(expr))
    if isinstance(expr, relax.Call):
        op = expr.op.name if isinstance(expr.op, _tvm.Op) else _template(expr.op)
        attrs = _tvm.structural_hash(expr.attrs) if expr.attrs is not None else None
        ty_args = tuple(_tvm.structural_hash(t) for t in expr.ty_args)
        return ("call", op, attrs, ty_args, tuple(_template(a) for a in expr.args))
    if isinstance(expr, relax.Tuple):
        return ("tuple", tuple(_template(f) for f in expr.fields))
    if isinstance(expr, relax.TupleGetItem):
        return ("item", int(expr.index), _template(expr.tuple_value))
    return ("node", type(expr).__name__, _tvm.structural_hash(expr))
