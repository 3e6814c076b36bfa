"""GraphTurbo's order of instances as the ranks an IOS search keeps to.

``OrderInstances`` emits the instances in the plan's order and records it (``emitted``); the
schedule passes (``IOSPass``, the rProgram engine's ``IOSSchedule``) then search only the
schedules that run the instances in that order (:mod:`tvm_ios.schedule.order`), so that what
runs is what GraphTurbo's plan sized. The ranks are the scheduler's plain input: one int per
op of the extracted graph.
"""
from __future__ import annotations

import logging

from .. import _tvm
from . import graphturbo_attr
from .instance_emitter import instance_tag

__all__ = ["graphturbo_ranks"]

logger = logging.getLogger(__name__)


def graphturbo_ranks(mod, func_name: str, ext) -> list[int] | None:
    """The rank of every op of ``ext.graph`` in GraphTurbo's order, or None where no order
    was emitted for ``func_name`` (GraphTurbo did not run, or ran without
    ``OrderInstances``).

    An op of an instance (its bindings named ``gt<sg>_<k>_...``) has its instance's position
    in the plan's order; an op outside every instance goes with the instance emitted before
    it (the first one, before any), so that ranks follow the function's order.
    """
    record = graphturbo_attr.load(mod, func_name)
    if "emitted" not in record:
        return None
    plan = record["plan"]
    tags = {i["id"]: (i["sg"], i["k"]) for i in plan["split"]["instances"]}
    rank_of = {tags[i]: r for r, i in enumerate(plan["order"])}
    bindings = list(ext.func.body.blocks[ext.block_index].bindings)
    ranks, current = [], 0
    for unit in ext.units:
        tag = instance_tag(_tvm.var_name(bindings[unit[0]].var))
        if tag is not None:
            current = rank_of[tag]
        ranks.append(current)
    logger.debug("%s: %d ops in %d instances of GraphTurbo's order", func_name, len(ranks),
                 len(rank_of))
    return ranks
