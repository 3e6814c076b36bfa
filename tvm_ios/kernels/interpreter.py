"""Execute an rProgram's semantics: prove it cannot deadlock, check dependencies, estimate time.

The simulator runs every vEU's list in order with each entry's ``duration_us``: a compute
rTask starts when its vEU is free; a barrier-rTask starts when its vEU is free and every
awaited ``step[v] >= s`` holds, i.e. when entry ``s - 1`` of vEU ``v`` has finished. If no
vEU can make progress while entries remain, the program deadlocks and
:class:`DeadlockError` names the stuck vEUs and what they wait for.

Dependencies are checked on the happens-before order (vector clocks), not on the
simulated times, so a dependency that holds only by luck of the timing is still reported.
"""
from __future__ import annotations

import heapq
import logging
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

from .rprogram import RProgram

__all__ = ["simulate", "check_dependencies", "in_order_slots", "SimResult", "DeadlockError",
           "DependencyError"]

logger = logging.getLogger(__name__)


class DeadlockError(RuntimeError):
    """The rProgram cannot finish: some barrier waits for an entry that never completes."""


class DependencyError(RuntimeError):
    """An rTask may start before an rTask of a predecessor op has finished."""


@dataclass
class SimResult:
    """Simulated start and finish times (us) of every entry, and the makespan."""

    makespan_us: float
    start: list = field(default_factory=list)
    finish: list = field(default_factory=list)

    def busy_fraction(self, program: RProgram) -> float:
        """Fraction of vEU-time spent in compute rTasks."""
        if self.makespan_us <= 0:
            return 0.0
        busy = sum(t.duration_us for tasks in program.prog for t in tasks
                   if t.kind == "compute")
        return busy / (self.makespan_us * program.num_veus)


def simulate(program: RProgram, barrier_us: float = 0.0) -> SimResult:
    """Run the program's semantics; raises :class:`DeadlockError` if it cannot finish.

    Parameters
    ----------
    program : RProgram
        The plan.
    barrier_us : float
        Added to every barrier's own duration (the cost of polling the step array).
    """
    n = program.num_veus
    start = [[0.0] * len(t) for t in program.prog]
    finish = [[0.0] * len(t) for t in program.prog]
    pos = [0] * n
    free = [0.0] * n
    blocked: dict[tuple[int, int], list[int]] = {}  # (veu, step) -> waiting vEUs
    ready = list(range(n))
    while ready:
        v = ready.pop()
        while pos[v] < len(program.prog[v]):
            task = program.prog[v][pos[v]]
            missing = [(u, s) for u, s in task.waits if pos[u] < s]
            if missing:
                blocked.setdefault(missing[0], []).append(v)
                break
            begin = max([free[v]] + [finish[u][s - 1] for u, s in task.waits])
            cost = task.duration_us + (barrier_us if task.kind == "barrier" else 0.0)
            start[v][pos[v]], finish[v][pos[v]] = begin, begin + cost
            free[v] = begin + cost
            pos[v] += 1
            ready.extend(blocked.pop((v, pos[v]), []))
    stuck = [v for v in range(n) if pos[v] < len(program.prog[v])]
    if stuck:
        waits = {v: program.prog[v][pos[v]].waits for v in stuck[:8]}
        raise DeadlockError(f"rProgram {program.name!r} deadlocks: vEUs {stuck[:8]} are stuck "
                            f"(vEU: awaited (vEU, step) pairs {waits}; reached steps "
                            f"{[pos[v] for v in stuck[:8]]})")
    makespan = max(free) if free else 0.0
    return SimResult(makespan, start, finish)


def _vector_clocks(program: RProgram) -> list[list[tuple]]:
    """``clock[v][k][u]``: entries of vEU ``u`` that happen before entry ``(v, k)`` starts."""
    n = program.num_veus
    clocks: list[list] = [[None] * len(t) for t in program.prog]
    order = _topological_entries(program)
    for v, k in order:
        base = clocks[v][k - 1].copy() if k else np.zeros(n, np.int32)
        base[v] = k  # entries 0..k-1 of its own vEU
        for u, s in program.prog[v][k].waits:
            np.maximum(base, clocks[u][s - 1], out=base)
            base[u] = max(base[u], s)
        clocks[v][k] = base
    return clocks


def _topological_entries(program: RProgram) -> list[tuple[int, int]]:
    """Entries in an order where program order and barrier edges come first."""
    indeg = {}
    users: dict[tuple[int, int], list] = {}
    for v, tasks in enumerate(program.prog):
        for k, task in enumerate(tasks):
            preds = ([(v, k - 1)] if k else []) + [(u, s - 1) for u, s in task.waits]
            indeg[(v, k)] = len(preds)
            for p in preds:
                users.setdefault(p, []).append((v, k))
    heap = [e for e, d in indeg.items() if d == 0]
    heapq.heapify(heap)
    out = []
    while heap:
        entry = heapq.heappop(heap)
        out.append(entry)
        for user in users.get(entry, []):
            indeg[user] -= 1
            if indeg[user] == 0:
                heapq.heappush(heap, user)
    if len(out) != len(indeg):
        raise DeadlockError(f"rProgram {program.name!r} deadlocks: its barriers form a cycle")
    return out


def check_dependencies(program: RProgram, edges: Iterable[tuple[str, str]]) -> int:
    """Check that every rTask of each consumer op happens after every rTask of its producer.

    Parameters
    ----------
    program : RProgram
        The plan (ops absent from it are ignored: they run in other kernels).
    edges : iterable of (str, str)
        ``(producer, consumer)`` op-name pairs.

    Returns
    -------
    int
        Number of (producer rTask, consumer rTask) pairs checked.
    """
    clocks = _vector_clocks(program)
    where: dict[str, list[tuple[int, int]]] = {}
    for v, tasks in enumerate(program.prog):
        for k, task in enumerate(tasks):
            if task.kind == "compute":
                where.setdefault(task.op, []).append((v, k))
    checked = 0
    for producer, consumer in edges:
        for v, k in where.get(consumer, []):
            for u, s in where.get(producer, []):
                checked += 1
                if clocks[v][k][u] < s + 1:
                    raise DependencyError(
                        f"rProgram {program.name!r}: rTask {consumer}@({v},{k}) may start "
                        f"before {producer}@({u},{s}) finishes (no barrier orders them)")
    return checked


def in_order_slots(program: RProgram) -> int:
    """The fewest vEUs that must run at once for ``program`` to finish when they start in
    index order and each keeps its slot until its list ends.

    That is how a GPU dispatches blocks in practice and how the Oclgrind simulator hands
    work-groups to its threads: with fewer slots, a started vEU waits for one that can
    never start. (A GPU does not promise the order: the kernels still need every vEU
    resident; this bounds the simulator threads a program needs.)
    """
    lo, hi = 1, program.num_veus
    while lo < hi:
        mid = (lo + hi) // 2
        if _finishes(program, mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _finishes(program: RProgram, slots: int) -> bool:
    pos, active, started, done = [0] * program.num_veus, [], 0, 0
    while done < program.num_veus:
        while len(active) < slots and started < program.num_veus:
            active.append(started)
            started += 1
        progress = False
        for v in list(active):
            tasks = program.prog[v]
            while pos[v] < len(tasks) and all(pos[u] >= s for u, s in tasks[pos[v]].waits):
                pos[v] += 1
                progress = True
            if pos[v] == len(tasks):
                active.remove(v)
                done, progress = done + 1, True
        if not progress:
            return False
    return True
