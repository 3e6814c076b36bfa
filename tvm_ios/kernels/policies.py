"""Policies that turn an op graph into rPrograms: Rammer's wavefront and an IOS-stage policy.

* :func:`wavefront_policy` is Rammer's Algorithm 1: ops in breadth-first waves; a wave joins
  the current rProgram when the simulator says that is faster than a new one; per wave the
  *fastest* rKernels are taken while their rTasks fit the vEUs, otherwise the *most
  efficient* ones when they simulate faster; each rTask goes to the vEU that can start it
  earliest, after a barrier on its predecessors' rTasks.
* :func:`ios_policy` makes one rProgram per multi-group stage of an IOS schedule: each group
  gets a disjoint set of vEUs sized by its work; barriers appear only where data flows
  (between ops of one group spread over several vEUs). With ``balance`` (CPU only) it also
  tries a *balanced* plan (:func:`balanced_plan`), where an op dominating the stage is cut
  into slices over all vEUs, and keeps whichever the simulator finishes first.

Both return plain :class:`~tvm_ios.kernels.rprogram.RProgram` data; the simulator checks them.
"""
from __future__ import annotations

import heapq
import logging
from typing import Sequence

from ..graph.opgraph import OpGraph
from ..schedule.schedule import Schedule
from .roperator import SLICES, RKernel, ROperator
from .rprogram import RProgram, RTask
from .vdevice import VDevice

__all__ = ["wavefront_policy", "ios_policy", "balanced_plan", "resident_veus", "waves"]

logger = logging.getLogger(__name__)


def resident_veus(vdevice: VDevice, rops: Sequence[ROperator]) -> int:
    """vEUs that stay resident for the most demanding rTask among ``rops``' kernels."""
    kernels = [k for r in rops for k in r.kernels] or [RKernel("none", 1, 1)]
    threads = max(k.threads for k in kernels)
    regs = max(k.registers for k in kernels)
    smem = max(k.shared_bytes for k in kernels)
    return vdevice.max_veus(threads, regs, smem)


class ProgramBuilder:
    """Places rTasks on vEUs, inserting only the barriers each vEU still needs."""

    def __init__(self, num_veus: int, name: str):
        self.program = RProgram(num_veus, name=name)
        self.free = [0.0] * num_veus
        self.finish: dict[tuple[int, int], float] = {}
        self.known = [dict() for _ in range(num_veus)]  # vEU -> {other vEU: step seen}
        self.where: dict[str, list[tuple[int, int]]] = {}

    def place(self, op: str, kernel: RKernel, veus: Sequence[int], preds: Sequence[str]):
        deps = [pos for p in preds for pos in self.where.get(p, [])]
        ready = max([self.finish[d] for d in deps], default=0.0)
        latest: dict[int, int] = {}  # vEU -> the last of its entries the op waits for
        for u, k in deps:
            latest[u] = max(latest.get(u, -1), k)
        self.where[op] = []
        # the vEU that can start first (lowest index on ties); only the chosen vEU's key
        # changes, and only upwards, so a heap gives the same choices as a scan
        heap = [(max(self.free[v], ready), v) for v in veus]
        heapq.heapify(heap)
        waited = set()  # vEUs past the op's barrier: one is enough (what it knows only grows)
        for r in range(kernel.num_tasks):
            _, veu = heapq.heappop(heap)
            if veu not in waited:
                self._barrier(veu, latest)
                waited.add(veu)
            pos = self.program.append(RTask(op, r, duration_us=kernel.task_us,
                                            kernel=kernel.name), veu)
            self.free[veu] += kernel.task_us
            self.finish[pos] = self.free[veu]
            self.where[op].append(pos)
            heapq.heappush(heap, (max(self.free[veu], ready), veu))

    @property
    def makespan_us(self) -> float:
        """When the last vEU finishes: what :func:`~tvm_ios.kernels.interpreter.simulate`
        gives the program (the builder keeps each entry's finish as the simulator does)."""
        return max(self.free, default=0.0)

    def copy(self) -> "ProgramBuilder":
        """An independent copy (rTasks are immutable and shared)."""
        other = ProgramBuilder.__new__(ProgramBuilder)
        other.program = RProgram(self.program.num_veus, [list(t) for t in self.program.prog],
                                 self.program.name, dict(self.program.meta))
        other.free, other.finish = list(self.free), dict(self.finish)
        other.known = [dict(k) for k in self.known]
        other.where = {op: list(pos) for op, pos in self.where.items()}
        return other

    def _barrier(self, veu: int, latest: dict) -> None:
        """A barrier-rTask on ``veu`` for the entries of ``latest`` (vEU -> last awaited
        entry) it has not already waited for."""
        need = {u: k + 1 for u, k in latest.items()
                if u != veu and self.known[veu].get(u, 0) < k + 1}
        if not need:
            return
        self.program.wait(veu, [(u, s - 1) for u, s in need.items()])
        start = max([self.free[veu]] + [self.finish[(u, s - 1)] for u, s in need.items()])
        self.free[veu] = start
        self.finish[(veu, len(self.program.prog[veu]) - 1)] = start
        self.known[veu].update(need)


