"""Models for tests, tutorials and benchmarks: random DAG-like Relax models for the schedulers
and engines, random CNNs for the fuzzer (:mod:`.random_cnn`, :mod:`.fuzz`), and ONNX files
of the kind old exporters wrote (for the ONNX import)."""
from __future__ import annotations

import numpy as np
from tvm import relax

# The function shadows its module's name here on purpose: tvm_ios.testing.random_cnn(seed).
from .random_cnn import build_cnn, random_cnn, random_spec

__all__ = ["dag_model", "dead_taps_model", "repeated_calls_model", "MergeFriendly", "onnx_inception_like",
           "onnx_random_weights", "random_cnn", "random_spec", "build_cnn"]


def dag_model(seed: int = 0, num_ops: int = 8, channels: int = 4, size: int = 8,
              p: float = 0.35, max_fanin: int = 3):
    """A random DAG of conv(+bias)+relu units; joins are sums; returns (IRModule, params).

    With ``max_fanin=1`` no free op joins branches (a tree of forks). Unit ``v`` reads the
    sum of the outputs of its predecessors (the input when it has none); the model returns
    the sum of the outputs nobody reads.
    """
    rng = np.random.default_rng(seed)
    preds = [[u for u in range(v) if rng.random() < p][:max_fanin] for v in range(num_ops)]
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, channels, size, size), "float32"))
    params = {}
    with bb.function("main", [x]):
        with bb.dataflow():
            outs, used = [], set()
            for v in range(num_ops):
                inp = x
                if preds[v]:
                    inp = outs[preds[v][0]]
                    for u in preds[v][1:]:
                        inp = bb.emit(relax.op.add(inp, outs[u]))
                    used.update(preds[v])
                k = int(rng.choice([1, 3]))
                w = relax.const(rng.standard_normal((channels, channels, k, k))
                                .astype("float32") * 0.3)
                b = relax.const(rng.standard_normal((1, channels, 1, 1)).astype("float32") * 0.1)
                conv = bb.emit(relax.op.nn.conv2d(inp, w, padding=[k // 2] * 2))
                outs.append(bb.emit(relax.op.nn.relu(bb.emit(relax.op.add(conv, b))),
                                    f"op{v}"))
            tails = [outs[v] for v in range(num_ops) if v not in used]
            res = tails[0]
            for t in tails[1:]:
                res = bb.emit(relax.op.add(res, t))
            gv = bb.emit_output(res)
        bb.emit_func_output(gv)
    return bb.get(), params


class Concurrent:
    """A cost model pricing a stage by its longest group and never merging: IOS runs
    independent ops together (what makes a concurrent stage, an rProgram, in tests)."""

    def stage_latency(self, graph, groups):
        return 10.0 * max(len(g) for g in groups)

    def merged_latency(self, graph, ops):
        return None


class MergeFriendly:
    """A cost model under which merging is cheap and every op costs the same: it makes IOS
    merge wherever merging is legal, so tests exercise the merge rewrite."""

    def stage_latency(self, graph, groups):
        return 10.0 * sum(len(g) for g in groups)

    def merged_latency(self, graph, ops):
        return 1.0


def dead_taps_model(seed: int = 0, channels: int = 8):
    """Two branches of a 1x7 and a 7x1 convolution (weights bound) on a 3x3 map, then their
    concatenation: the outer two taps of each kernel read only padding."""
    rng = np.random.default_rng(seed)
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, channels, 3, 3), "float32"))

    def conv(kernel, padding):
        w = relax.const(rng.standard_normal((channels, channels, *kernel)).astype("float32"))
        return bb.emit(relax.op.nn.relu(bb.emit(relax.op.nn.conv2d(x, w, padding=padding))))
    with bb.function("main", [x]):
        with bb.dataflow():
            a, b = conv((1, 7), (0, 3, 0, 3)), conv((7, 1), (3, 0, 3, 0))
            gv = bb.emit_output(bb.emit(relax.op.concat([a, b], axis=1)))
        bb.emit_func_output(gv)
    return bb.get()


def repeated_calls_model(seed: int = 0, channels: int = 8, size: int = 6):
    """A 1x1 convolution whose output two branches each apply ReLU to before a 3x3
    convolution (weights bound), and the input averaged twice, all concatenated: calls
    repeated as NASNet-A's cells repeat them (2 of the 8 calls repeat one). Computed once,
    the one ReLU is the 1x1 convolution's only reader and fuses into its kernel."""
    rng = np.random.default_rng(seed)
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, channels, size, size), "float32"))

    def conv(data, kernel, padding):
        w = relax.const(rng.standard_normal((channels, channels, kernel, kernel)).astype(
            "float32"))
        return bb.emit(relax.op.nn.conv2d(data, w, padding=padding))

    def avg():
        return bb.emit(relax.op.nn.avg_pool2d(x, 3, padding=1, count_include_pad=False))
    with bb.function("main", [x]):
        with bb.dataflow():
            stem = conv(x, 1, 0)
            a, b = (conv(bb.emit(relax.op.nn.relu(stem)), 3, 1) for _ in range(2))
            pooled = bb.emit(relax.op.add(avg(), avg()))
            gv = bb.emit_output(bb.emit(relax.op.concat([a, b, pooled], axis=1)))
        bb.emit_func_output(gv)
    return bb.get()


