"""Framework-neutral, plain-data description of a CNN: :class:`Net` and its :class:`Node`.

A model is written once against the builder methods of :class:`Net` (``conv``, ``sepconv``,
``max_pool``, ``concat``, ...). Each call appends one :class:`Node` (operator kind, input names,
attributes, parameter shapes, inferred NCHW output shape) and returns it as the reference to
pass to later calls. Emitters turn the same definition into a Relax module
(:mod:`tvm_ios.models.relax_emit`) or, later, another framework's module.

Conventions
-----------
* Every convolution has a bias: BatchNorm is folded into the convolution's weight and bias at
  inference, so ``conv`` stands for PyTorch's ``Conv2d`` + ``BatchNorm2d`` pair.
* Parameters are named ``<node>_<role>`` with roles ``w`` and ``b``; shapes are PyTorch's
  (conv weight OIHW, conv bias ``(O,)``, linear weight ``(out, in)``, linear bias ``(out,)``).
* Names are unique; :meth:`Net.scope` prefixes them (``mixed_7c`` + ``branch3x3_1`` gives
  ``mixed_7c_branch3x3_1``), and the emitters reuse them for variables.
"""
from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field
from typing import Iterator, Sequence

from .layers import LayerBuilder
from .shapes import OPS, Shape, infer_shape, param_shapes

logger = logging.getLogger(__name__)

__all__ = ["Node", "Net"]


@dataclass(frozen=True)
class Node:
    """One operator of a :class:`Net`.

    Attributes
    ----------
    name : str
        Unique name, also the prefix of its parameter names.
    op : str
        Operator kind, one of :data:`tvm_ios.models.shapes.OPS`.
    inputs : tuple of str
        Names of the input nodes, in order.
    attrs : dict
        Operator attributes (plain ints, tuples, bools and strings).
    params : dict
        Parameter role (``"w"``, ``"b"``) to shape.
    shape : tuple of int
        Inferred output shape (NCHW for 4-d tensors, batch included).
    """

    name: str
    op: str
    inputs: tuple[str, ...]
    attrs: dict = field(default_factory=dict, hash=False)
    params: dict = field(default_factory=dict, hash=False)
    shape: Shape = ()

    def param_name(self, role: str) -> str:
        """Full parameter name for ``role`` (``"w"`` or ``"b"``), e.g. ``conv3_w``."""
        return f"{self.name}_{role}"

    @property
    def channels(self) -> int:
        """Size of axis 1 (channels for NCHW, features for 2-d outputs)."""
        return self.shape[1]


