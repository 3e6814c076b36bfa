"""Memory allocation with reuse and longest-liveness spilling (paper Section 4.3).

Instances run in schedule order. The output of an instance lives from its step to the
step of its last consumer and is then released, its space reused. Before each step the
local buffer must hold the running instance's working set (its peak) plus every tensor
still live in LB; while it does not, the live tensor (not read by this step) with the
longest liveness is spilled to GB, or to DRAM when GB is full. Intermediate tensors inside
an instance stay in LB (the instance was sized for that).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

__all__ = ["Allocation", "allocate"]


@dataclass
class Allocation:
    """Where every instance output lives, and the LB use per step."""

    placement: dict = field(default_factory=dict)   # instance id -> "LB" | "GB" | "DRAM"
    spills: list = field(default_factory=list)      # (step, instance id, to)
    lb_trace: list = field(default_factory=list)    # bytes of LB in use per step
    gb_trace: list = field(default_factory=list)
    spilled_bytes: int = 0
    overflow_steps: int = 0

    @property
    def peak_lb(self) -> int:
        """Largest LB use over the schedule."""
        return max(self.lb_trace, default=0)

    def to_dict(self) -> dict:
        """JSON-serialisable dict."""
        data = asdict(self)
        data["placement"] = {str(k): v for k, v in self.placement.items()}
        return data


def _lifetimes(instances, order) -> dict[int, tuple[int, int]]:
    step = {i: t for t, i in enumerate(order)}
    life = {i: (t, t) for i, t in step.items()}
    for inst in instances:
        for p in inst.preds:
            start, end = life[p]
            life[p] = (start, max(end, step[inst.id]))
    return life


def allocate(instances, order: list[int], scope: dict, lb_capacity: int, gb_capacity: int,
             keep: set | None = None) -> Allocation:
    """Place instance outputs given their scopes; ``keep`` ids live to the end (outputs)."""
    by_id = {inst.id: inst for inst in instances}
    life = _lifetimes(instances, order)
    for i in keep or ():
        life[i] = (life[i][0], len(order))
    alloc = Allocation()
    live_lb: set[int] = set()
    live_gb: set[int] = set()
    for t, i in enumerate(order):
        live_lb = {j for j in live_lb if life[j][1] >= t}
        live_gb = {j for j in live_gb if life[j][1] >= t}
        inputs = set(by_id[i].preds)
        need = by_id[i].peak_bytes + sum(by_id[j].out_bytes for j in live_lb - inputs)
        while need > lb_capacity:
            victims = sorted(live_lb - inputs, key=lambda j: (life[j][1] - life[j][0], j))
            if not victims:
                alloc.overflow_steps += 1
                break
            victim = victims[-1]
            live_lb.discard(victim)
            size = by_id[victim].out_bytes
            gb_used = sum(by_id[j].out_bytes for j in live_gb)
            to = "GB" if gb_used + size <= gb_capacity else "DRAM"
            if to == "GB":
                live_gb.add(victim)
            alloc.placement[victim] = to
            alloc.spills.append((t, victim, to))
            alloc.spilled_bytes += size
            need -= size
        alloc.lb_trace.append(need)
        alloc.gb_trace.append(sum(by_id[j].out_bytes for j in live_gb))
        _place(alloc, by_id[i], scope.get(i, "LB"), live_lb, live_gb, gb_capacity, by_id)
    return alloc


def _place(alloc, inst, scope, live_lb, live_gb, gb_capacity, by_id) -> None:
    if scope == "LB":
        live_lb.add(inst.id)
        alloc.placement[inst.id] = "LB"
        return
    if scope == "GB":
        used = sum(by_id[j].out_bytes for j in live_gb)
        if used + inst.out_bytes <= gb_capacity:
            live_gb.add(inst.id)
            alloc.placement[inst.id] = "GB"
            return
    alloc.placement[inst.id] = "DRAM"
