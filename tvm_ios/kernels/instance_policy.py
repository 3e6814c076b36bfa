"""The ``instances`` policy: GraphTurbo's sub-graph instances as rTasks of rPrograms.

After ``SplitInstances``/``OrderInstances`` every op of the model belongs to one instance
(part ``k`` of sub-graph ``sg``). The policy

* binds every instance to one vEU with GraphTurbo's Algorithm 4 on vEUs
  (:func:`~tvm_ios.graphturbo.binding.bind_veus`): the instances of one sub-graph spread
  over the vEUs, a producer follows its consumer;
* cuts the chosen instance order into rPrograms of at most ``max_ops`` ops (an instance
  with an op that keeps its own kernel runs between programs);
* places the ops of each instance, in order, on its vEU: an op waits (a barrier on the
  step array) only for the rTasks of the ops it reads on other vEUs, so the next
  sub-graph's instance waits for the instances it reads, not for the whole sub-graph;
* keeps on its vEU (``meta["local_ops"]``) every op output read only by ops of the same
  program on the same vEU: the ops inside an instance, and an instance's output when its
  consumers run on its vEU (GraphTurbo's LB scope). While the kept tensors of a vEU would
  exceed ``fast_bytes`` at once, the one live longest goes to global memory (Section 4.3's
  longest-liveness spill).

The backends put kept tensors in the vEU's fast memory (:mod:`~tvm_ios.kernels.veu_memory`):
a per-vEU region of the kernel's workspace on the CPU vDevice, shared memory on CUDA.
"""
from __future__ import annotations

import logging
import math
from collections import defaultdict

from ..graph.opgraph import OpGraph
from ..graphturbo.binding import bind_veus
from .policies import _Builder
from .rprogram import RProgram
from .veu_memory import pack, program_events

#: Default most ops of one instances rProgram: a program's kernel takes LLVM superlinearly
#: longer to compile with its size (62 ops of MobileNet-v2: about 60 s; 16 ops: about 5 s
#: on this 2-core machine), and a tensor crossing programs goes to global memory.
INSTANCE_PROGRAM_OPS = 32
#: Bytes per element the fast-memory budget assumes (kept tensors are float32).
KEPT_ITEMSIZE = 4

__all__ = ["instances_policy", "chunk_order", "INSTANCE_PROGRAM_OPS"]

logger = logging.getLogger(__name__)


def chunk_order(order: list[int], nodes_of: dict, fixed: set, max_ops: int | None) -> list:
    """Cut the instance order into rPrograms of at most ``max_ops`` ops.

    Returns ``("program", [(instance id, ops), ...])`` items, and ``("own", id)`` for an
    instance with an op that keeps its own kernel. An instance starts a new program when it
    does not fit the current one; one larger than ``max_ops`` is cut, in order, into pieces
    of ``max_ops`` ops (its later pieces run in later programs, on the same vEU).
    """
    out, run, size = [], [], 0

    def flush():
        nonlocal run, size
        if run:
            out.append(("program", run))
        run, size = [], 0
    for i in order:
        ops = list(nodes_of.get(i, ()))
        if i in fixed:
            flush()
            out.append(("own", i))
            continue
        if max_ops is not None and size + len(ops) > max_ops:
            flush()
        while max_ops is not None and len(ops) > max_ops:
            out.append(("program", [(i, ops[:max_ops])]))
            ops = ops[max_ops:]
        if ops:
            run.append((i, ops))
            size += len(ops)
    flush()
    return out