def waves(graph: OpGraph) -> list[list[int]]:
    """Breadth-first fringes: wave of an op = 1 + the latest wave of its predecessors."""
    level = [0] * len(graph)
    for v in range(len(graph)):
        level[v] = 1 + max((level[u] for u in range(v) if graph.pred[v] >> u & 1), default=-1)
    out: list[list[int]] = [[] for _ in range(max(level, default=-1) + 1)]
    for v, lv in enumerate(level):
        out[lv].append(v)
    return out


def _time(builder: ProgramBuilder | None, launch_us: float) -> float:
    if builder is None or not any(builder.program.prog):
        return 0.0
    return builder.makespan_us + launch_us


def _schedule_wave(graph, wave, builder: ProgramBuilder, rops, num_veus, launch_us) -> ProgramBuilder:
    """ScheduleWave with SelectRKernels: fastest kernels unless efficient ones simulate faster."""
    fast = {v: rops[graph.nodes[v].name].fastest(num_veus) for v in wave}
    choices = [fast]
    if sum(k.num_tasks for k in fast.values()) > num_veus:
        choices.append({v: rops[graph.nodes[v].name].most_efficient() for v in wave})
    best = None
    for kernels in choices:
        trial = builder.copy()
        for v in wave:
            preds = graph.names_of(graph.pred[v])
            trial.place(graph.nodes[v].name, kernels[v], range(num_veus), preds)
        if best is None or _time(trial, launch_us) < _time(best, launch_us):
            best = trial
    return best


def wavefront_policy(graph: OpGraph, rops: dict[str, ROperator], vdevice: VDevice,
                     num_veus: int | None = None, launch_us: float = 3.0,
                     name: str = "wavefront", max_ops: int | None = None) -> list[RProgram]:
    """Rammer's Algorithm 1; returns the rPrograms in execution order.

    Parameters
    ----------
    graph : OpGraph
        The op graph.
    rops : dict
        rOperator of every op name.
    vdevice : VDevice
        Gives the number of resident vEUs (``num_veus`` overrides it and is checked).
    launch_us : float
        Cost of one more kernel (what keeping a wave in the current rProgram saves).
    max_ops : int, optional
        Start a new rProgram rather than let one grow past this many ops (a whole NASNet
        in one kernel is more code than a compiler digests in reasonable time).
    """
    requested = num_veus
    num_veus = _veus(vdevice, list(rops.values()), num_veus, name)
    if requested is None:  # no more vEUs than the widest wave has rTasks
        widest = max((sum(max(k.num_tasks for k in rops[graph.nodes[v].name].kernels)
                          for v in wave) for wave in waves(graph)), default=1)
        num_veus = max(1, min(num_veus, widest))
    plans: list[ProgramBuilder] = []
    current: ProgramBuilder | None = None
    for wave in waves(graph):
        if current is None:
            current = _schedule_wave(graph, wave, ProgramBuilder(num_veus, name), rops, num_veus,
                                     launch_us)
            continue
        alone = _schedule_wave(graph, wave, ProgramBuilder(num_veus, name), rops, num_veus,
                               launch_us)
        if max_ops is not None and len(current.where) + len(wave) > max_ops:
            plans.append(current)
            current = alone
            continue
        joined = _schedule_wave(graph, wave, current, rops, num_veus, launch_us)
        if _time(joined, launch_us) <= _time(current, launch_us) + _time(alone, launch_us):
            current = joined
        else:
            plans.append(current)
            current = alone
    if current is not None:
        plans.append(current)
    programs = []
    for i, builder in enumerate(plans):
        program = builder.program
        program.name = f"{name}_{i}"
        program.meta.update(policy="wavefront", vdevice=vdevice.name)
        programs.append(program)
    return programs


def _veus(vdevice: VDevice, rops: list, requested: int | None, what: str) -> int:
    limit = resident_veus(vdevice, rops)
    if requested is None:
        return limit
    kernels = [k for r in rops for k in r.kernels] or [RKernel("none", 1, 1)]
    vdevice.check(requested, max(k.threads for k in kernels),
                  max(k.registers for k in kernels), max(k.shared_bytes for k in kernels),
                  what=f"rProgram {what!r}")
    return requested


