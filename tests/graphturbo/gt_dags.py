"""Hand-made layer graphs for the GraphTurbo algorithm tests (no TVM needed).

Imported by the tests (``from gt_dags import layers, hw``); not a conftest, so that the
root ``conftest`` module stays importable by name.
"""
import math

import pytest

from tvm_ios.graph.opgraph import OpGraph, OpNode
from tvm_ios.graphturbo.hwspec import HardwareSpec
from tvm_ios.graphturbo.layers import LayerGraph
from tvm_ios.graphturbo.tensor_regions import BindInfo


def make_layers(spec, input_shape=(1, 4, 16, 16), outputs=None):
    """Build a LayerGraph from ``[(name, kind, out_shape, [sources], opts), ...]``.

    Kinds: ``conv`` (opts: k, s), ``pool`` (k, s), ``map`` (elementwise), ``concat``
    (axis 1), ``head`` (batch-only). Source ``"x"`` is the input. One binding per layer.
    """
    index = {name: i for i, (name, *_rest) in enumerate(spec)}
    shapes = {"x": tuple(input_shape)}
    nodes, edges, infos = [], set(), {}
    for i, (name, kind, shape, srcs, opts) in enumerate(spec):
        shape = tuple(shape)
        args = []
        for j, src in enumerate(srcs):
            key = "param:x" if src == "x" else f"%{index[src]}"
            args.append(((0, j) if kind == "concat" else (j, -1), key, shapes[src]))
            if src != "x":
                edges.add((index[src], i))
        info = BindInfo(i, {"conv": "window", "pool": "window", "map": "map",
                            "concat": "map", "head": "batch"}[kind], shape, args)
        flops = math.prod(shape)
        if kind in ("conv", "pool"):
            k, s = opts.get("k", 3), opts.get("s", 1)
            info.window = {"kernel": [k, k], "strides": [s, s], "padding": [k // 2] * 4,
                           "dilation": [1, 1]}
            if kind == "conv":
                flops *= 2 * shapes[srcs[0]][1] * k * k
        if kind == "concat":
            info.axis = 1
        infos[i] = info
        shapes[name] = shape
        nodes.append(OpNode(name, kind, shape, flops=flops, bytes=4 * math.prod(shape)))
    graph = OpGraph(nodes, edges, name="dag")
    outs = outputs if outputs is not None else [len(spec) - 1]
    return LayerGraph(graph, None, 0, [[i] for i in range(len(spec))], infos, outs,
                      4 * math.prod(input_shape))


def make_hw(lb_bytes, cores=1, gb_bytes=1 << 20, peak_gflops=8000.0, dram_gbs=100.0):
    """A hardware spec with the given local buffer."""
    return HardwareSpec("test", 1, cores, lb_bytes, gb_bytes, dram_gbs, peak_gflops)


@pytest.fixture
def layers():
    return make_layers


@pytest.fixture
def hw():
    return make_hw
