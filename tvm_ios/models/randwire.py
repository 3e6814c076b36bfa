"""RandWire-WS(4, 0.75), regular regime, C = 154 (Xie et al., ICCV 2019): IOS's ``randwire_large``.

conv1 (3x3/2, C/2, no activation), then four randomly wired stages (the paper's conv2..conv5:
16, 32, 32, 32 nodes with C, 2C, 4C, 8C channels), ReLU, 1x1 conv to 1280 + ReLU, global
average pool and a 1280 -> 1000 classifier. Published size 224x224.

Each stage is a Watts-Strogatz graph WS(n, k=4, p=0.75) made acyclic by orienting every edge
from the lower to the higher node index. A node aggregates its predecessors by summation (the
paper's learned positive weights fold into the next conv at inference), then applies ReLU and a
3x3 separable conv (BatchNorm folded). Nodes without predecessors read the stage input with
stride 2; the stage output is the average of the nodes without successors.

The graphs come from a small WS generator seeded with :data:`GRAPH_SEEDS`, so the model is the
same on every machine without networkx. The paper reports 61.5M parameters for C = 154; the
exact count depends on how many input nodes each sampled graph has (their sepconvs read the
narrower previous stage), which is why the definition lands a few percent away.
"""
from __future__ import annotations

import logging

import numpy as np

from .netdef import Net, Node

logger = logging.getLogger(__name__)

__all__ = ["build", "ws_graph", "dag_predecessors", "DEFAULT_IMAGE_SIZE", "MIN_IMAGE_SIZE",
           "NUM_CLASSES"]

DEFAULT_IMAGE_SIZE = 224
MIN_IMAGE_SIZE = 1
NUM_CLASSES = 1000
#: Xie et al. 2019, Table 3 (RandWire-WS, C = 154, regular regime): 61.5M parameters.
PUBLISHED_PARAMS = 61_500_000

CHANNELS = 154
WS_K, WS_P = 4, 0.75
#: (nodes, channel multiplier) of the four random stages conv2..conv5.
STAGES = ((16, 1), (32, 2), (32, 4), (32, 8))
#: Fixed seeds of the four stage graphs (part of the model definition).
GRAPH_SEEDS = (2, 3, 4, 5)


def ws_graph(n: int, k: int, p: float, seed: int) -> list[tuple[int, int]]:
    """Undirected Watts-Strogatz graph as sorted edges ``(u, v)`` with ``u < v``.

    Ring lattice where each node links to its ``k / 2`` nearest neighbours on each side; then,
    for each lattice edge ``(u, u + j)`` in order of ``j`` and ``u``, with probability ``p``
    the far end is replaced by a node chosen uniformly among those not yet linked to ``u``
    (networkx's ``watts_strogatz_graph`` procedure, with numpy's ``default_rng(seed)``).

    Parameters
    ----------
    n, k : int
        Number of nodes and (even) lattice degree, ``0 < k < n``.
    p : float
        Rewiring probability.
    seed : int
        Random seed; the graph is a deterministic function of ``(n, k, p, seed)``.

    Returns
    -------
    list of (int, int)
    """
    if k % 2 or not 0 < k < n:
        raise ValueError(f"WS graph needs an even k with 0 < k < n, got n={n}, k={k}")
    rng = np.random.default_rng(seed)
    adj = [set() for _ in range(n)]
    for u in range(n):
        for j in range(1, k // 2 + 1):
            adj[u].add((u + j) % n)
            adj[(u + j) % n].add(u)
    for j in range(1, k // 2 + 1):
        for u in range(n):
            v = (u + j) % n
            if v not in adj[u] or rng.random() >= p:
                continue
            free = [w for w in range(n) if w != u and w not in adj[u]]
            if not free:
                continue
            w = free[int(rng.integers(len(free)))]
            adj[u].discard(v)
            adj[v].discard(u)
            adj[u].add(w)
            adj[w].add(u)
    return sorted((u, v) for u in range(n) for v in adj[u] if u < v)


def dag_predecessors(n: int, edges: list[tuple[int, int]]) -> list[list[int]]:
    """Predecessors of each node once every edge points from the lower to the higher index."""
    preds: list[list[int]] = [[] for _ in range(n)]
    for u, v in edges:
        lo, hi = min(u, v), max(u, v)
        preds[hi].append(lo)
    return [sorted(p) for p in preds]


def _stage(net: Net, x: Node, n: int, channels: int, seed: int) -> Node:
    preds = dag_predecessors(n, ws_graph(n, WS_K, WS_P, seed))
    has_succ = {p for ps in preds for p in ps}
    outs: list[Node] = []
    for i in range(n):
        if preds[i]:
            agg = outs[preds[i][0]] if len(preds[i]) == 1 else net.add(
                [outs[j] for j in preds[i]], name=f"node{i}_in")
            stride = 1
        else:
            agg, stride = x, 2
        y = net.relu(agg, name=f"node{i}_relu")
        outs.append(net.sepconv(y, channels, 3, stride, name=f"node{i}_sep"))
    sinks = [outs[i] for i in range(n) if i not in has_succ]
    return sinks[0] if len(sinks) == 1 else net.mean(sinks, name="out")


def build(batch_size: int = 1, image_size: int | None = None, num_classes: int = NUM_CLASSES,
          channels: int = CHANNELS) -> Net:
    """RandWire-WS regular-regime definition. Arguments as for :func:`tvm_ios.models.net`."""
    size = image_size or DEFAULT_IMAGE_SIZE
    net, x = Net.image_model("randwire", batch_size, size, num_classes)
    x = net.conv(x, channels // 2, 3, stride=2, name="conv1")
    for stage, ((n, mult), seed) in enumerate(zip(STAGES, GRAPH_SEEDS), start=2):
        with net.scope(f"conv{stage}"):
            x = _stage(net, x, n, mult * channels, seed)
    x = net.conv(net.relu(x, name="relu"), 1280, 1, relu=True, name="conv_head")
    net.classifier_head(x, num_classes, name="fc")
    return net
