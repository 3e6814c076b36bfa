"""Core binding and buffer scopes (Algorithm 4) and the data-movement ops they imply.

Visiting the schedule backwards, each instance's output gets a *binding* (cores per
dimension of its output part, factors 8, 4, 2, 1 tried from the outermost dimension) and a
*scope* (LB unless a mismatch forces GB). A consumer's binding is propagated to its
producers along the dimensions they share (batch, H, W; channels only through elementwise
ops); a producer already bound differently is a mismatch: its output goes to GB and the
consumer reads it through a redistribution op (Section 3.5). Consumers reading several
producer instances get a concatenation; LB consumers of GB tensors get a copy.

:func:`bind_veus` is the same algorithm with vEUs (persistent workers of an rProgram) for
cores: each instance is bound to one vEU and its output is kept in that vEU's fast memory
(LB) when every consumer is bound to the same vEU, else written to global memory (GB).
"""
from __future__ import annotations

import math

__all__ = ["plain_binding", "infer_binding", "bind_and_scope", "movement_ops", "bind_veus"]


def plain_binding(extents, cores: int) -> tuple:
    """Greedily give cores to dimensions from the outermost, factors 8, 4, 2, 1."""
    remaining, out = cores, []
    for extent in extents:
        factor = next(f for f in (8, 4, 2, 1) if f <= remaining and extent % f == 0)
        out.append(factor)
        remaining //= factor
    return tuple(out)


def infer_binding(bind: tuple, producer_extents, channel_matches: bool) -> tuple | None:
    """The producer binding implied by a consumer binding, or None when invalid/empty."""
    if len(bind) != len(producer_extents):
        return None
    out = []
    for dim, (factor, extent) in enumerate(zip(bind, producer_extents)):
        if dim == 1 and not channel_matches:
            factor = 1
        if extent % factor:
            return None
        out.append(factor)
    return tuple(out)


def _extents(inst) -> list[int]:
    return [hi - lo for lo, hi in inst.box]


def bind_and_scope(instances, order: list[int], cores: int, channel_matches) -> tuple:
    """Algorithm 4. Returns ``(bind, scope)`` dicts keyed by instance id.

    ``channel_matches(consumer, producer)`` says whether the consumer reads the producer's
    channels one to one (elementwise) rather than reducing over them (convolution).
    """
    by_id = {inst.id: inst for inst in instances}
    bind: dict[int, tuple] = {i: () for i in order}
    scope = {i: "LB" for i in order}
    for i in reversed(order):
        inst = by_id[i]
        if bind[i] == () or scope[i] != "LB":
            bind[i] = plain_binding(_extents(inst), cores)
            for j in inst.preds:
                inferred = infer_binding(bind[i], _extents(by_id[j]), channel_matches(i, j))
                if inferred is None:
                    continue
                if bind[j] == ():
                    bind[j] = inferred
                elif bind[j] != inferred:
                    scope[j] = "GB"
        else:
            plain = plain_binding(_extents(inst), cores)
            bind[i] = bind[i] if math.prod(bind[i]) >= math.prod(plain) else plain
    for inst in instances:
        if inst.fallback:
            scope[inst.id] = "DRAM"
    return bind, scope


def movement_ops(instances, bind: dict, scope: dict, cores: int, channel_matches) -> list:
    """Concatenation, copy and redistribution ops before each consumer instance."""
    by_id = {inst.id: inst for inst in instances}
    ops = []
    for inst in instances:
        by_sg: dict[int, list[int]] = {}
        for j in inst.preds:
            by_sg.setdefault(by_id[j].sg, []).append(j)
        for sg, producers in sorted(by_sg.items()):
            nbytes = sum(by_id[j].out_bytes for j in producers)
            if len(producers) > 1:
                ops.append({"kind": "concat", "consumer": inst.id, "producers": producers,
                            "bytes": nbytes})
            for j in producers:
                if scope[j] != "LB" and scope[inst.id] == "LB":
                    ops.append({"kind": "copy", "consumer": inst.id, "producers": [j],
                                "from": scope[j], "bytes": by_id[j].out_bytes})
                want = infer_binding(bind[inst.id], _extents(by_id[j]),
                                     channel_matches(inst.id, j))
                if want is not None and want != bind[j]:
                    ops.append({"kind": "redistribute", "consumer": inst.id,
                                "producers": [j], "from_binding": list(bind[j]),
                                "to_binding": [min(a, b) for a, b in zip(want, bind[j])],
                                "bytes": by_id[j].out_bytes})
    return ops


def _plain_veu(inst, factor: int, num_veus: int, rot: dict, load: list) -> int:
    """Plain binding on vEUs: the parts of an SG in contiguous blocks over the vEUs (as
    the plain core binding cuts a dimension); an SG with fewer parts than vEUs starts on
    the least loaded vEU."""
    if inst.sg not in rot:
        rot[inst.sg] = 0 if factor >= num_veus else min(range(num_veus), key=load.__getitem__)
    return (rot[inst.sg] + inst.k * num_veus // factor) % num_veus


def bind_veus(instances, order: list[int], num_veus: int,
              work: dict | None = None) -> tuple[dict, dict]:
    """Algorithm 4 with vEUs for cores: ``(veu, scope)`` dicts keyed by instance id.

    Visiting the order backwards, an instance with no inferred vEU, or whose inferred vEU
    mismatches another consumer's, gets the plain binding. A consumer's vEU is inferred
    for its largest producer that is the only instance of its sub-graph (a chain of
    unsplit sub-graphs stays on one vEU); the parts of a split sub-graph keep their plain
    binding, so that they run in parallel (inheriting one consumer's vEU would put them
    all on it), and the plain binding already lines up the parts of two sub-graphs split
    alike. Scopes are then exact: ``LB`` when every consumer is bound to the producer's
    vEU, ``GB`` when one is not or none exists (the output leaves the program).

    Parameters
    ----------
    instances : list of Instance
        Instances with their producers (``preds``).
    order : list of int
        The chosen schedule order (instance ids).
    num_veus : int
        vEUs to bind to.
    work : dict, optional
        Instance id -> time, for the least-loaded choice of SGs with fewer parts than vEUs.
    """
    by_id = {inst.id: inst for inst in instances}
    factor: dict[int, int] = {}
    for inst in instances:
        factor[inst.sg] = factor.get(inst.sg, 0) + 1
    veu: dict[int, int] = {}
    mismatch: set[int] = set()
    rot: dict[int, int] = {}
    load = [0.0] * num_veus
    for i in reversed(order):
        inst = by_id[i]
        if i not in veu or i in mismatch:
            veu[i] = _plain_veu(inst, factor[inst.sg], num_veus, rot, load)
        load[veu[i]] += (work or {}).get(i, 1.0)
        single = [j for j in inst.preds if factor[by_id[j].sg] == 1]
        main = max(single, key=lambda j: (by_id[j].out_bytes, -j), default=None)
        for j in inst.preds:
            if j not in veu and j == main:
                veu[j] = veu[i]
            elif j in veu and veu[j] != veu[i]:
                mismatch.add(j)
    consumers: dict[int, list[int]] = {i: [] for i in order}
    for inst in instances:
        for j in inst.preds:
            consumers[j].append(inst.id)
    scope = {i: "LB" if consumers[i] and all(veu[c] == veu[i] for c in consumers[i])
             else "GB" for i in order}
    return veu, scope
