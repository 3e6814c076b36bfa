"""merge_plan: which convolutions merge exactly, and the merged shape."""
from tvm_ios.graph.opgraph import OpGraph, OpNode
from tvm_ios.schedule.merge import merge_plan


def conv(name, kernel, padding, **overrides):
    attrs = {"input": "%1", "kernel": list(kernel), "strides": [1, 1], "padding": list(padding),
             "dilation": [1, 1], "groups": 1, "channels": 4, "in_channels": 8,
             "epilogue": ["add:c", "relu"], "bias": True, "data_layout": "NCHW",
             "kernel_layout": "OIHW"}
    attrs.update(overrides)
    shape = overrides.pop("shape", (1, 4, 8, 8))
    return OpNode(name, kind="conv2d", shape=shape, attrs=attrs)


def graph_of(*nodes):
    return OpGraph(list(nodes), [])


def test_inception_1x3_3x1_and_1x1_merge_to_3x3():
    graph = graph_of(conv("a", (1, 1), (0, 0, 0, 0)), conv("b", (1, 3), (0, 1, 0, 1)),
                     conv("c", (3, 1), (1, 0, 1, 0)))
    plan = merge_plan(graph, [2, 0, 1])
    assert plan.ops == (0, 1, 2) and plan.kernel == (3, 3)
    assert plan.padding == (1, 1, 1, 1)
    assert plan.pads == ((1, 1, 1, 1), (1, 0, 1, 0), (0, 1, 0, 1))
    assert plan.out_channels == 12


def test_refusals():
    base = conv("a", (3, 3), (1, 1, 1, 1))
    assert merge_plan(graph_of(base), [0]) is None  # one op
    for other in [conv("b", (3, 3), (1, 1, 1, 1), input="%2"),
                  conv("b", (3, 3), (1, 1, 1, 1), strides=[2, 2]),
                  conv("b", (3, 3), (1, 1, 1, 1), dilation=[2, 2]),
                  conv("b", (3, 3), (1, 1, 1, 1), epilogue=["add:c"]),
                  conv("b", (2, 2), (0, 0, 1, 1)),            # cannot be centred
                  conv("b", (1, 1), (1, 1, 1, 1)),            # padding differs once centred
                  conv("b", (3, 3), (1, 1, 1, 1), groups=2)]:
        assert merge_plan(graph_of(base, other), [0, 1]) is None, other.attrs
    pool = OpNode("p", kind="pool", shape=(1, 4, 8, 8))
    assert merge_plan(graph_of(base, pool), [0, 1]) is None
