"""The operator graph: the schedulable units of a model and the data flowing between them.

An :class:`OpGraph` is plain data. Each :class:`OpNode` is one schedulable unit (a fused
conv+bias+relu, a pool, a separable conv, a matmul, ...); ``edges`` say which unit reads
which unit's output. Free ops (concat, reshape, split, residual adds) are not units: their
data flow is folded into the edges, and the points where they join branches are kept as
*junctions* so blocks can be cut there (see :mod:`tvm_ios.graph.blocks`).

Sets of nodes are Python ints used as bitsets (bit ``i`` is node ``i``); that is what the
scheduler memoises over.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from .bitset import ids_of

__all__ = ["OpNode", "OpGraph"]


@dataclass
class OpNode:
    """One schedulable unit.

    Parameters
    ----------
    name : str
        Unique name (the Relax variable bound to the unit's output, or a user-given name).
    kind : str
        ``"conv2d"``, ``"sepconv"``, ``"pool"``, ``"matmul"``, ``"elementwise"`` or the op
        name of an op the extractor does not know.
    shape : tuple of int
        Output shape.
    dtype : str
        Output element type.
    flops : int
        Floating-point operations of one execution.
    bytes : int
        Bytes read and written (inputs, weights, output).
    schedulable : bool
        False for ops the extractor does not know: they always run alone, in order.
    attrs : dict
        Kind-specific facts, e.g. for a conv: ``input`` (name of the tensor it reads),
        ``kernel``, ``strides``, ``padding``, ``dilation``, ``groups``, ``channels``,
        ``epilogue`` (list of op names fused after it).
    """

    name: str
    kind: str = "op"
    shape: tuple = ()
    dtype: str = "float32"
    flops: int = 0
    bytes: int = 0
    schedulable: bool = True
    attrs: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """Return a JSON-serialisable dict."""
        return {"name": self.name, "kind": self.kind, "shape": list(self.shape),
                "dtype": self.dtype, "flops": int(self.flops), "bytes": int(self.bytes),
                "schedulable": self.schedulable, "attrs": self.attrs}

    @classmethod
    def from_dict(cls, data: dict) -> "OpNode":
        """Inverse of :meth:`to_dict`."""
        return cls(name=data["name"], kind=data.get("kind", "op"),
                   shape=tuple(data.get("shape", ())), dtype=data.get("dtype", "float32"),
                   flops=int(data.get("flops", 0)), bytes=int(data.get("bytes", 0)),
                   schedulable=bool(data.get("schedulable", True)),
                   attrs=dict(data.get("attrs", {})))


class OpGraph:
    """A DAG of schedulable units with bitset adjacency.

    Parameters
    ----------
    nodes : sequence of OpNode
        The units, in a topological order (every edge goes from a lower to a higher index).
    edges : iterable of (int, int)
        Data dependencies ``(producer, consumer)``.
    junctions : iterable of int, optional
        Bitsets of units: each is the set of ancestors of a point where free ops join
        branches (a concat feeding several units). Blocks may be cut there.
    name : str, optional
        A label (the model name) for printing.
    """

    def __init__(self, nodes: Sequence[OpNode], edges: Iterable[tuple[int, int]],
                 junctions: Iterable[int] = (), name: str = "graph"):
        self.nodes = list(nodes)
        self.name = name
        n = len(self.nodes)
        self.edges = sorted({(int(u), int(v)) for u, v in edges})
        self.succ = [0] * n
        self.pred = [0] * n
        for u, v in self.edges:
            if not (0 <= u < n and 0 <= v < n) or u == v:
                raise ValueError(f"OpGraph: edge ({u}, {v}) is out of range for {n} nodes")
            if u > v:
                raise ValueError(f"OpGraph: edge ({u}, {v}) goes backwards; nodes must be "
                                 "in topological order")
            self.succ[u] |= 1 << v
            self.pred[v] |= 1 << u
        self.junctions = sorted(set(int(j) for j in junctions if j))
        names = [node.name for node in self.nodes]
        if len(set(names)) != n:
            raise ValueError("OpGraph: node names must be unique")
        self.index = {name_: i for i, name_ in enumerate(names)}

    # -- construction -------------------------------------------------------------------
    @classmethod
    def from_edges(cls, num_ops: int, edges: Iterable[tuple[int, int]],
                   names: Sequence[str] | None = None, **node_attrs: Any) -> "OpGraph":
        """Build a graph of ``num_ops`` plain ops from an edge list.

        Nodes may be given in any order consistent with a DAG; they are renumbered
        topologically (stable) and a cycle raises ``ValueError``.

        Parameters
        ----------
        num_ops : int
            Number of nodes.
        edges : iterable of (int, int)
            Dependencies between node ids ``0..num_ops-1``.
        names : sequence of str, optional
            Node names (default ``"op0"``, ``"op1"``, ...).
        **node_attrs
            Passed to every :class:`OpNode` (e.g. ``kind="conv2d"``).
        """
        names = list(names) if names is not None else [f"op{i}" for i in range(num_ops)]
        if len(names) != num_ops:
            raise ValueError(f"OpGraph.from_edges: {len(names)} names for {num_ops} ops")
        edges = [(int(u), int(v)) for u, v in edges]
        order = _toposort(num_ops, edges)
        pos = {old: new for new, old in enumerate(order)}
        nodes = [OpNode(name=names[old], **node_attrs) for old in order]
        return cls(nodes, [(pos[u], pos[v]) for u, v in edges])

    @classmethod
    def from_relax(cls, mod_or_func: Any, func_name: str = "main") -> "OpGraph":
        """Extract the op graph of a Relax function (or of ``mod[func_name]``).

        Units are fused conv(+bias+relu), separable convs, pools and matmuls; free ops
        (concat, split, reshape, residual adds) only carry edges; unknown ops become
        unschedulable units, with a warning. See :mod:`tvm_ios.graph.extract`.
        """
        from .extract import extract

        func = mod_or_func[func_name] if hasattr(mod_or_func, "functions") else mod_or_func
        return extract(func, name=func_name).graph

    # -- basic queries ------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.nodes)

    @property
    def all_mask(self) -> int:
        """Bitset of every node."""
        return (1 << len(self.nodes)) - 1

    def names_of(self, mask_or_ids: int | Iterable[int]) -> list[str]:
        """Names of the nodes in a bitset or id list, in index order."""
        return [self.nodes[i].name for i in ids_of(mask_or_ids)]

    def fingerprint(self) -> str:
        """A short hash of names, kinds, shapes and edges: a schedule is stale when it changes."""
        payload = json.dumps([[n.name, n.kind, list(n.shape)] for n in self.nodes]
                             + [list(e) for e in self.edges])
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    def subgraph(self, mask: int, name: str | None = None) -> "OpGraph":
        """The induced subgraph on a bitset of nodes (renumbered, order kept)."""
        ids = ids_of(mask)
        pos = {old: new for new, old in enumerate(ids)}
        edges = [(pos[u], pos[v]) for u, v in self.edges if u in pos and v in pos]
        return OpGraph([self.nodes[i] for i in ids], edges, name=name or self.name)

    # -- serialisation ------------------------------------------------------------------
    def to_json(self) -> str:
        """Serialise to a JSON string."""
        return json.dumps({"name": self.name, "nodes": [n.to_dict() for n in self.nodes],
                           "edges": [list(e) for e in self.edges],
                           "junctions": [hex(j) for j in self.junctions]})

    @classmethod
    def from_json(cls, text: str) -> "OpGraph":
        """Inverse of :meth:`to_json`."""
        data = json.loads(text)
        return cls([OpNode.from_dict(d) for d in data["nodes"]],
                   [tuple(e) for e in data["edges"]],
                   junctions=[int(j, 16) for j in data.get("junctions", [])],
                   name=data.get("name", "graph"))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OpGraph) and self.to_json() == other.to_json()

    def __str__(self) -> str:
        lines = [f"OpGraph {self.name}: {len(self.nodes)} ops, {len(self.edges)} edges"]
        for i, node in enumerate(self.nodes):
            preds = ", ".join(self.names_of(self.pred[i])) or "-"
            lines.append(f"  [{i}] {node.name} ({node.kind} {list(node.shape)}) <- {preds}")
        return "\n".join(lines)

    __repr__ = __str__


def _toposort(num_ops: int, edges: list[tuple[int, int]]) -> list[int]:
    """Stable Kahn topological sort; raises on cycles or out-of-range ids."""
    indeg = [0] * num_ops
    succs: list[list[int]] = [[] for _ in range(num_ops)]
    for u, v in edges:
        if not (0 <= u < num_ops and 0 <= v < num_ops):
            raise ValueError(f"OpGraph.from_edges: edge ({u}, {v}) out of range 0..{num_ops - 1}")
        succs[u].append(v)
        indeg[v] += 1
    ready = [i for i in range(num_ops) if indeg[i] == 0]
    order = []
    while ready:
        ready.sort()
        node = ready.pop(0)
        order.append(node)
        for v in succs[node]:
            indeg[v] -= 1
            if indeg[v] == 0:
                ready.append(v)
    if len(order) != num_ops:
        raise ValueError("OpGraph.from_edges: the edges contain a cycle")
    return order
