"""Grouping sub-graphs (Algorithm 2): straight, diamond and branch merges to a fixpoint.

Every layer starts as its own sub-graph (SG, a bitset of layers). A merge is tried only
when the merged SG stays convex (no cycle through outside SGs), has one output tensor and
has a SplitInfo (it can be cut to fit the local buffer). Rule (i) (straight and branch):
the consumer's split factor is not smaller than the producer's and the merged factor is not
larger than the consumer's. Rule (ii) (diamond): the merged factor is not larger than the
largest factor of its parts. Refusals are recorded with the rule that refused them.
"""
from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field

from ..graph.analysis import ancestors, descendants
from ..graph.bitset import ids_of
from ..graph.opgraph import toposort
from .splitinfo import SGContext, best_split

__all__ = ["Grouping", "group_subgraphs", "toposort_sgs"]

logger = logging.getLogger(__name__)


@dataclass
class Grouping:
    """Result of Algorithm 2: SG bitsets in topological order, merges and refusals."""

    sgs: list = field(default_factory=list)
    merges: list = field(default_factory=list)
    refusals: list = field(default_factory=list)
    rounds: int = 0

    def to_dict(self) -> dict:
        """JSON-serialisable dict (bitsets as hex strings)."""
        data = asdict(self)
        data["sgs"] = [hex(m) for m in self.sgs]
        return data


class Grouper:
    def __init__(self, ctx: SGContext):
        self.ctx, self.g = ctx, ctx.lg.graph
        self.anc = [a | 1 << i for i, a in enumerate(ancestors(self.g))]
        self.desc = [d | 1 << i for i, d in enumerate(descendants(self.g))]
        self.sgs = [1 << i for i in range(len(self.g))]
        self.result = Grouping()

    # -- helpers ------------------------------------------------------------------------
    def factor(self, mask: int) -> float:
        best = best_split(self.ctx.split_info(mask))
        return best.factor if best else float("inf")

    def _union(self, table, mask):
        out = 0
        for i in ids_of(mask):
            out |= table[i]
        return out

    def preds(self, mask: int) -> list[int]:
        layers = self._union(self.g.pred, mask) & ~mask
        return [s for s in self.sgs if s & layers]

    def succs(self, mask: int) -> list[int]:
        layers = self._union(self.g.succ, mask) & ~mask
        return [s for s in self.sgs if s & layers]

    def valid(self, merged: int) -> str | None:
        outside = self._union(self.desc, merged) & self._union(self.anc, merged) & ~merged
        if outside:
            return "cycle"
        if len(self.ctx.output_layers(merged)) > 1:
            return "several outputs"
        if not self.ctx.split_info(merged):
            return "no SplitInfo (does not fit the local buffer, or recompute too costly)"
        return None

    def apply(self, parts: list[int], pattern: str, rule: str, ok: bool) -> bool:
        merged = 0
        for p in parts:
            merged |= p
        names = [self.g.names_of(p) for p in parts]
        reason = self.valid(merged) or (None if ok else f"rule {rule}")
        if reason:
            self.result.refusals.append({"pattern": pattern, "parts": names, "reason": reason})
            return False
        self.sgs = [s for s in self.sgs if s not in parts] + [merged]
        self.result.merges.append({"pattern": pattern, "parts": names,
                                   "factor": self.factor(merged)})
        return True

    def rule_i(self, first: int, second: int) -> bool:
        f1, f2 = self.factor(first), self.factor(second)
        return f2 >= f1 and self.factor(first | second) <= f2

    # -- patterns -----------------------------------------------------------------------
    def straight(self) -> bool:
        changed = False
        for b in toposort_sgs(self.g, self.sgs):
            if b not in self.sgs:
                continue
            preds = self.preds(b)
            if len(preds) == 1 and self.succs(preds[0]) == [b]:
                a = preds[0]
                changed |= self.apply([a, b], "straight", "(i)", self.rule_i(a, b))
        return changed

    def diamond(self) -> bool:
        changed = False
        for e in toposort_sgs(self.g, self.sgs):
            if e not in self.sgs or len(self.succs(e)) < 2:
                continue
            for x in toposort_sgs(self.g, self.sgs):
                inner = self._union(self.desc, e) & self._union(self.anc, x) & ~e & ~x
                members = [s for s in self.sgs if s & inner]
                if not inner or x == e or any(s & ~inner for s in members):
                    continue
                if not self._is_diamond(e, x, inner, members):
                    continue
                parts = members + [x]
                ok = self.factor(sum(parts)) <= max(self.factor(p) for p in parts)
                changed |= self.apply(parts, "diamond", "(ii)", ok)
                break
        return changed

    def _is_diamond(self, e, x, inner, members) -> bool:
        allowed_in, allowed_out = inner | e, inner | x
        for s in members:
            if self._union(self.g.pred, s) & ~s & ~allowed_in:
                return False
            if self._union(self.g.succ, s) & ~s & ~allowed_out:
                return False
        if self._union(self.g.pred, x) & ~x & ~(inner | e):
            return False
        return len([s for s in self.succs(e) if s & (inner | x)]) >= 2

    def branch(self) -> bool:
        changed = False
        for x in toposort_sgs(self.g, self.sgs):
            if x not in self.sgs:
                continue
            preds = self.preds(x)
            if len(preds) < 2:
                continue
            for p in preds:
                others = [q for q in preds if q != p and q in self.sgs]
                reach = self._union(self.desc, p)
                if self.succs(p) != [x] or any(reach & q for q in others):
                    continue
                if self.apply([p, x], "branch", "(i)", self.rule_i(p, x)):
                    changed = True
                    break
        return changed


def group_subgraphs(ctx: SGContext, max_rounds: int = 100) -> Grouping:
    """Algorithm 2 on the layer graph of ``ctx``; returns a :class:`Grouping`."""
    grouper = Grouper(ctx)
    for single in grouper.sgs:
        if not ctx.split_info(single):
            grouper.result.refusals.append({"pattern": "layer", "parts": [
                ctx.lg.graph.names_of(single)], "reason": "does not fit the local buffer"})
    for rounds in range(1, max_rounds + 1):
        changed = grouper.straight()
        changed |= grouper.diamond()
        changed |= grouper.branch()
        grouper.result.rounds = rounds
        if not changed:
            break
    grouper.result.sgs = toposort_sgs(ctx.lg.graph, grouper.sgs)
    logger.info("GraphTurbo grouping: %d layers -> %d sub-graphs in %d rounds",
                len(ctx.lg.graph), len(grouper.result.sgs), grouper.result.rounds)
    return grouper.result


def toposort_sgs(graph, sgs: list[int]) -> list[int]:
    """SG bitsets in a topological order of the SG DAG (ties: lowest first layer)."""
    sgs = sorted(sgs, key=lambda m: m & -m)
    owner = {i: k for k, s in enumerate(sgs) for i in ids_of(s)}
    edges = {(owner[u], owner[v]) for u, v in graph.edges if owner[u] != owner[v]}
    try:
        order = toposort(len(sgs), sorted(edges))
    except ValueError as err:
        raise RuntimeError("GraphTurbo grouping produced a cyclic sub-graph DAG") from err
    return [sgs[k] for k in order]
