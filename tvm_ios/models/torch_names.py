"""Names for the bindings of a Relax module imported from ``torch.export`` (issue 62).

TVM's frontend names every binding ``lvNN``; the op graph names a unit after its last
binding, so pools, the final matmul and the rest would read ``lv12`` in schedules and
reports. :class:`FxNames` records, while the frontend converts each ``torch.export`` node,
which Relax variable the node became, and names it after the node's module
(``nn_module_stack``) and the torch function it calls (``torch_fn``):

* ``maxpool1`` for the ``max_pool2d`` of an ``nn.MaxPool2d`` at ``maxpool1`` (the module's
  class is the function), ``inception3a_cat`` for a ``torch.cat`` in ``Inception.forward``,
  ``flatten`` for a ``torch.flatten`` in the model's own ``forward``;
* the other bindings the same call emitted (a pool's ``zeros_like`` indices, a linear
  layer's transpose) are ``<name>_<relax op>``.

:func:`name_bindings` then names every dataflow binding of ``main``, first rule first:

1. a call reading a weight parameter ``[p_]X_weight`` is ``X`` (a transpose or reshape of
   the weight is ``X_weight_<op>`` and counts as the weight);
2. an elementwise op of one such tensor is ``X_<op>`` (``conv1_conv_relu``: a unit is
   named after its convolution);
3. a binding with a hint (from :class:`FxNames`, or a previous pass) takes it;
4. one with a name of its own keeps it; an ``lvNN`` is ``<producer>_<op>``.

Names are made unique (``_1``, ``_2``, ...) in binding order, so they are stable across runs.
"""
from __future__ import annotations

import re

from tvm import relax

from .. import _tvm

__all__ = ["FxNames", "name_bindings"]

_AUTO = re.compile(r"^lv\d*$")
_WEIGHT = re.compile(r"^(?:p_)?(.+)_weight$")
#: Elementwise ops whose binding is named after the one tensor it reads (``conv1_relu``).
_CHAINED = {"relax.add", "relax.multiply", "relax.nn.relu", "relax.clip", "relax.sigmoid",
            "relax.nn.silu", "relax.hardswish", "relax.nn.gelu"}
#: Ops that only move or retype data: of a weight, a weight; never the op a call is named for.
_VIEWS = {"relax.permute_dims", "relax.reshape", "relax.astype"}
_PLUMBING = _VIEWS | {"relax.zeros_like", "relax.broadcast_to", "relax.expand_dims",
                      "relax.squeeze"}


def identifier(name: str) -> str:
    """``name`` as a valid variable name: ``.`` and other non-word characters as ``_``."""
    name = re.sub(r"\W", "_", name, flags=re.ASCII)
    return name if name and not name[0].isdigit() else f"_{name}"


def _norm(word: str) -> str:
    return word.lower().replace("_", "")


def node_name(node) -> tuple[tuple, str]:
    """``(call, name)`` of a ``torch.export`` node: ``call`` tells the nodes of one torch
    call apart (a pool and its ``getitem``), ``name`` is its module path and function."""
    stack = list((node.meta.get("nn_module_stack") or {}).values())
    path, cls = stack[-1] if stack else ("", "")
    cls = (cls if isinstance(cls, str) else getattr(cls, "__name__", "")).rsplit(".", 1)[-1]
    torch_fn = node.meta.get("torch_fn")
    word = torch_fn[1].rsplit(".", 1)[-1] if torch_fn else str(node.target.__name__)
    word = word.split(".")[0].strip("_") or node.name
    call = (path, torch_fn[0] if torch_fn else node.name)
    if not path:
        name = word
    elif _norm(cls).startswith(_norm(word)) or _norm(word).startswith(_norm(cls)):
        name = path
    else:
        name = f"{path}_{word}"
    return call, identifier(name.lower())  # lower case, as torch.export names the weights


def _kind(value) -> str:
    """The short name of a binding's op (``max_pool2d``, ``tuple``, ``getitem``)."""
    if isinstance(value, relax.Call):
        return str(_tvm.op_name(value) or "call").rsplit(".", 1)[-1]
    return {relax.Tuple: "tuple", relax.TupleGetItem: "getitem"}.get(type(value), "alias")


