"""The layer graph of Relax functions: units plus free activation ops; bad input."""
import pytest
import tvm
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R

from tvm_ios.graphturbo.layers import GraphTurboError, layer_graph


@I.ir_module
class Residual:
    @R.function
    def main(x: R.Tensor((1, 4, 8, 8), "float32"), w: R.Tensor((4, 4, 3, 3), "float32"),
             b: R.Tensor((1, 4, 1, 1), "float32")):
        R.func_attr({"num_input": 1})
        with R.dataflow():
            c = R.nn.conv2d(x, w, padding=[1, 1, 1, 1])
            cb = R.add(c, b)
            t = R.nn.relu(cb)
            c2 = R.nn.conv2d(t, w, padding=[1, 1, 1, 1])
            s = R.add(c2, t)
            y = R.nn.relu(s)
            p = R.nn.max_pool2d(y, pool_size=[2, 2], strides=[2, 2])
            gv = R.concat((p, p), axis=1)
            R.output(gv)
        return gv


def test_units_and_free_layers():
    lg = layer_graph(Residual["main"])
    kinds = [n.kind for n in lg.graph.nodes]
    assert kinds == ["conv2d", "conv2d", "add+relu", "max_pool2d", "concat"]
    assert lg.graph.edges == [(0, 1), (0, 2), (1, 2), (2, 3), (3, 4)]
    assert [lg.infos[b].rule for b in lg.bindings[0]] == ["window", "map", "map"]
    assert lg.infos[lg.bindings[4][0]].axis == 1
    assert lg.outputs == [4]


def test_dynamic_shape_is_refused():
    n = tvm.tirx.Var("n", "int64")
    x = relax.Var("x", relax.TensorType((n, 4, 8, 8), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.nn.relu(x))
        bb.emit_func_output(out)
    with pytest.raises(GraphTurboError, match="dynamic or unknown shape"):
        layer_graph(bb.get()["main"])