def onnx_inception_like(path, seed: int = 0, opset: int = 9, size: int = 14,
                        legacy: bool = True, lrn: bool = True):
    """Write an ONNX file of the kind real exporters wrote, with an Inception block.

    stem conv -> LRN -> {1x1; 1x1 -> 3x3; 3x3; maxpool -> 1x1} -> concat -> 1x1 ->
    global average pool -> Gemm -> Softmax, on ``(1, 8, size, size)``. With ``legacy``
    (the default) it is written as old exporters did: IR version 3, every initializer also
    listed as a graph input, and each weight computed by a constant subgraph
    (``Mul(ConstantOfShape(shape, 0.02), scale)``); otherwise as plain initializers.
    ``lrn=False`` leaves the LRN out (onnx 1.23's reference evaluator computes LRN wrongly
    for all channels but the first). Needs ``onnx``. Returns the path.
    """
    from onnx import TensorProto, helper, numpy_helper, save

    rng = np.random.default_rng(seed)
    nodes, inits = [], []

    def weight(name, shape):
        value = (rng.standard_normal(shape) * np.sqrt(2.0 / np.prod(shape[1:]))).astype("float32")
        if not legacy:
            inits.append(numpy_helper.from_array(value, name))
            return name
        inits.append(numpy_helper.from_array(np.asarray(shape, "int64"), f"{name}_shape"))
        inits.append(numpy_helper.from_array((value / 0.02).astype("float32"), f"{name}_scale"))
        fill = helper.make_tensor("value", TensorProto.FLOAT, [1], [0.02])
        nodes.append(helper.make_node("ConstantOfShape", [f"{name}_shape"], [f"{name}_base"],
                                      value=fill))
        nodes.append(helper.make_node("Mul", [f"{name}_base", f"{name}_scale"], [name]))
        return name

    def conv(name, x, cin, cout, k):
        bias = f"{name}_b"
        inits.append(numpy_helper.from_array(
            rng.standard_normal(cout).astype("float32") * 0.1, bias))
        nodes.append(helper.make_node("Conv", [x, weight(f"{name}_w", (cout, cin, k, k)), bias],
                                      [name], pads=[k // 2] * 4, kernel_shape=[k, k]))
        nodes.append(helper.make_node("Relu", [name], [f"{name}_r"]))
        return f"{name}_r"

    stem = conv("stem", "x", 8, 16, 3)
    nodes.append(helper.make_node("LRN", [stem], ["lrn"], size=3, alpha=1e-4, beta=0.75)
                 if lrn else helper.make_node("Identity", [stem], ["lrn"]))
    a = conv("a", "lrn", 16, 8, 1)
    b = conv("b2", conv("b1", "lrn", 16, 8, 1), 8, 8, 3)
    c = conv("c", "lrn", 16, 8, 3)
    nodes.append(helper.make_node("MaxPool", ["lrn"], ["pool"], kernel_shape=[3, 3],
                                  pads=[1, 1, 1, 1]))
    d = conv("d", "pool", 16, 8, 1)
    nodes.append(helper.make_node("Concat", [a, b, c, d], ["cat"], axis=1))
    e = conv("e", "cat", 32, 16, 1)
    nodes.append(helper.make_node("GlobalAveragePool", [e], ["gap"]))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"]))
    inits.append(numpy_helper.from_array(
        rng.standard_normal(10).astype("float32"), "fc_b"))
    nodes.append(helper.make_node("Gemm", ["flat", weight("fc_w", (10, 16)), "fc_b"],
                                  ["logits"], transB=1))
    nodes.append(helper.make_node("Softmax", ["logits"], ["prob"]))
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, size, size])]
    if legacy:
        inputs += [helper.make_tensor_value_info(i.name, i.data_type, list(i.dims))
                   for i in inits]
    graph = helper.make_graph(nodes, "inception_like", inputs,
                              [helper.make_tensor_value_info("prob", TensorProto.FLOAT,
                                                             [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="tvm-ios tests")
    model.ir_version = 3 if legacy else max(model.ir_version, 4)
    save(model, str(path))
    return path


def _weight_scale(rng, shape, consumer: str, index: int):
    """Random multipliers giving a weight (input ``index`` of a ``consumer`` node) a sane
    scale: positive for batch-norm scales and variances, He for conv and Gemm weights."""
    if consumer == "BatchNormalization" and index in (1, 4):
        return rng.uniform(0.5, 1.5, shape)
    if len(shape) >= 2:
        return rng.standard_normal(shape) * np.sqrt(2.0 / np.prod(shape[1:]))
    return rng.standard_normal(shape) * 0.1  # biases, means


def onnx_random_weights(model, seed: int = 0):
    """A copy of an ONNX model whose ``ConstantOfShape`` weights get random values, in the
    file's own style: each becomes ``Mul(ConstantOfShape(shape), scale)``, a constant
    subgraph, with ``scale`` an initializer also listed as a graph input.

    The small models in ``onnx/backend/test/data/light`` fill every weight with 0.02, so
    every channel computes the same thing and their output is uniform; this makes a file of
    the same kind whose outputs tell a wrong rewrite apart. Needs ``onnx``.
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph, rng = out.graph, np.random.default_rng(seed)
    shapes = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    users = {name: (n.op_type, k) for n in graph.node for k, name in enumerate(n.input)}
    nodes = []
    for node in graph.node:
        nodes.append(node)
        if node.op_type != "ConstantOfShape" or node.input[0] not in shapes:
            continue
        name = node.output[0]
        fill = numpy_helper.to_array(node.attribute[0].t).item() or 1.0
        shape = tuple(int(d) for d in shapes[node.input[0]])
        scale = (_weight_scale(rng, shape, *users.get(name, ("", 0))) / fill).astype("float32")
        node.output[0] = f"{name}__base"
        nodes.append(helper.make_node("Mul", [f"{name}__base", f"{name}__scale"], [name]))
        graph.initializer.append(numpy_helper.from_array(scale, f"{name}__scale"))
        graph.input.append(helper.make_tensor_value_info(f"{name}__scale", TensorProto.FLOAT,
                                                         shape))
    del graph.node[:]
    graph.node.extend(nodes)
    return out
