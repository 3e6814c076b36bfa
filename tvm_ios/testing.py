"""Random DAG-like Relax models for tests and benchmarks of the schedulers and engines."""
from __future__ import annotations

import numpy as np
from tvm import relax

__all__ = ["dag_model", "MergeFriendly"]


def dag_model(seed: int = 0, num_ops: int = 8, channels: int = 4, size: int = 8,
              p: float = 0.35, max_fanin: int = 3):
    """A random DAG of conv(+bias)+relu units; joins are sums; returns (IRModule, params).

    With ``max_fanin=1`` no free op joins branches (a tree of forks). Unit ``v`` reads the sum of the outputs of its predecessors (the input when it has none);
    the model returns the sum of the outputs nobody reads.
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
                w = relax.const(rng.standard_normal((channels, channels, k, k)).astype("float32") * 0.3)
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


class MergeFriendly:
    """A cost model under which merging is cheap and every op costs the same: it makes IOS
    merge wherever merging is legal, so tests exercise the merge rewrite."""

    def stage_latency(self, graph, groups):
        return 10.0 * sum(len(g) for g in groups)

    def merged_latency(self, graph, ops):
        return 1.0
