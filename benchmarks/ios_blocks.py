"""IOS's model blocks, the graphs on which IOS's own search time is reported.

IOS defines its networks block by block: the stem, each Inception module, each NASNet cell,
each SqueezeNet fire module, each randomly wired RandWire stage, the head. The zoo models
of tvm-ios name their ops by those blocks (``mixed_6b_...``, ``cell_3_...``, ``fire4_...``,
``conv3_...``), so a block is a maximal run of ops with one such prefix, scheduled as a
graph of its own, as IOS does. Differences from IOS's blocks: IOS counts its concat and
identity operators as ops of a block, tvm-ios folds them into the edges.

RandWire's zoo stages are drawn by tvm-ios's own Watts-Strogatz generator; IOS ships the
four graphs it uses (``benchmarks/data/ios_randwire_graphs.json``, its edge lists as data),
so :func:`ios_randwire_graph` rebuilds IOS's ``randwire_large`` with those graphs and the
zoo's layers (ReLU + 3x3 separable conv per node, summed inputs, C = 154).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from tvm_ios import models
from tvm_ios.graph.bitset import mask_of
from tvm_ios.graph.extract import op_graph
from tvm_ios.graph.opgraph import OpGraph
from tvm_ios.models.netdef import Net

__all__ = ["ios_randwire_graph", "zoo_graph", "ios_blocks"]

DATA = Path(__file__).resolve().parent / "data" / "ios_randwire_graphs.json"
#: IOS's four stages: (graph, channel multiplier); C = 154 as in ``randwire_large``.
RANDWIRE_STAGES = (("ws-16-4-0.75-2", 1), ("ws-32-4-0.75-3", 2), ("ws-32-4-0.75-4", 4),
                   ("ws-32-4-0.75-5", 8))
_BLOCK = re.compile(r"^((?:cell_stem|reduction_cell|cell)_\d+|mixed_\w+?|fire\d+|conv[2-5])_")


def zoo_graph(name: str) -> OpGraph:
    """The op graph of zoo model ``name`` at its published input size."""
    mod, _ = models.get(name, calibrate=False)
    graph = op_graph(mod)
    graph.name = name
    return graph


def ios_randwire_graph(channels: int = 154) -> OpGraph:
    """IOS's ``randwire_large``, with IOS's stage graphs and the zoo's layers."""
    graphs = json.loads(DATA.read_text())["graphs"]
    net, x = Net.image_model("ios_randwire", 1, 224, 1000)
    x = net.conv(x, channels // 2, 3, stride=2, name="conv1")
    for index, (key, mult) in enumerate(RANDWIRE_STAGES, start=2):
        with net.scope(f"conv{index}"):
            x = _stage(net, x, graphs[key]["nodes"], graphs[key]["edges"], mult * channels)
    x = net.conv(net.relu(x, name="relu"), 1280, 1, relu=True, name="conv_head")
    net.classifier_head(x, 1000, name="fc")
    mod, _ = models.to_relax(net, calibrate=False)
    graph = op_graph(mod)
    graph.name = "ios_randwire"
    return graph


def _stage(net: Net, x, n: int, edges: list, channels: int):
    preds: list[list[int]] = [[] for _ in range(n)]
    for u, v in edges:
        preds[v].append(u)
    outs = []
    for i in range(n):
        if preds[i]:
            ins = [outs[j] for j in sorted(preds[i])]
            agg = ins[0] if len(ins) == 1 else net.add(ins, name=f"node{i}_in")
            stride = 1
        else:
            agg, stride = x, 2
        outs.append(net.sepconv(net.relu(agg, name=f"node{i}_relu"), channels, 3, stride,
                                name=f"node{i}_sep"))
    sinks = [outs[i] for i in range(n) if not any(u == i for u, _ in edges)]
    return sinks[0] if len(sinks) == 1 else net.mean(sinks, name="out")


def ios_blocks(graph: OpGraph) -> list[tuple[str, OpGraph]]:
    """IOS's blocks of ``graph``: runs of ops with one block prefix (see module doc); ops
    outside any block (stem, head) are blocks of the run they form."""
    runs: list[tuple[str, list[int]]] = []
    for i, node in enumerate(graph.nodes):
        match = _BLOCK.match(node.name)
        name = match.group(1) if match else "other"
        if runs and runs[-1][0] == name:
            runs[-1][1].append(i)
        else:
            runs.append((name, [i]))
    return [(name, graph.subgraph(mask_of(ids), name=f"{graph.name}/{name}"))
            for name, ids in runs]
