"""The rProgram: a static plan ``prog[vEU][order]`` of rTasks on persistent workers (Rammer).

A vEU (virtual execution unit) is one persistent thread block on a GPU or one worker of
TVM's thread pool on a CPU. Each vEU runs its list of rTasks in order. ``append`` places a
compute rTask; ``wait`` places a *barrier-rTask* that blocks until given rTasks on other
vEUs have finished.

Barriers use a step array: ``step[v]`` counts the entries (compute and barrier rTasks)
vEU ``v`` has completed. Waiting for the rTask at ``(v, k)`` means waiting until
``step[v] >= k + 1``, so a barrier keeps only the last awaited rTask of each vEU (the
optimisation of Rammer section 3.3). The program is plain data: JSON, ``str``, equality.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Iterable

__all__ = ["RTask", "RProgram", "RProgramError", "SCHEMA"]

SCHEMA = "tvm-ios/rprogram"
KINDS = ("compute", "barrier")


class RProgramError(ValueError):
    """A malformed rProgram or a misuse of ``append``/``wait``."""


@dataclass(frozen=True)
class RTask:
    """One entry of a vEU's list.

    Parameters
    ----------
    op : str
        Name of the op this compute rTask belongs to ('' for a barrier).
    index : int
        The rTask's index inside its rKernel (what replaces ``blockIdx``).
    kind : {"compute", "barrier"}
        A compute rTask or a barrier-rTask.
    waits : tuple of (int, int)
        For a barrier: ``(vEU, step)`` pairs; it passes once ``step_array[vEU] >= step``.
    duration_us : float
        Estimated (or profiled) time of the rTask.
    kernel : str
        Name of the rKernel the rTask comes from.
    """

    op: str = ""
    index: int = 0
    kind: str = "compute"
    waits: tuple = ()
    duration_us: float = 0.0
    kernel: str = ""

    def to_dict(self) -> dict:
        """JSON-serialisable dict."""
        return {"op": self.op, "index": self.index, "kind": self.kind,
                "waits": [list(w) for w in self.waits], "duration_us": self.duration_us,
                "kernel": self.kernel}

    @classmethod
    def from_dict(cls, data: dict, where: str = "task") -> "RTask":
        """Inverse of :meth:`to_dict`; errors name the field."""
        kind = data.get("kind", "compute")
        if kind not in KINDS:
            raise RProgramError(f"field '{where}.kind' must be one of {KINDS}, got {kind!r}")
        waits = data.get("waits", [])
        if not all(isinstance(w, (list, tuple)) and len(w) == 2 for w in waits):
            raise RProgramError(f"field '{where}.waits' must be a list of [vEU, step] pairs")
        return cls(str(data.get("op", "")), int(data.get("index", 0)), kind,
                   tuple((int(v), int(s)) for v, s in waits),
                   float(data.get("duration_us", 0.0)), str(data.get("kernel", "")))


@dataclass
class RProgram:
    """``prog[vEU][order]``: the rTask lists of ``num_veus`` vEUs.

    Parameters
    ----------
    num_veus : int
        Number of vEUs (persistent blocks or CPU workers).
    prog : list of list of RTask
        Each vEU's entries in execution order.
    name : str
        Name of the program (used for the generated kernel).
    meta : dict
        Free-form facts: policy, stage, target, threads and shared memory per vEU, ...
    """

    num_veus: int
    prog: list = field(default_factory=list)
    name: str = "rprogram"
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.num_veus < 1:
            raise RProgramError(f"rProgram {self.name!r}: num_veus must be >= 1, "
                                f"got {self.num_veus}")
        if not self.prog:
            self.prog = [[] for _ in range(self.num_veus)]
        if len(self.prog) != self.num_veus:
            raise RProgramError(f"rProgram {self.name!r}: prog has {len(self.prog)} vEU "
                                f"lists for num_veus={self.num_veus}")

    # -- the two scheduling interfaces -----------------------------------------------------
    def append(self, rtask: RTask, veu: int) -> tuple[int, int]:
        """Append a compute rTask to ``veu``; returns its position ``(veu, order)``."""
        self._check_veu(veu)
        if rtask.kind != "compute":
            raise RProgramError("append() takes compute rTasks; use wait() for barriers")
        self.prog[veu].append(rtask)
        return veu, len(self.prog[veu]) - 1

    def wait(self, veu: int, deps: Iterable[tuple[int, int]],
             duration_us: float = 0.0) -> tuple[int, int] | None:
        """Append to ``veu`` a barrier-rTask waiting for the rTasks at positions ``deps``.

        Entries on ``veu`` itself are ordered already and dropped; of several entries on one
        vEU only the last is kept. Returns the barrier's position, or None when nothing is
        left to wait for.
        """
        self._check_veu(veu)
        need: dict[int, int] = {}
        for dep_veu, order in deps:
            self._check_veu(dep_veu)
            if not 0 <= order < len(self.prog[dep_veu]):
                raise RProgramError(f"wait on vEU {veu}: no rTask at ({dep_veu}, {order})")
            if dep_veu != veu:
                need[dep_veu] = max(need.get(dep_veu, 0), order + 1)
        if not need:
            return None
        self.prog[veu].append(RTask(kind="barrier", waits=tuple(sorted(need.items())),
                                    duration_us=duration_us))
        return veu, len(self.prog[veu]) - 1

    def _check_veu(self, veu: int) -> None:
        if not 0 <= veu < self.num_veus:
            raise RProgramError(f"rProgram {self.name!r}: vEU {veu} out of range "
                                f"[0, {self.num_veus})")

    # -- queries ---------------------------------------------------------------------------
    def positions(self, op: str) -> list[tuple[int, int]]:
        """Positions ``(veu, order)`` of the compute rTasks of ``op``."""
        return [(v, k) for v, tasks in enumerate(self.prog) for k, t in enumerate(tasks)
                if t.kind == "compute" and t.op == op]

    @property
    def ops(self) -> list[str]:
        """Names of the ops of the program, each once, by first position (vEU-major)."""
        seen: dict[str, None] = {}
        for tasks in self.prog:
            for task in tasks:
                if task.kind == "compute":
                    seen.setdefault(task.op, None)
        return list(seen)

    @property
    def num_tasks(self) -> int:
        """Number of compute rTasks."""
        return sum(t.kind == "compute" for tasks in self.prog for t in tasks)

    @property
    def num_barriers(self) -> int:
        """Number of barrier-rTasks."""
        return sum(t.kind == "barrier" for tasks in self.prog for t in tasks)

    # -- plain data ------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """JSON-serialisable dict."""
        return {"schema": SCHEMA, "name": self.name, "num_veus": self.num_veus,
                "meta": dict(self.meta),
                "prog": [[t.to_dict() for t in tasks] for tasks in self.prog]}

    def to_json(self, indent: int | None = None) -> str:
        """Serialise to JSON."""
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_json(cls, text: str | dict) -> "RProgram":
        """Parse an rProgram document; errors name the offending field."""
        data = json.loads(text) if isinstance(text, str) else text
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise RProgramError(f"field 'schema' must be {SCHEMA!r}")
        prog = data.get("prog")
        if not isinstance(prog, list):
            raise RProgramError("field 'prog' must be a list of vEU lists")
        tasks = [[RTask.from_dict(t, f"prog[{v}][{k}]") for k, t in enumerate(lst)]
                 for v, lst in enumerate(prog)]
        return cls(int(data.get("num_veus", len(tasks))), tasks,
                   str(data.get("name", "rprogram")), dict(data.get("meta", {})))

    def __str__(self) -> str:
        rows = [f"rProgram {self.name}: {self.num_veus} vEUs, {self.num_tasks} rTasks, "
                f"{self.num_barriers} barriers"]
        for v, tasks in enumerate(self.prog):
            items = []
            for task in tasks:
                if task.kind == "barrier":
                    items.append("wait(" + ",".join(f"{u}>={s}" for u, s in task.waits) + ")")
                else:
                    items.append(f"{task.op}[{task.index}]")
            rows.append(f"  vEU {v:>3}: " + " ".join(items))
        return "\n".join(rows)
