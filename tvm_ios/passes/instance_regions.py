"""Emission items of ``RProgramPass(policy="instances")``: GraphTurbo instances as rTasks.

Reads the plan ``SplitInstances`` recorded, finds the instance of every op of the op graph
by the ``gt<sg>_<k>_`` names of its bindings (``SplitInstances(outline=False)`` keeps them
inline), runs :func:`~tvm_ios.kernels.instance_policy.instances_policy` and checks every
program with the simulator (no deadlock, every data dependency ordered by a barrier or by
its vEU's order) and its kept tensors (every reader on the same vEU).
"""
from __future__ import annotations

import logging

from tvm import relax

from .. import _tvm
from ..graphturbo.hwspec import HardwareSpec
from ..graphturbo.instances import Instance
from ..kernels.instance_policy import instances_policy
from ..kernels.policies import resident_veus
from ..kernels.program_regions import binding_deps
from ..kernels.veu_memory import STATIC_SHARED_BYTES
from ..kernels.interpreter import check_dependencies, simulate
from ..schedule.schedule import Schedule, Stage
from . import graphturbo_attr as _graphturbo_attr
from .instance_emitter import instance_tag

__all__ = ["plan_instance_items", "instance_of_nodes"]

logger = logging.getLogger(__name__)

def instance_of_nodes(graph, members, bindings, plan: dict) -> dict:
    """Node name -> instance id, from the ``gt<sg>_<k>_`` names of the node's bindings."""
    ids = {(i["sg"], i["k"]): i["id"] for i in plan["split"]["instances"]}
    out = {}
    for node in graph.nodes:
        tags = {instance_tag(_tvm.var_name(bindings[b].var)) for b in members[node.name]}
        calls = [b for b in members[node.name] if isinstance(bindings[b].value, relax.Call)
                 and isinstance(bindings[b].value.op, relax.GlobalVar)]
        if calls:
            raise ValueError("RProgramPass(policy='instances'): instances are outlined "
                             "functions; run SplitInstances(outline=False)")
        tag = tags.pop() if len(tags) == 1 else None
        if tag not in ids:
            raise ValueError(f"RProgramPass(policy='instances'): op {node.name!r} belongs to "
                             "no single GraphTurbo instance; run SplitInstances and "
                             "OrderInstances right before it")
        out[node.name] = ids[tag]
    return out


def _external(graph, members, bindings) -> set:
    """Nodes whose output is read by a binding of no node, or leaves the dataflow block."""
    owned = {b for name in members for b in members[name]}
    deps = binding_deps(bindings)
    readers: dict[int, list[int]] = {}
    for i, ds in enumerate(deps):
        for d in ds:
            readers.setdefault(d, []).append(i)
    out = set()
    for node in graph.nodes:
        last = members[node.name][-1]
        if not isinstance(bindings[last].var, relax.DataflowVar) or any(
                r not in owned for r in readers.get(last, [])):
            out.add(node.name)
    return out


def plan_instance_items(mod, ext, graph, members, rops, backend, func_name: str,
                        max_ops: int | None) -> tuple[Schedule, list]:
    """The unit schedule to record and the emission items (see :func:`plan_regions`)."""
    record = _graphturbo_attr.load(mod, func_name)
    if "plan" not in record:
        raise ValueError(f"RProgramPass(policy='instances'): no GraphTurbo plan recorded for "
                         f"{func_name!r}; run SplitInstances(outline=False) and "
                         "OrderInstances first")
    plan = record["plan"]
    bindings = list(ext.func.body.blocks[ext.block_index].bindings)
    node_instance = instance_of_nodes(graph, members, bindings, plan)
    instances = [Instance(**{**i, "box": tuple(tuple(b) for b in i["box"])})
                 for i in plan["split"]["instances"]]
    widest = max(sum(1 for i in instances if i.sg == sg) for sg in {i.sg for i in instances})
    vdevice = backend.vdevice
    if vdevice.kind == "cpu":
        limit = vdevice.sms
        fast = HardwareSpec(**record["hw"]).local_capacity
    else:
        limit = resident_veus(vdevice, list(rops.values()))
        fast = STATIC_SHARED_BYTES
    external = _external(graph, members, bindings)
    items = instances_policy(graph, rops, instances, plan["order"], node_instance,
                             max(1, min(limit, widest)), external, fast, max_ops,
                             name=f"{func_name}_gt")
    edges = [(graph.nodes[u].name, graph.nodes[v].name) for u, v in graph.edges]
    out, stages = [], []
    units = set(ext.graph.index)
    for kind, what in items:
        if kind == "own":
            out.extend(("op", n) for n in what)
            stages.extend(Stage([[n]]) for n in what if n in units)
            continue
        simulate(what)
        check_dependencies(what, edges)
        _check_local(what, graph)
        ops = sorted(what.ops, key=graph.index.get)
        out.append(("region", ops, what))
        stages.append(Stage([[op for op in ops if op in units]]))
    schedule = Schedule([s for s in stages if s.ops],
                        graph={"name": ext.graph.name, "num_ops": len(ext.graph),
                               "fingerprint": ext.graph.fingerprint()},
                        params={"scheduler": "graphturbo-instances"})
    return schedule, out


def _check_local(program, graph) -> None:
    """Every reader of a kept tensor runs on the tensor's vEU (else it would read garbage)."""
    where = {}
    for v, tasks in enumerate(program.prog):
        for task in tasks:
            if task.kind == "compute":
                where.setdefault(task.op, set()).add(v)
    for op, v in program.meta["local_ops"].items():
        for reader in graph.names_of(graph.succ[graph.index[op]]):
            if where.get(reader) != {v}:
                raise RuntimeError(f"instances policy: {op} is kept on vEU {v} but {reader} "
                                   f"runs on {sorted(where.get(reader, ()))}")
