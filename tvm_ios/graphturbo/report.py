"""Text and plot views of a GraphTurbo :class:`~tvm_ios.graphturbo.plan.Plan`.

:func:`table3` sets the tensor placement counts of the plan beside the per-layer
(TVM-style) baseline, like the paper's Table 3 (with the paper's figures for the models it
reports); :func:`summary` lists sub-graphs, splits and the start of the order;
:func:`plot_lb` draws the local-buffer use over the schedule for both orders.
"""
from __future__ import annotations

import logging

__all__ = ["PAPER_TABLE3", "table3", "summary", "plot_lb"]

logger = logging.getLogger(__name__)

# The paper's Table 3 (STCP920, batch 16 per cluster for ResNet-50, 32 for MobileNet-v2):
# tensors in DDR / LLB (GB) / L1 (LB) for TVM and GraphTurbo.
PAPER_TABLE3 = {
    "resnet50": {"tvm": (58, 0, 0), "graphturbo": (1, 11, 284)},
    "mobilenet_v2": {"tvm": (56, 0, 0), "graphturbo": (0, 3, 608)},
}


def table3(plan, model: str | None = None) -> str:
    """Placement counts and off-core bytes, per-layer baseline vs GraphTurbo."""
    f = plan.figures
    base, gt = f["per_layer"], f["graphturbo"]
    lines = [f"{'':24s}{'per-layer (TVM-style)':>24s}{'GraphTurbo':>14s}",
             f"{'tensors in DRAM':24s}{base['dram']:>24d}{gt['dram']:>14d}",
             f"{'tensors in GB (LLB)':24s}{base['gb']:>24d}{gt['gb']:>14d}",
             f"{'tensors in LB (L1)':24s}{base['lb']:>24d}{gt['lb']:>14d}",
             f"{'kernels (layers/inst.)':24s}{base['kernels']:>24d}{gt['kernels']:>14d}",
             f"{'bytes moved off-core':24s}{base['offcore_bytes'] / 1e6:>21.2f} MB"
             f"{gt['offcore_bytes'] / 1e6:>11.2f} MB"]
    paper = PAPER_TABLE3.get((model or "").lower())
    if paper:
        lines.append(f"{'paper (DDR/LLB/L1)':24s}{'%d/%d/%d' % paper['tvm']:>24s}"
                     f"{'%d/%d/%d' % paper['graphturbo']:>14s}")
    moves = f["movement_ops"]
    lines.append(f"data-movement ops: {moves['concat']} concat, {moves['copy']} copy, "
                 f"{moves['redistribute']} redistribute; LB peak {f['peak_lb'] / 1024:.0f} KB "
                 f"of {f['lb_capacity'] / 1024:.0f} KB")
    return "\n".join(lines)


def summary(plan, max_order: int = 40) -> str:
    """Sub-graphs with their splits, edge elimination and the chosen order."""
    lines = [str(plan).splitlines()[0]]
    for s, sg in enumerate(plan.sgs):
        dim = "NCHW"[sg["dim"]] if sg["dim"] < 4 else str(sg["dim"])
        tag = " (fallback: per layer, DRAM)" if sg["fallback"] else ""
        lines.append(f"  sg{s:<3d} {len(sg['layers']):3d} layers  split {dim} x {sg['factor']:<3d}"
                     f" {sg['layers'][0]} .. {sg['layers'][-1]}{tag}")
    split = plan.split
    lines.append(f"instance edges: {split['inherited_edges']} inherited, "
                 f"{split['inherited_edges'] - split['kept_edges']} redundant eliminated, "
                 f"{split['kept_edges']} kept")
    for name, o in plan.orders.items():
        lines.append(f"order {name}: spills {o['spilled_bytes'] / 1e6:.2f} MB, LB peak "
                     f"{o['peak_lb'] / 1024:.0f} KB" + ("  <- chosen" if name == plan.chosen
                                                        else ""))
    labels = {i["id"]: f"sg{i['sg']}.{i['k']}" for i in split["instances"]}
    shown = [labels[i] for i in plan.order[:max_order]]
    more = " ..." if len(plan.order) > max_order else ""
    lines.append("order: " + " ".join(shown) + more)
    return "\n".join(lines)


def plot_lb(plan, path: str) -> str:
    """Save a plot of LB use per schedule step (both orders) to ``path``; returns it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 3.5))
    for name, o in plan.orders.items():
        style = "-" if name == plan.chosen else "--"
        ax.plot([b / 1024 for b in o["lb_trace"]], style, label=f"{name}"
                + (" (chosen)" if name == plan.chosen else ""))
    ax.axhline(plan.figures["lb_capacity"] / 1024, color="red", lw=0.8, label="LB capacity")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("schedule step (instance)")
    ax.set_ylabel("local buffer in use (KB)")
    ax.set_title(f"GraphTurbo LB use: {plan.model} on {plan.hw['name']}")
    ax.legend(loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    logger.info("GraphTurbo: LB plot written to %s", path)
    return path
