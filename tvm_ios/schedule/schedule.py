"""The schedule: plain, printable, JSON-serialisable data that schedulers return.

A schedule is a list of stages run one after another. A stage holds groups of op names;
with strategy ``"concurrent"`` its groups run concurrently and the ops of a group run in
order; with strategy ``"merge"`` its ops (one per group) run as one merged operator.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Stage", "Schedule", "ScheduleError", "SCHEMA", "SCHEMA_VERSION"]

SCHEMA = "tvm-ios/schedule"
SCHEMA_VERSION = 1
STRATEGIES = ("concurrent", "merge")


class ScheduleError(ValueError):
    """A schedule document is malformed, of another version, or stale for a graph."""


@dataclass
class Stage:
    """One stage: groups of op names and how they run."""

    groups: list[list[str]]
    strategy: str = "concurrent"
    latency_us: float = 0.0

    @property
    def ops(self) -> list[str]:
        """All op names of the stage, group by group."""
        return [op for group in self.groups for op in group]

    def to_dict(self) -> dict:
        """Return a JSON-serialisable dict."""
        return {"groups": [list(g) for g in self.groups], "strategy": self.strategy,
                "latency_us": float(self.latency_us)}


@dataclass
class Schedule:
    """A stage schedule of a graph, with its estimated latency and search statistics.

    Parameters
    ----------
    stages : list of Stage
        Stages in execution order.
    graph : dict
        ``{"name", "num_ops", "fingerprint"}`` of the graph it was made for.
    params : dict
        How it was made (scheduler, r, s, strategy, cost model).
    stats : dict
        Search statistics: ``states``, ``transitions``, ``schedules``, ``seconds``, ``blocks``.
    """

    stages: list[Stage]
    graph: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)

    @property
    def latency_us(self) -> float:
        """Sum of stage latencies (microseconds) as the cost model estimated them."""
        return float(sum(stage.latency_us for stage in self.stages))

    @property
    def ops(self) -> list[str]:
        """All op names in execution order."""
        return [op for stage in self.stages for op in stage.ops]

    def to_dict(self) -> dict:
        """Return the versioned JSON document as a dict."""
        return {"schema": SCHEMA, "version": SCHEMA_VERSION, "graph": dict(self.graph),
                "params": dict(self.params), "latency_us": self.latency_us,
                "stats": dict(self.stats), "stages": [s.to_dict() for s in self.stages]}

    def to_json(self, indent: int | None = 1) -> str:
        """Serialise to JSON."""
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_json(cls, text: str | dict) -> "Schedule":
        """Parse and validate a schedule document; errors name the offending field."""
        if isinstance(text, dict):
            data = text
        else:
            try:
                data = json.loads(text)
            except json.JSONDecodeError as err:
                raise ScheduleError(f"schedule JSON does not parse: {err}") from err
        return _parse(data)

    def check_graph(self, graph: Any) -> None:
        """Raise :class:`ScheduleError` if this schedule was made for another graph."""
        fingerprint = self.graph.get("fingerprint")
        if fingerprint and fingerprint != graph.fingerprint():
            raise ScheduleError(
                f"stale schedule: field 'graph.fingerprint' is {fingerprint} but the graph "
                f"{graph.name!r} has {graph.fingerprint()} (the model changed since scheduling)")
        names = set(graph.index)
        listed = self.ops
        unknown = [op for op in listed if op not in names]
        if unknown:
            raise ScheduleError(f"stale schedule: field 'stages' names ops not in the graph: "
                                f"{unknown[:5]}")
        missing = sorted(names - set(listed))
        if missing or len(listed) != len(set(listed)):
            raise ScheduleError(f"schedule field 'stages' must list every op once; missing "
                                f"{missing[:5]}, {len(listed) - len(set(listed))} repeated")

    def __str__(self) -> str:
        title = (f"Schedule of {self.graph.get('name', '?')}: {len(self.stages)} stages, "
                 f"{self.latency_us:.1f} us ({self.params.get('scheduler', '?')})")
        rows = [title, f"{'stage':>5}  {'strategy':<10} {'latency_us':>10}  groups"]
        for i, stage in enumerate(self.stages):
            groups = " | ".join(" -> ".join(g) for g in stage.groups)
            rows.append(f"{i:>5}  {stage.strategy:<10} {stage.latency_us:>10.2f}  {groups}")
        if self.stats:
            rows.append("stats: " + ", ".join(f"{k}={_fmt(v)}" for k, v in self.stats.items()
                                              if k != "bound_cuts"))
        for cut in self.stats.get("bound_cuts", []):
            rows.append(f"bound cut: segment {cut.get('segment')} ({cut.get('ops')} ops from "
                        f"{cut.get('first_op')}, bound {_fmt(cut.get('bound'))}) cut into "
                        f"{len(cut.get('pieces', []))} pieces; they lose at least "
                        f"{_fmt(cut.get('loss_lower_bound_us', 0.0))} us")
        return "\n".join(rows)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, int) and value >= 10 ** 6:
        return f"{float(value):.2e}"
    return str(value)


def _parse(data: Any) -> Schedule:
    if not isinstance(data, dict):
        raise ScheduleError("schedule document must be a JSON object")
    if data.get("schema") != SCHEMA:
        raise ScheduleError(f"field 'schema' must be {SCHEMA!r}, got {data.get('schema')!r}")
    if data.get("version") != SCHEMA_VERSION:
        raise ScheduleError(f"field 'version' is {data.get('version')!r}; this tvm-ios reads "
                            f"version {SCHEMA_VERSION}")
    stages_data = data.get("stages")
    if not isinstance(stages_data, list) or not stages_data:
        raise ScheduleError("field 'stages' must be a non-empty list")
    stages = [_parse_stage(i, s) for i, s in enumerate(stages_data)]
    for key in ("graph", "params", "stats"):
        if not isinstance(data.get(key, {}), dict):
            raise ScheduleError(f"field '{key}' must be an object")
    return Schedule(stages, graph=data.get("graph", {}), params=data.get("params", {}),
                    stats=data.get("stats", {}))


def _parse_stage(i: int, data: Any) -> Stage:
    where = f"stages[{i}]"
    if not isinstance(data, dict):
        raise ScheduleError(f"field '{where}' must be an object")
    groups = data.get("groups")
    if (not isinstance(groups, list) or not groups
            or not all(isinstance(g, list) and g and all(isinstance(o, str) for o in g)
                       for g in groups)):
        raise ScheduleError(f"field '{where}.groups' must be a non-empty list of non-empty "
                            "lists of op names")
    strategy = data.get("strategy", "concurrent")
    if strategy not in STRATEGIES:
        raise ScheduleError(f"field '{where}.strategy' must be one of {STRATEGIES}, "
                            f"got {strategy!r}")
    latency = data.get("latency_us", 0.0)
    if not isinstance(latency, (int, float)) or latency < 0:
        raise ScheduleError(f"field '{where}.latency_us' must be a number >= 0")
    return Stage([list(g) for g in groups], strategy, float(latency))
