"""Splitting sub-graphs into instances, with redundant-edge elimination (paper Section 3.3).

Each SG is cut along its best split (Equation 1) into ``factor`` instances, one per equal
part of its output tensor. Edges between instances are inherited from the SG edges
(every producer instance to every consumer instance) and an inherited edge is eliminated
when the producer instance's part of the tensor is not read by the consumer instance.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .layers import GraphTurboError
from .tensor_regions import box_bytes, intersect
from .splitinfo import SGContext, best_split, partition

__all__ = ["Instance", "Split", "split_instances"]


@dataclass
class Instance:
    """One instance: part ``k`` of SG ``sg``, producing ``box`` of the SG's output."""

    id: int
    sg: int
    k: int
    box: tuple
    out_bytes: int
    peak_bytes: int
    preds: list = field(default_factory=list)
    fallback: bool = False

    @property
    def label(self) -> str:
        """``sg3.1``: SG 3, instance 1."""
        return f"sg{self.sg}.{self.k}"

    def to_dict(self) -> dict:
        """JSON-serialisable dict."""
        data = asdict(self)
        data["box"] = [list(b) for b in self.box]
        return data


@dataclass
class Split:
    """Instances of every SG, the SG split chosen, and the edge counts."""

    instances: list = field(default_factory=list)
    splits: list = field(default_factory=list)     # per SG: {"dim", "factor", "info"}
    inherited_edges: int = 0
    kept_edges: int = 0

    def of_sg(self, sg: int) -> list:
        """Instances of one SG, in part order."""
        return [inst for inst in self.instances if inst.sg == sg]

    def to_dict(self) -> dict:
        """JSON-serialisable dict."""
        return {"instances": [i.to_dict() for i in self.instances], "splits": self.splits,
                "inherited_edges": self.inherited_edges, "kept_edges": self.kept_edges}


def split_instances(ctx: SGContext, sgs: list[int], oversize: str = "error") -> Split:
    """Cut each SG (bitsets in topological order) into instances and link them.

    ``oversize="error"`` raises :class:`GraphTurboError` for an SG that cannot fit the local
    buffer at any split; ``"fallback"`` keeps it whole as a per-layer SG whose tensors live
    in DRAM.
    """
    g, out = ctx.lg.graph, Split()
    owner = {ctx.lg.bindings[ctx.output_layer(m)][-1]: s for s, m in enumerate(sgs)}
    for s, mask in enumerate(sgs):
        best = best_split(ctx.split_info(mask))
        layer = ctx.output_layer(mask)
        shape = g.nodes[layer].shape
        if best is None:
            if oversize != "fallback":
                raise GraphTurboError(
                    f"GraphTurbo: layer(s) {g.names_of(mask)} need {ctx.peak(mask)} bytes of "
                    f"activations and cannot be split to fit the local buffer of "
                    f"{ctx.hw.name} ({ctx.hw.local_capacity} bytes = {ctx.hw.cores} cores x "
                    f"{ctx.hw.lb_bytes} B); use oversize='fallback' to keep them per layer "
                    "in DRAM")
            dim, factor = 0, 1
        else:
            dim, factor = best.dim, best.factor
        out.splits.append({"dim": dim, "factor": factor, "fallback": best is None,
                           "info": [e.to_dict() for e in ctx.split_info(mask)]})
        for k, box in enumerate(partition(shape, dim, factor)):
            out.instances.append(Instance(len(out.instances), s, k, box,
                                          box_bytes(box, ctx.itemsize), ctx.peak(mask, box),
                                          fallback=best is None))
    _link(ctx, sgs, owner, out)
    return out


def _link(ctx: SGContext, sgs: list[int], owner: dict, out: Split) -> None:
    for inst in out.instances:
        _, ext = ctx.regions(sgs[inst.sg], inst.box)
        for src, need in ext.items():
            if not src.startswith("%"):
                continue
            producer = owner.get(int(src[1:]))
            if producer is None:
                raise RuntimeError(f"GraphTurbo: {src} is read across SGs but is no SG output")
            parts = out.of_sg(producer)
            out.inherited_edges += len(parts)
            for part in parts:
                if intersect(part.box, need) is not None:
                    inst.preds.append(part.id)
                    out.kept_edges += 1
        inst.preds.sort()
