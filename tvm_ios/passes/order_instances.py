"""``OrderInstances``: put GraphTurbo's instances in the order the plan chose.

Reads the plan ``SplitInstances`` recorded (BFS or Algorithm 3's DFS, whichever uses the
local buffer better) and re-emits the dataflow block: weight-only bindings first, then the
bindings of each instance (its slices, gathers and ops, recognised by their ``gt<sg>_<k>_``
names) in plan order, then the whole outputs.
"""
from __future__ import annotations

import logging

from tvm import relax

from .. import _tvm
from . import graphturbo_attr as _graphturbo_attr
from .instance_emitter import instance_tag

__all__ = ["OrderInstances"]

logger = logging.getLogger(__name__)


@_tvm.mutator
class _Reorder(_tvm.PyExprMutator):
    def __init__(self, order: list[tuple[int, int]], mod=None):
        super().__init__(mod)
        self.rank = {tag: r for r, tag in enumerate(order)}

    def visit_dataflow_block_(self, block):
        head, tail, segments = [], [], {}
        late: set = set()
        for b in block.bindings:
            tag = instance_tag(_tvm.var_name(b.var))
            if tag is not None:
                if tag not in self.rank:
                    raise ValueError(f"OrderInstances: instance {tag} is not in the plan")
                segments.setdefault(self.rank[tag], []).append(b)
                late.add(b.var)
                continue
            used = []
            relax.analysis.post_order_visit(b.value, lambda n: used.append(n)
                                            if isinstance(n, relax.Var) and n in late else None)
            if used:
                tail.append(b)
                late.add(b.var)
            else:
                head.append(b)
        if not segments:
            return super().visit_dataflow_block_(block)
        self.builder_._begin_dataflow_block()
        for b in head + [b for r in sorted(segments) for b in segments[r]] + tail:
            self.builder_.emit_normalized(b)
        return self.builder_._end_block()


@_tvm.module_pass(opt_level=0, name="tvm_ios.OrderInstances")
class OrderInstances:
    """Reorder instances emitted by ``SplitInstances`` into the plan's order.

    Parameters
    ----------
    func_name : str
        The function to reorder.
    """

    def __init__(self, func_name: str = "main"):
        self.func_name = func_name

    def transform_module(self, mod, ctx):  # noqa: D102  (tvm.transform protocol)
        record = _graphturbo_attr.load(mod, self.func_name)
        if "plan" not in record:
            raise ValueError(f"OrderInstances: no GraphTurbo plan recorded for "
                             f"{self.func_name!r}; run SplitInstances first")
        plan = record["plan"]
        tags = {i["id"]: (i["sg"], i["k"]) for i in plan["split"]["instances"]}
        order = [tags[i] for i in plan["order"]]
        new_func = _Reorder(order, mod).visit_expr(mod[self.func_name])
        mod = mod.clone() if hasattr(mod, "clone") else mod
        mod[mod.get_global_var(self.func_name)] = new_func
        record["emitted"] = plan["chosen"]
        logger.info("OrderInstances: %d instances in %s order", len(order), plan["chosen"])
        return _graphturbo_attr.store(mod, self.func_name, record)
