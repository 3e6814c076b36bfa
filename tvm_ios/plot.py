"""Plots of schedules, for people who would rather look than read.

``plot_schedule`` draws a schedule as a timeline: each stage is a column as wide as its
estimated latency; its groups are stacked rows (concurrent), each group split into its ops
in order; merged stages are hatched. ``plot_rprogram`` draws an rProgram as the simulator
times it: one row per vEU, a bar per rTask (coloured by op), barrier waits in grey.
"""
from __future__ import annotations

import logging

from .schedule.schedule import Schedule

__all__ = ["plot_schedule", "plot_rprogram"]

logger = logging.getLogger(__name__)


def _pyplot():
    try:
        import matplotlib  # noqa: PLC0415

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError as err:
        raise ImportError("plotting needs matplotlib: pip install 'tvm-ios[plot]'") from err
    return plt


def _save(plt, fig, path: str, what: str) -> str:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    logger.info("%s plot written to %s", what, path)
    return path


def plot_schedule(schedule: Schedule, path: str, title: str | None = None) -> str:
    """Draw ``schedule`` to an image file (PNG, SVG or PDF by extension); returns the path.

    Needs matplotlib (``pip install tvm-ios[plot]``).
    """
    plt = _pyplot()
    rows = max((len(stage.groups) for stage in schedule.stages), default=1)
    fig, ax = plt.subplots(figsize=(12, 1.2 + 0.45 * rows))
    start = 0.0
    for index, stage in enumerate(schedule.stages):
        width = stage.latency_us or 1.0
        for row, group in enumerate(stage.groups):
            step = width / len(group)
            for k, _ in enumerate(group):
                ax.barh(row, step * 0.96, left=start + k * step, height=0.8,
                        color=f"C{index % 10}", hatch="//" if stage.strategy == "merge" else None,
                        edgecolor="black", linewidth=0.3)
        start += width
    ax.set_xlabel("estimated time (us)")
    ax.set_ylabel("concurrent group")
    ax.set_yticks(range(rows))
    ax.invert_yaxis()
    ax.set_title(title or f"{schedule.graph.get('name', '')}: {len(schedule.stages)} stages, "
                 f"{schedule.latency_us:.0f} us ({schedule.params.get('scheduler', '')})")
    return _save(plt, fig, path, "schedule")


def plot_rprogram(program, sim, path: str, title: str | None = None) -> str:
    """Draw ``program`` as timed by the simulator (``sim``, a
    :class:`~tvm_ios.kernels.interpreter.SimResult`) to an image file; returns the path."""
    plt = _pyplot()
    colours = {op: f"C{i % 10}" for i, op in enumerate(program.ops)}
    fig, ax = plt.subplots(figsize=(12, 1.2 + 0.35 * program.num_veus))
    for v, tasks in enumerate(program.prog):
        for k, task in enumerate(tasks):
            begin, end = sim.start[v][k], sim.finish[v][k]
            if task.kind == "barrier":
                ax.plot([begin], [v], marker="|", color="grey", markersize=12)
                continue
            ax.barh(v, max(end - begin, 1e-3) * 0.97, left=begin, height=0.8,
                    color=colours[task.op], edgecolor="black", linewidth=0.3)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colours.values()]
    ax.legend(handles, list(colours), loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
    ax.set_xlabel("simulated time (us, estimated rTask durations)")
    ax.set_ylabel("vEU")
    ax.invert_yaxis()
    ax.set_title(title or f"{program.name}: {program.num_veus} vEUs, {program.num_tasks} rTasks, "
                 f"{program.num_barriers} barriers, {sim.makespan_us:.1f} us")
    return _save(plt, fig, path, "rProgram")
