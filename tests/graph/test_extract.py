"""op_graph: units, epilogue fusion, separable convs, free ops, unknown ops."""
import logging

import numpy as np
from tvm import relax

from tvm_ios.graph.extract import extract
from tvm_ios.graph.extract import op_graph


def test_units_and_edges(inception_like):
    graph = op_graph(inception_like)
    names = [n.name for n in graph.nodes]
    assert names == ["stem_relu", "a_relu", "b_relu", "c_relu", "pool", "d_relu", "e_relu"]
    idx = graph.index
    assert graph.names_of(graph.pred[idx["e_relu"]]) == ["a_relu", "c_relu", "pool", "d_relu"]
    assert graph.names_of(graph.pred[idx["d_relu"]]) == ["b_relu"]
    b = graph.nodes[idx["b_relu"]]
    assert b.kind == "conv2d" and b.attrs["kernel"] == [1, 3]
    assert b.attrs["epilogue"] == ["add:c", "relu"] and b.attrs["padding"] == [0, 1, 0, 1]
    assert b.flops == 2 * 4 * 12 * 12 * 8 * 3 + 2 * 4 * 12 * 12  # conv + bias + relu
    assert graph.nodes[idx["pool"]].kind == "pool"
    # the concat joining four branches is a junction: the ancestors of its inputs
    assert graph.junctions == [0b0111111]


def test_binding_map(inception_like):
    ext = extract(inception_like["main"])
    bindings = ext.func.body.blocks[ext.block_index].bindings
    names = [str(bindings[i].var.name) for i in ext.units[0]]
    assert names == ["stem", "stem_bias", "stem_relu"]


def _sepconv_module(unknown=False):
    rng = np.random.default_rng(0)
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 4, 8, 8), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            r = bb.emit(relax.op.nn.relu(relax.op.add(x, x)), name_hint="pre")
            dw = relax.const(rng.standard_normal((4, 1, 3, 3)).astype("float32"))
            pw = relax.const(rng.standard_normal((6, 4, 1, 1)).astype("float32"))
            y = bb.emit(relax.op.nn.conv2d(r, dw, padding=(1, 1), groups=4), name_hint="dw")
            y = bb.emit(relax.op.nn.conv2d(y, pw), name_hint="pw")
            if unknown:
                y = bb.emit(relax.op.sort(y, axis=1), name_hint="odd")
            y = bb.emit(relax.op.nn.relu(y), name_hint="out")
            gv = bb.emit_output(y)
        bb.emit_func_output(gv)
    return bb.get()


def test_depthwise_plus_pointwise_is_one_sepconv_unit():
    graph = op_graph(_sepconv_module())
    assert [(n.name, n.kind) for n in graph.nodes] == [("out", "sepconv")]
    node = graph.nodes[0]
    assert node.attrs["pointwise_channels"] == 6
    assert node.flops == 2 * 4 * 64 * 9 + 2 * 6 * 64 * 4 + 6 * 64


def test_unknown_op_kept_as_unschedulable_unit(caplog):
    with caplog.at_level(logging.WARNING):
        graph = op_graph(_sepconv_module(unknown=True))
    kinds = [(n.name, n.kind, n.schedulable) for n in graph.nodes]
    assert kinds == [("pw", "sepconv", True), ("out", "relax.sort", False)]
    assert "relax.sort" in caplog.text and "unschedulable" in caplog.text
    assert graph.edges == [(0, 1)]


def test_a_blocked_graph_has_the_flops_and_units_of_the_nchw_one(caplog):
    from tvm_ios.passes.blocked_layout import BlockedLayout
    from tvm_ios.testing import dag_model

    mod = dag_model(seed=2, num_ops=4, channels=16, size=6)[0]
    with caplog.at_level(logging.WARNING):
        blocked = op_graph(BlockedLayout(16)(mod))
    plain = op_graph(mod)
    assert "not known" not in caplog.text  # layout transforms are data movement, like concat
    assert [n.flops for n in blocked.nodes] == [n.flops for n in plain.nodes]
    assert blocked.edges == plain.edges