class Net(LayerBuilder):
    """A CNN as an ordered list of :class:`Node` (construction order is topological).

    Parameters
    ----------
    name : str
        Model name.
    meta : dict, optional
        Free-form plain data about the model (``num_classes``, ...).

    Examples
    --------
    >>> net = Net("tiny")
    >>> x = net.input((1, 3, 32, 32))
    >>> y = net.conv(x, 16, 3, relu=True)
    >>> net.flatten(net.global_avg_pool(y)).shape
    (1, 16)
    """

    @classmethod
    def image_model(cls, name: str, batch_size: int, image_size: int, num_classes: int,
                    **meta) -> tuple["Net", Node]:
        """The start of every zoo model: a Net with a (batch, 3, size, size) image input.

        Returns the Net and its input node; ``meta`` is stored with ``num_classes``.
        """
        net = cls(name, meta={"num_classes": num_classes, **meta})
        return net, net.input((batch_size, 3, image_size, image_size))

    def __init__(self, name: str, meta: dict | None = None):
        self.name = name
        self.meta = dict(meta or {})
        self.nodes: list[Node] = []
        self._by_name: dict[str, Node] = {}
        self._scopes: list[str] = []
        self._counts: dict[str, int] = {}
        self._output: str | None = None

    # ----------------------------------------------------------------- structure
    def add_node(self, op: str, inputs: Sequence[Node | str], attrs: dict | None = None,
                 params: dict | None = None, name: str | None = None,
                 shape: Shape | None = None) -> Node:
        """Append a node after inferring its shape; the builder methods all end here.

        Parameters
        ----------
        op : str
            Operator kind.
        inputs : sequence of Node or str
            Input nodes (or their names), which must already be in the net.
        attrs : dict, optional
            Attributes.
        params : dict, optional
            Expected parameter shapes by role, checked against the ones the operator needs
            (:func:`~tvm_ios.models.shapes.param_shapes`); the builders leave it out.
        name : str, optional
            Local name (the current scope is prepended); default ``<op><counter>``.
        shape : tuple of int, optional
            Output shape; only for ``input`` nodes, inferred otherwise.

        Returns
        -------
        Node
        """
        if op not in OPS:
            raise ValueError(f"unknown operator kind {op!r}; known: {list(OPS)}")
        names = tuple(i.name if isinstance(i, Node) else str(i) for i in inputs)
        for i in names:
            if i not in self._by_name:
                raise ValueError(f"{op} node {name!r}: unknown input {i!r}")
        full = self._full_name(op, name)
        attrs = dict(attrs or {})
        in_shapes = [self._by_name[i].shape for i in names]
        if shape is None:
            try:
                shape = infer_shape(op, attrs, in_shapes)
            except ValueError as err:
                raise ValueError(f"{self.name}: node {full!r} ({op}): {err}") from err
        expected = param_shapes(op, attrs, in_shapes)
        if params is not None and {k: tuple(v) for k, v in params.items()} != expected:
            raise ValueError(f"{self.name}: node {full!r} ({op}): parameter shapes {params} do "
                             f"not fit its inputs, which need {expected}")
        node = Node(full, op, names, attrs, expected, tuple(shape))
        self.nodes.append(node)
        self._by_name[full] = node
        return node

    def fresh_name(self, op: str) -> str:
        """A new local name ``<op><k>`` unused in the current scope (with or without suffixes)."""
        key = "_".join(self._scopes + [op])
        while True:
            self._counts[key] = self._counts.get(key, 0) + 1
            local = f"{op}{self._counts[key]}"
            full = "_".join(self._scopes + [local])
            if not any(n == full or n.startswith(full + "_") for n in self._by_name):
                return local

    def _full_name(self, op: str, name: str | None) -> str:
        full = "_".join(self._scopes + [name or self.fresh_name(op)])
        if full in self._by_name:
            raise ValueError(f"{self.name}: duplicate node name {full!r}")
        return full

    @contextlib.contextmanager
    def scope(self, prefix: str) -> Iterator[None]:
        """Context manager prefixing the names of the nodes created inside it with ``prefix_``."""
        self._scopes.append(prefix)
        try:
            yield
        finally:
            self._scopes.pop()

    def output(self, x: Node) -> Node:
        """Mark ``x`` as the network output (default: the last node added)."""
        self._output = x.name
        return x

    # ----------------------------------------------------------------- queries
    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def __getitem__(self, name: str) -> Node:
        return self._by_name[name]

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    @property
    def input_node(self) -> Node:
        """The (single) ``input`` node."""
        inputs = [n for n in self.nodes if n.op == "input"]
        if len(inputs) != 1:
            raise ValueError(f"{self.name}: expected exactly one input node, found {len(inputs)}")
        return inputs[0]

    @property
    def output_node(self) -> Node:
        """The output node."""
        if not self.nodes:
            raise ValueError(f"{self.name}: empty net")
        return self._by_name[self._output] if self._output else self.nodes[-1]

    @property
    def batch_size(self) -> int:
        """Batch size of the input."""
        return self.input_node.shape[0]

    @property
    def image_size(self) -> tuple[int, int]:
        """Spatial size (H, W) of the input."""
        return tuple(self.input_node.shape[2:4])

    def param_shapes(self) -> dict[str, Shape]:
        """Parameter name to shape, in node order (weight before bias)."""
        return {n.param_name(role): tuple(shape) for n in self.nodes
                for role, shape in n.params.items()}

    def num_params(self) -> int:
        """Total number of scalar parameters."""
        total = 0
        for shape in self.param_shapes().values():
            count = 1
            for dim in shape:
                count *= dim
            total += count
        return total

    def op_counts(self) -> dict[str, int]:
        """Number of nodes per operator kind."""
        counts: dict[str, int] = {}
        for node in self.nodes:
            counts[node.op] = counts.get(node.op, 0) + 1
        return counts

    # ----------------------------------------------------------------- copies
    def to_dict(self) -> dict:
        """Plain-data form (JSON-compatible after tuple-to-list conversion)."""
        return {"name": self.name, "meta": dict(self.meta), "output": self.output_node.name,
                "nodes": [{"name": n.name, "op": n.op, "inputs": list(n.inputs),
                           "attrs": dict(n.attrs), "params": dict(n.params),
                           "shape": list(n.shape)} for n in self.nodes]}

    @classmethod
    def from_dict(cls, data: dict, input_shape: Shape | None = None) -> "Net":
        """Rebuild a net from :meth:`to_dict` output, re-inferring every shape.

        ``input_shape`` replaces the recorded input shape (another batch or image size);
        parameter shapes do not depend on it, which is checked.
        """
        net = cls(data["name"], data.get("meta"))
        for item in data["nodes"]:
            attrs = {k: tuple(v) if isinstance(v, list) else v for k, v in item["attrs"].items()}
            shape = None
            if item["op"] == "input":
                shape = tuple(input_shape or item["shape"])
            net.add_node(item["op"], item["inputs"], attrs,
                         {k: tuple(v) for k, v in item["params"].items()},
                         name=item["name"], shape=shape)
        if data.get("output"):
            net._output = data["output"]
        return net

    def resized(self, image_size: int | tuple[int, int] | None = None,
                batch_size: int | None = None) -> "Net":
        """Copy of this net for another input image size and/or batch size."""
        n, c, h, w = self.input_node.shape
        if image_size is not None:
            h, w = (image_size, image_size) if isinstance(image_size, int) else image_size
        shape = (batch_size or n, c, h, w)
        if shape == self.input_node.shape:
            return self
        try:
            return Net.from_dict(self.to_dict(), input_shape=shape)
        except ValueError as err:
            if "parameter shapes" in str(err):
                raise ValueError(f"{self.name}: parameter shapes depend on the input size; "
                                 f"cannot resize to {shape}: {err}") from err
            raise

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Net) and self.to_dict() == other.to_dict()

    __hash__ = None  # mutable

    def __str__(self) -> str:
        counts = ", ".join(f"{k}={v}" for k, v in sorted(self.op_counts().items()))
        return (f"Net({self.name}, input {self.input_node.shape}, {len(self.nodes)} nodes "
                f"[{counts}], {self.num_params():,} params)")

    __repr__ = __str__
