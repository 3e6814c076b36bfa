"""Plots of schedules, for people who would rather look than read.

``plot_schedule`` draws a schedule as a timeline: each stage is a column as wide as its
estimated latency; its groups are stacked rows (concurrent), each group split into its ops
in order; merged stages are hatched.
"""
from __future__ import annotations

import logging

from .schedule.schedule import Schedule

__all__ = ["plot_schedule"]

logger = logging.getLogger(__name__)


def plot_schedule(schedule: Schedule, path: str, title: str | None = None) -> str:
    """Draw ``schedule`` to an image file (PNG, SVG or PDF by extension); returns the path.

    Needs matplotlib (``pip install tvm-ios[plot]``).
    """
    try:
        import matplotlib  # noqa: PLC0415

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError as err:
        raise ImportError("plotting needs matplotlib: pip install 'tvm-ios[plot]'") from err
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
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    logger.info("schedule plot written to %s", path)
    return path
