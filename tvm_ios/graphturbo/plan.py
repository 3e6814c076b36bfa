"""The whole GraphTurbo schedule of one layer graph, as plain data.

:func:`plan_graph` runs grouping (Algorithm 2), splitting with redundant-edge elimination,
both orders (BFS and Algorithm 3's DFS, keeping the one that spills fewer bytes out of LB,
then the lower LB peak), core binding and scopes (Algorithm 4), the data-movement ops and
memory allocation, and counts where tensors live beside a per-layer (TVM-style) baseline
that writes every layer's output to DRAM (the paper's Table 3).
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

from ..graph.bitset import ids_of
from .binding import bind_and_scope, movement_ops
from .grouping import Grouping, group_subgraphs, toposort_sgs
from .hwspec import HardwareSpec, get_hw
from .instances import split_instances
from .layers import GraphTurboError, LayerGraph
from .memory import allocate
from .ordering import bfs_order, dfs_order
from .splitinfo import SGContext

__all__ = ["Plan", "plan_graph", "GraphTurboError"]

logger = logging.getLogger(__name__)


@dataclass
class Plan:
    """A GraphTurbo schedule: SGs, instances, order, bindings, scopes and figures."""

    model: str
    hw: dict
    sgs: list = field(default_factory=list)
    grouping: dict = field(default_factory=dict)
    split: dict = field(default_factory=dict)
    orders: dict = field(default_factory=dict)
    chosen: str = "dfs"
    order: list = field(default_factory=list)
    bind: dict = field(default_factory=dict)
    scope: dict = field(default_factory=dict)
    movements: list = field(default_factory=list)
    allocation: dict = field(default_factory=dict)
    figures: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-serialisable dict."""
        return dict(self.__dict__)

    def to_json(self) -> str:
        """JSON text."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, text: str) -> "Plan":
        """Inverse of :meth:`to_json`."""
        return cls(**json.loads(text))

    def __str__(self) -> str:
        f = self.figures
        lines = [f"GraphTurbo plan of {self.model} on {self.hw['name']}: {len(self.sgs)} "
                 f"sub-graphs, {len(self.order)} instances, order {self.chosen}"]
        for s, sg in enumerate(self.sgs):
            lines.append(f"  sg{s}: {len(sg['layers'])} layers, split dim {sg['dim']} x "
                         f"{sg['factor']}  [{sg['layers'][0]} .. {sg['layers'][-1]}]")
        for key in ("per_layer", "graphturbo"):
            lines.append(f"  {key}: DRAM {f[key]['dram']}  GB {f[key]['gb']}  LB {f[key]['lb']}"
                         f"  off-core {f[key]['offcore_bytes'] / 1e6:.2f} MB")
        return "\n".join(lines)


def _channel_matches(ctx: SGContext, sgs: list[int], instances):
    """channel_matches(consumer id, producer id) for Algorithm 4."""
    by_id = {inst.id: inst for inst in instances}
    cache: dict = {}

    def matches(i: int, j: int) -> bool:
        key = (by_id[i].sg, by_id[j].sg)
        if key not in cache:
            src = f"%{ctx.lg.bindings[ctx.output_layer(sgs[key[1]])][-1]}"
            rules = {ctx.lg.infos[b].rule for b in ctx.bindings(sgs[key[0]])
                     for _, s, _ in ctx.lg.infos[b].args if s == src}
            cache[key] = rules == {"map"}
        return cache[key]
    return matches


def plan_graph(lg: LayerGraph, hw: str | HardwareSpec, order: str = "auto",
               oversize: str = "error", sgs: list[int] | None = None) -> Plan:
    """Schedule a layer graph for ``hw``.

    Parameters
    ----------
    lg : LayerGraph
        The layers of the function.
    hw : str or HardwareSpec
        Target.
    order : {"auto", "bfs", "dfs"}
        Instance order; ``auto`` keeps the one that spills less (then has the lower LB peak).
    oversize : {"error", "fallback"}
        A layer that cannot fit the local buffer: raise, or keep it whole in DRAM.
    sgs : list of int, optional
        Sub-graphs (layer bitsets) decided earlier; default: run Algorithm 2.
    """
    hw = get_hw(hw)
    ctx = SGContext(lg, hw)
    grouping = group_subgraphs(ctx) if sgs is None else Grouping(
        sgs=toposort_sgs(lg.graph, sgs))
    sgs = grouping.sgs
    split = split_instances(ctx, sgs, oversize=oversize)
    insts = split.instances
    matches = _channel_matches(ctx, sgs, insts)
    outputs = {inst.id for inst in insts if ctx.output_layer(sgs[inst.sg]) in lg.outputs}
    evaluated = {}
    for name, fn in (("bfs", bfs_order), ("dfs", dfs_order)):
        seq = fn(insts)
        bind, scope = bind_and_scope(insts, seq, hw.cores, matches)
        alloc = allocate(insts, seq, scope, hw.local_capacity, hw.gb_bytes, outputs)
        evaluated[name] = (seq, bind, scope, alloc)
    if order == "auto":
        chosen = min(evaluated, key=lambda k: (evaluated[k][3].spilled_bytes,
                                               evaluated[k][3].peak_lb, k))
    elif order in evaluated:
        chosen = order
    else:
        raise ValueError(f"GraphTurbo: order must be auto, bfs or dfs, not {order!r}")
    seq, bind, scope, alloc = evaluated[chosen]
    moves = movement_ops(insts, bind, scope, hw.cores, matches)
    plan = Plan(lg.graph.name, hw.to_dict(), chosen=chosen, order=seq)
    plan.sgs = [{"layers": lg.graph.names_of(m), "dim": sp["dim"], "factor": sp["factor"],
                 "fallback": sp["fallback"], "split_info": sp["info"]}
                for m, sp in zip(sgs, split.splits)]
    plan.grouping = {"merges": grouping.merges, "refusals": grouping.refusals,
                     "recompute_refusals": ctx.refusals, "rounds": grouping.rounds}
    plan.split = {"instances": [i.to_dict() for i in insts],
                  "inherited_edges": split.inherited_edges, "kept_edges": split.kept_edges}
    plan.orders = {k: {"order": v[0], "spilled_bytes": v[3].spilled_bytes,
                       "peak_lb": v[3].peak_lb, "lb_trace": v[3].lb_trace}
                   for k, v in evaluated.items()}
    plan.bind = {str(k): list(v) for k, v in bind.items()}
    plan.scope = {str(k): v for k, v in scope.items()}
    plan.movements = moves
    plan.allocation = alloc.to_dict()
    plan.figures = _figures(ctx, sgs, insts, alloc, moves, outputs)
    logger.info("%s", str(plan).splitlines()[0])
    return plan


def _figures(ctx, sgs, insts, alloc, moves, outputs) -> dict:
    g = ctx.lg.graph
    cons = [len(ids_of(g.succ[k])) for k in range(len(g))]
    base_bytes = ctx.lg.input_bytes + sum(g.nodes[k].bytes * (1 + cons[k]) for k in range(len(g)))
    readers: dict[int, int] = {}
    for inst in insts:
        for p in inst.preds:
            readers[p] = readers.get(p, 0) + 1
    place = alloc.placement
    out_sgs = {insts[i].sg for i in outputs}
    off = ctx.lg.input_bytes + sum(g.nodes[ctx.output_layer(sgs[s])].bytes for s in out_sgs)
    off += sum(i.out_bytes * (1 + readers.get(i.id, 0)) for i in insts
               if place.get(i.id, "LB") != "LB")
    inner = sum(len(ids_of(sgs[i.sg])) - 1 for i in insts)
    counts = {lvl: sum(1 for i in insts if place.get(i.id) == lvl) for lvl in ("LB", "GB", "DRAM")}
    n_out = len(out_sgs)
    return {
        "layers": len(g), "sgs": len(sgs), "instances": len(insts),
        "per_layer": {"dram": len(g), "gb": 0, "lb": 0, "offcore_bytes": int(base_bytes),
                      "kernels": len(g)},
        "graphturbo": {"dram": counts["DRAM"] + n_out, "gb": counts["GB"],
                       "lb": counts["LB"] + inner, "offcore_bytes": int(off),
                       "kernels": len(insts)},
        "movement_ops": {k: sum(1 for m in moves if m["kind"] == k)
                         for k in ("concat", "copy", "redistribute")},
        "peak_lb": alloc.peak_lb, "lb_capacity": ctx.hw.local_capacity,
    }
