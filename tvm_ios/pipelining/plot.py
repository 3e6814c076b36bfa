"""Convergence plot like the Shisha paper's Figure 4: best throughput so far against the
tuning clock (log scale), one line per algorithm."""
from __future__ import annotations

import logging

__all__ = ["plot_convergence"]

logger = logging.getLogger(__name__)


def plot_convergence(results, path: str, title: str = "", reference: float | None = None):
    """Write the convergence plot of ``results`` (SearchResult list) to ``path``.

    Parameters
    ----------
    results : sequence of SearchResult
        Each with its trace of (clock seconds, evaluated, best throughput).
    path : str
        Output image (``.png``, ``.pdf``, ``.svg``).
    title : str
        Figure title.
    reference : float, optional
        Throughput the y axis is normalised to (default: the best of ``results``).
    """
    import matplotlib  # noqa: PLC0415  (optional dependency: extras "plot")

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    ref = reference or max(r.throughput for r in results) or 1.0
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for result in results:
        points = [(max(t, 1e-3), best / ref) for t, _, best in result.trace]
        if not points:
            continue
        xs = [p[0] for p in points] + [max(result.seconds, points[-1][0])]
        ys = [p[1] for p in points] + [points[-1][1]]
        name = result.algorithm
        if "heuristic" in result.extra:
            name += f"-{result.extra['heuristic']}"
        ax.step(xs, ys, where="post", label=f"{name} ({result.evaluated} configs)")
    ax.set_xscale("log")
    ax.set_xlabel("tuning time (s, log scale)")
    ax.set_ylabel("best throughput (normalised)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    logger.info("convergence plot written to %s", path)
    return path