def instances_policy(graph: OpGraph, rops: dict, instances: list, order: list[int],
                     node_instance: dict, num_veus: int, external: set = frozenset(),
                     fast_bytes: int | None = None, max_ops: int | None = None,
                     name: str = "instances") -> list:
    """Plan the instances as rPrograms.

    Parameters
    ----------
    graph : OpGraph
        The op graph with glue nodes; nodes with ``schedulable=False`` keep own kernels.
    rops : dict
        rOperator of every node (its fastest rKernel on one vEU is used).
    instances : list of Instance
        GraphTurbo's instances with their producers.
    order : list of int
        The plan's chosen instance order.
    node_instance : dict
        Node name -> instance id.
    num_veus : int
        vEUs the instances are bound to.
    external : set
        Nodes whose output is also read outside the ops of the graph (never kept).
    fast_bytes : int, optional
        Fast memory of one vEU for kept tensors (None: unbounded).
    max_ops : int, optional
        Most ops of one rProgram.

    Returns
    -------
    list
        ``("program", RProgram)`` and ``("own", [node names])`` items in execution order.
    """
    nodes_of: dict[int, list[str]] = defaultdict(list)
    for node in graph.nodes:  # graph order is the bindings' order
        nodes_of[node_instance[node.name]].append(node.name)
    fixed = {node_instance[n.name] for n in graph.nodes if not n.schedulable}
    work = {i: sum(rops[n].fastest(1).work_us for n in nodes_of[i]) for i in order}
    veu, scope = bind_veus(instances, order, num_veus, work)
    items = []
    for kind, what in chunk_order(order, nodes_of, fixed, max_ops):
        if kind == "own":
            items.append(("own", list(nodes_of[what])))
            continue
        program = _place(graph, rops, what, veu, f"{name}_{len(items)}")
        local = _local_ops(graph, program, external)
        _spill(program, local, graph, fast_bytes)
        ids = list(dict.fromkeys(i for i, _ in what))
        program.meta.update(policy="instances", instances=ids,
                            veus={str(i): veu[i] for i in ids},
                            scopes={str(i): scope[i] for i in ids},
                            local_ops=local, fast_bytes=fast_bytes)
        items.append(("program", program))
    logger.info("instances policy: %d instances on %d vEUs -> %d rPrograms", len(order),
                num_veus, sum(k == "program" for k, _ in items))
    return items


def _place(graph, rops, pieces, veu, name) -> RProgram:
    """Every op of each instance piece on the instance's vEU, in order, after its producers."""
    used = max(veu[i] for i, _ in pieces) + 1
    builder = _Builder(used, name)
    inside = {op for _, ops in pieces for op in ops}
    for i, ops in pieces:
        for op in ops:
            v = graph.index[op]
            preds = [p for p in graph.names_of(graph.pred[v]) if p in inside]
            builder.place(op, rops[op].fastest(1), [veu[i]], preds)
    return builder.program


def _local_ops(graph, program: RProgram, external) -> dict:
    """Ops whose every reader is an op of ``program`` on the same vEU: name -> vEU."""
    where = {}
    for v, tasks in enumerate(program.prog):
        for task in tasks:
            if task.kind == "compute":
                where.setdefault(task.op, set()).add(v)
    local = {}
    for op, veus in where.items():
        if op in external or len(veus) != 1:
            continue
        readers = graph.names_of(graph.succ[graph.index[op]])
        (v,) = veus
        if readers and all(where.get(r) == {v} for r in readers):
            local[op] = v
    return local


def _spill(program: RProgram, local: dict, graph, fast_bytes: int | None) -> None:
    """Drop kept tensors, longest-lived first (on a tie the older), until each vEU's packed
    region (the offsets the backends will use, :func:`~tvm_ios.kernels.veu_memory.pack`) fits
    ``fast_bytes``."""
    if fast_bytes is None:
        return
    touches = {op: ([op], graph.names_of(graph.pred[graph.index[op]])) for op in program.ops}
    events = program_events(program, touches)
    while local:
        elements = {op: math.prod(graph.nodes[graph.index[op]].shape) for op in local}
        sizes = pack(events, elements).sizes
        over = [v for v, size in enumerate(sizes) if size * KEPT_ITEMSIZE > fast_bytes]
        if not over:
            return
        life: dict = {}
        for t, (writes, reads) in enumerate(events[over[0]]):
            for op in writes + reads:
                if local.get(op) == over[0]:
                    life[op] = (life.get(op, (t, t))[0], t)
        victim = max(life, key=lambda op: (life[op][1] - life[op][0], -life[op][0], op))
        del local[victim]
