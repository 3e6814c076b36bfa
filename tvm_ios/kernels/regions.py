"""Regions of rPrograms in a Relax function: op graph with glue nodes, stages with glue.

The op graph of :func:`~tvm_ios.graph.extract.extract` folds free ops (concat, residual
add, reshape) into its edges. Inside one rProgram such an op still has to run, between its
producers and its consumers, so :func:`augment` adds a *glue* node for every free binding
that reads an op's output and is read by an op. Policies then place glue like any op.

:func:`plan_items` turns a policy's rPrograms into emission items: ``("unit", id)`` for an
op that keeps its own kernel and ``("region", names, program)`` for an rProgram.
"""
from __future__ import annotations

import logging
import math

from tvm import relax

from .. import _tvm
from ..graph.extract import Extraction
from ..graph.opgraph import OpGraph, OpNode
from ..schedule.schedule import Schedule

__all__ = ["augment", "binding_deps", "stage_regions", "glue_free_schedule"]

logger = logging.getLogger(__name__)


def binding_deps(bindings) -> list[list[int]]:
    """For each binding, the indices of the earlier bindings its value reads."""
    position = {b.var: i for i, b in enumerate(bindings)}
    deps = []
    for binding in bindings:
        found: set[int] = set()

        def visit(node):
            if isinstance(node, relax.Var) and node in position:
                found.add(position[node])
        relax.analysis.post_order_visit(binding.value, visit)
        deps.append(sorted(found))
    return deps


def augment(ext: Extraction) -> tuple[OpGraph, dict[str, list[int]]]:
    """The op graph with glue nodes, and the binding indices of every node (by name)."""
    bindings = list(ext.func.body.blocks[ext.block_index].bindings)
    deps = binding_deps(bindings)
    owner = {b: u for u, unit in enumerate(ext.units) for b in unit}
    after_unit = [False] * len(bindings)  # reads an op's output, maybe through free ops
    for i in range(len(bindings)):
        after_unit[i] = any(d in owner or after_unit[d] for d in deps[i])
    feeds_unit = [False] * len(bindings)
    for i in range(len(bindings) - 1, -1, -1):
        if i in owner:
            for d in deps[i]:
                feeds_unit[d] = True
        elif feeds_unit[i]:
            for d in deps[i]:
                feeds_unit[d] = True
    glue = [i for i in range(len(bindings)) if i not in owner and after_unit[i]
            and feeds_unit[i] and _tvm.shape_of(bindings[i].var) is not None
            and isinstance(bindings[i].value, relax.Call)]
    return _build(ext, bindings, deps, owner, glue)


def _build(ext, bindings, deps, owner, glue):
    entries = sorted([(unit[0], "unit", u) for u, unit in enumerate(ext.units)]
                     + [(i, "glue", i) for i in glue])
    names, members, nodes, node_of = set(), {}, [], {}
    for _, kind, key in entries:
        if kind == "unit":
            node = ext.graph.nodes[key]
            node = OpNode(node.name, node.kind, node.shape, node.dtype, node.flops,
                          node.bytes, node.schedulable, dict(node.attrs))
            members[node.name] = list(ext.units[key])
        else:
            var = bindings[key].var
            name = _unique(f"{_tvm.var_name(var)}_glue", names)
            shape = _tvm.shape_of(var)
            node = OpNode(name, "glue", shape, _tvm.dtype_of(var) or "float32",
                          math.prod(shape), 8 * math.prod(shape))
            members[name] = [key]
        names.add(node.name)
        for index in members[node.name]:
            node_of[index] = len(nodes)
        nodes.append(node)
    edges = set()
    for v, node in enumerate(nodes):
        for index in members[node.name]:
            for src in _sources(index, deps, node_of):
                if src != v:
                    edges.add((src, v))
    return OpGraph(nodes, edges, name=ext.graph.name), members


def _sources(index, deps, node_of) -> set[int]:
    """Nodes whose outputs binding ``index`` reads, looking through non-glue free bindings."""
    out, stack, seen = set(), list(deps[index]), set()
    while stack:
        d = stack.pop()
        if d in seen:
            continue
        seen.add(d)
        if d in node_of:
            out.add(node_of[d])
        else:
            stack.extend(deps[d])
    return out


def _unique(name: str, taken: set) -> str:
    base, k = name, 0
    while name in taken:
        k += 1
        name = f"{base}{k}"
    return name


def stage_regions(graph: OpGraph, schedule: Schedule) -> Schedule:
    """The schedule's stages with glue placed in the group of its first consumer."""
    stages = []
    for stage in schedule.stages:
        groups = [list(g) for g in stage.groups]
        in_stage = set(stage.ops)
        for node in graph.nodes:
            if node.kind != "glue":
                continue
            v = graph.index[node.name]
            producers = set(graph.names_of(graph.pred[v]))
            consumers = set(graph.names_of(graph.succ[v]))
            if not producers & in_stage or not consumers & in_stage:
                continue
            for group in groups:
                hit = [i for i, op in enumerate(group) if op in consumers]
                if hit:
                    group.insert(hit[0], node.name)
                    in_stage.add(node.name)
                    break
        stages.append(type(stage)(groups, stage.strategy, stage.latency_us))
    return Schedule(stages, dict(schedule.graph), dict(schedule.params), dict(schedule.stats))