def _split_veus(num_veus: int, works: list[float]) -> list[list[int]]:
    """Disjoint vEU sets, one per group, sized by work (at least one each)."""
    groups = len(works)
    if groups > num_veus:  # more groups than vEUs: independent groups share vEUs in turn
        return [[g % num_veus] for g in range(groups)]
    sizes = [1] * groups
    total = sum(works) or 1.0
    for _ in range(num_veus - groups):
        g = max(range(groups), key=lambda i: works[i] / total / sizes[i])
        sizes[g] += 1
    sets, start = [], 0
    for size in sizes:
        sets.append(list(range(start, start + size)))
        start += size
    return sets


def _ranks(graph: OpGraph, ops: Sequence[str], rops) -> dict[str, float]:
    """Each op's longest path (serial time) to the end of the stage, itself included."""
    rank: dict[str, float] = {}
    for op in sorted(ops, key=graph.index.get, reverse=True):
        after = [rank[s] for s in graph.names_of(graph.succ[graph.index[op]]) if s in rank]
        rank[op] = rops[op].fastest(1).task_us + max(after, default=0.0)
    return rank


def _finish(builder: ProgramBuilder, op: str) -> float:
    return max(builder.finish[pos] for pos in builder.where[op])


def balanced_plan(graph: OpGraph, ops: Sequence[str], rops: dict[str, ROperator],
                  num_veus: int, name: str) -> ProgramBuilder:
    """The stage's ops placed over all vEUs, longest path first (HEFT): each op goes whole to
    the vEU where it finishes first, or, where its rOperator has a :data:`SLICES` rKernel and
    that finishes earlier, as one slice per vEU. Ties keep the op whole."""
    rank = _ranks(graph, ops, rops)
    builder = ProgramBuilder(num_veus, name)
    for op in sorted(ops, key=lambda o: (-rank[o], graph.index[o])):
        preds = [p for p in graph.names_of(graph.pred[graph.index[op]]) if p in rank]
        options = [(rops[op].fastest(1), [v]) for v in range(num_veus)]
        options += [(k, list(range(num_veus))) for k in rops[op].kernels if k.name == SLICES]
        best = None
        for kernel, veus in options:
            trial = builder.copy()
            trial.place(op, kernel, veus, preds)
            if best is None or _finish(trial, op) < _finish(best, op):
                best = trial
        builder = best
    return builder


def ios_policy(graph: OpGraph, schedule: Schedule, rops: dict[str, ROperator],
               vdevice: VDevice, num_veus: int | None = None, name: str = "ios",
               balance: bool = False) -> list[tuple[int, RProgram]]:
    """One rProgram per concurrent stage with two or more groups: ``(stage index, program)``;
    with ``balance``, on a CPU, the balanced plan where it simulates faster."""
    out = []
    for si, stage in enumerate(schedule.stages):
        if stage.strategy != "concurrent" or len(stage.groups) < 2:
            continue
        stage_rops = [rops[op] for op in stage.ops]
        veus = _veus(vdevice, stage_rops, num_veus, f"{name}_stage{si}")
        if num_veus is None:  # no more vEUs than the stage has rTasks to give them
            veus = max(len(stage.groups) if len(stage.groups) <= veus else 1,
                       min(veus, sum(max(k.num_tasks for k in r.kernels) for r in stage_rops)))
        works = [sum(rops[op].most_efficient().work_us for op in g) for g in stage.groups]
        sets = _split_veus(veus, works)
        builder = _disjoint_plan(graph, stage, rops, sets, veus, f"{name}_stage{si}")
        placement = "groups"
        if balance and vdevice.kind == "cpu" and veus > 1:
            balanced = balanced_plan(graph, stage.ops, rops, veus, f"{name}_stage{si}")
            if _time(balanced, 0.0) < _time(builder, 0.0):
                builder, placement = balanced, "balanced"
        program = builder.program
        program.meta.update(policy="ios", stage=si, vdevice=vdevice.name, placement=placement,
                            groups=[list(g) for g in stage.groups], veu_sets=sets)
        out.append((si, program))
    return out


def _disjoint_plan(graph, stage, rops, sets, veus: int, name: str) -> ProgramBuilder:
    """Each group on its own vEU set, its ops in order."""
    builder = ProgramBuilder(veus, name)
    in_stage = set(stage.ops)
    for group, veu_set in zip(stage.groups, sets):
        for op in group:
            preds = [p for p in graph.names_of(graph.pred[graph.index[op]]) if p in in_stage]
            builder.place(op, rops[op].fastest(len(veu_set)), veu_set, preds)
    return builder