class FxNames:
    """Names of the ``torch.export`` nodes, by the Relax variable each one became.

    Pass :meth:`convert_map` as ``from_exported_program(..., custom_convert_map=...)``: it
    runs TVM's own converter of every op and records its result. :meth:`hints` then maps
    the names of the bindings of the imported function to the names they should have.
    """

    def __init__(self):
        self.records: dict[str, tuple] = {}  # Relax variable name -> node_name(node)
        self._importer, self._converters = None, {}

    def convert_map(self) -> dict:
        """A converter for each op TVM's ``ExportedProgramImporter`` knows, recording."""
        from tvm.relax.frontend.torch.exported_program_translator import \
            ExportedProgramImporter

        return {key: self._recording(key) for key in ExportedProgramImporter().convert_map
                if isinstance(key, str)}

    def _recording(self, key: str):
        def convert(node, importer):
            if importer is not self._importer:
                self._importer, self._converters = importer, importer.create_convert_map()
            out = self._converters[key](node)
            if isinstance(out, relax.Var):
                self.records.setdefault(_tvm.var_name(out), node_name(node))
            return out
        return convert

    def hints(self, func) -> dict[str, str]:
        """Binding name -> wanted name: the bindings a node's converter emitted (those before
        its result) are its; of one torch call, the last that is not plumbing is its name,
        the others ``<name>_<op>``."""
        calls: dict[tuple, list] = {}
        pending: list = []
        for block in func.body.blocks:
            for binding in block.bindings:
                pending.append(binding)
                record = self.records.get(_tvm.var_name(binding.var))
                if record is not None:
                    calls.setdefault(record, []).extend(pending)
                    pending = []
        out = {}
        for (_, name), bindings in calls.items():
            main = _main_index(bindings)
            for i, binding in enumerate(bindings):
                out[_tvm.var_name(binding.var)] = \
                    name if i == main else f"{name}_{_kind(binding.value)}"
        return out


def _main_index(bindings) -> int:
    """The binding a call is named for: its last op that is not plumbing, else its last."""
    ops = [i for i, b in enumerate(bindings)
           if isinstance(b.value, relax.Call) and _tvm.op_name(b.value) not in _PLUMBING]
    return ops[-1] if ops else len(bindings) - 1


@_tvm.mutator
class _Namer(_tvm.PyExprMutator):
    """Gives every dataflow binding of a function its name (the module docstring's rules)."""

    def __init__(self, mod, func, hints):
        super().__init__(mod)
        self.hints = hints
        self.weights = {}
        for var in func.params:
            found = _WEIGHT.match(_tvm.var_name(var))
            if found:
                self.weights[var] = found.group(1)
        self.base: dict = {}   # var -> the weight X it is named after (rule 2)
        self.stem: dict = {}   # var -> the name an lvNN after it is named after (rule 4)
        self.taken = {_tvm.var_name(v) for v in func.params}
        self.wanted: dict[str, str] = {}  # new name -> the name it wanted (before _1, _2)

    def visit_var_binding_(self, binding):
        if not isinstance(binding.var, relax.DataflowVar):
            return super().visit_var_binding_(binding)
        wanted = identifier(self._wanted(binding.var, binding.value))
        name = unique_name(wanted, self.taken)
        self.taken.add(name)
        self.wanted[name] = wanted
        self.stem.setdefault(binding.var, name)
        new = self.builder_.emit(self.visit_expr(binding.value), name_hint=name)
        self.set_var_remap(binding.var, new)
        return None

    def _wanted(self, var, value) -> str:
        args = list(value.args) if isinstance(value, relax.Call) else []
        op = _tvm.op_name(value) if args else None
        weights = [self.weights[a] for a in args if a in self.weights]
        if weights:
            if op in _VIEWS:
                self.weights[var] = weights[0]
                return f"{weights[0]}_weight_{_kind(value)}"
            self.base[var] = weights[0]
            return weights[0]
        tensors = [a for a in args if isinstance(a, relax.DataflowVar)]
        if op in _CHAINED and len(tensors) == 1 and tensors[0] in self.base:
            self.base[var] = self.base[tensors[0]]
            return f"{self.base[var]}_{_kind(value)}"
        old = _tvm.var_name(var)
        if old in self.hints:
            return self.hints[old]
        return old if not _AUTO.match(old) else self._after_producer(var, value)

    def _after_producer(self, var, value) -> str:
        """``<producer>_<op>``, the producer its first variable operand (rule 4)."""
        if isinstance(value, relax.Call):
            operands = list(value.args)
        elif isinstance(value, relax.Tuple):
            operands = list(value.fields)
        else:
            operands = [getattr(value, "tuple_value", value)]
        sources = [a for a in operands if isinstance(a, relax.Var)]
        if not sources:
            return _kind(value)
        src = sources[0]
        self.stem[var] = self.stem.get(src, _tvm.var_name(src))
        return f"{self.stem[var]}_{_kind(value)}"


def unique_name(name: str, taken: set) -> str:
    """``name``, else the first of ``name_1``, ``name_2``, ... not in ``taken``."""
    out, k = name, 1
    while out in taken:
        out, k = f"{name}_{k}", k + 1
    return out


def name_bindings(mod, hints: dict[str, str] | None = None):
    """``mod`` with every dataflow binding of ``main`` named (see the module docstring).

    Parameters
    ----------
    mod : tvm.IRModule
        The imported module; its weight parameters are named ``[p_]X_weight``.
    hints : dict of str to str, optional
        Binding name -> wanted name (:meth:`FxNames.hints`, or the ``wanted`` of a previous
        call, so that a second pass makes names unique afresh).

    Returns
    -------
    mod : tvm.IRModule
        The module, its bindings renamed; numerically the same.
    wanted : dict of str to str
        New binding name -> the name it wanted, before ``_1``, ``_2`` made it unique.
    """
    namer = _Namer(mod, mod["main"], hints or {})
    out = mod.clone()
    out["main"] = namer.visit_expr(mod["main"])
    return out, namer.wanted
