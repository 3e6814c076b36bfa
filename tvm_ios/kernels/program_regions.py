"""Regions of rPrograms in a Relax function: op graph with glue nodes, stages with glue.

The op graph of :func:`~tvm_ios.graph.extract.extract` folds free ops (concat, residual
add, reshape) into its edges. Inside one rProgram such an op still has to run, between its
producers and its consumers, so :func:`augment` adds a *glue* node for every free binding
that reads an op's output and is read by an op. Policies then place glue like any op.

:func:`plan_regions` runs a policy and turns its rPrograms into emission items: ``("op",
name)`` for an op that keeps its own kernel and ``("region", names, program)``.
"""
from __future__ import annotations

import logging
import math

from tvm import relax

from .. import _tvm
from ..graph.extract import Extraction
from ..graph.opgraph import OpGraph, OpNode
from ..schedule.schedule import Schedule, Stage
from .policies import ios_policy, wavefront_policy
from .interpreter import check_dependencies, simulate

__all__ = ["augment", "binding_deps", "stage_regions", "plan_regions", "MAX_PROGRAM_OPS"]

logger = logging.getLogger(__name__)

#: Most ops of one wavefront rProgram: beyond, the next wave starts a new program (one kernel
#: of NASNet's 639 ops takes LLVM longer than a test run to compile).
MAX_PROGRAM_OPS = 64


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


def plan_regions(unit_graph: OpGraph, graph: OpGraph, rops: dict, vdevice, policy: str,
                 schedule: Schedule | None = None, name: str = "main",
                 max_ops: int | None = MAX_PROGRAM_OPS,
                 balance: bool = False) -> tuple[Schedule, list]:
    """Plan rPrograms and the emission items of a function.

    Parameters
    ----------
    unit_graph : OpGraph
        The extracted op graph (units only).
    graph : OpGraph
        The same with glue nodes (:func:`augment`); ops with ``schedulable=False`` keep
        their own kernels.
    rops : dict
        rOperator of every node of ``graph``.
    policy : {"ios", "wavefront"}
        With ``"ios"``, ``schedule`` (a schedule of ``unit_graph``) gives the stages.
    max_ops : int, optional
        Most ops of one wavefront rProgram (None: no bound, Rammer's whole-graph programs).
    balance : bool
        Let the ios policy cut ops into slices over all vEUs (CPU; :func:`balanced_plan`).

    Returns
    -------
    (Schedule, list)
        The unit schedule to record, and items ``("op", name)`` or
        ``("region", names, RProgram)`` in emission order. Every program has been
        simulated (no deadlock) and checked against the data flow.
    """
    if policy == "ios":
        staged = stage_regions(graph, schedule)
        fixed = {n.name for n in graph.nodes if not n.schedulable}
        runnable = Schedule([part for s in staged.stages for part in
                             ([s] if not fixed & set(s.ops) else [Stage([[op]]) for op in s.ops])])
        for stage in staged.stages:
            if fixed & set(stage.ops) and len(stage.groups) > 1:
                logger.warning("stage with %s keeps its ops' own kernels",
                               sorted(fixed & set(stage.ops))[:3])
        programs = dict(ios_policy(graph, runnable, rops, vdevice, num_veus=None,
                                   name=f"{name}_ios", balance=balance))
        items = []
        for si, stage in enumerate(runnable.stages):
            if si in programs:
                items.append(("region", stage.ops, programs[si]))
            else:
                items.extend(("op", op) for op in stage.ops)
    else:
        programs = wavefront_policy(graph, rops, vdevice, name=f"{name}_wave", max_ops=max_ops)
        schedule, items = _wavefront_items(graph, unit_graph, programs)
    edges = [(graph.nodes[u].name, graph.nodes[v].name) for u, v in graph.edges]
    for item in items:
        if item[0] == "region":
            simulate(item[2])
            check_dependencies(item[2], edges)
    return schedule, items


def _wavefront_items(graph, unit_graph, programs) -> tuple[Schedule, list]:
    """Items and a unit schedule: one single-group stage per multi-op rProgram."""
    stages, items = [], []
    for program in programs:
        ops = sorted(program.ops, key=graph.index.get)
        units = [op for op in ops if op in unit_graph.index]
        fixed = any(not graph.nodes[graph.index[op]].schedulable for op in ops)
        if fixed or len(units) < 2:
            stages.extend(Stage([[op]]) for op in units)
            items.extend(("op", op) for op in ops)
            continue
        stages.append(Stage([units]))
        items.append(("region", ops, program))
    schedule = Schedule(stages, graph={"name": unit_graph.name, "num_ops": len(unit_graph),
                                       "fingerprint": unit_graph.fingerprint()},
                        params={"scheduler": "rammer-wavefront"})
    return schedule, items
