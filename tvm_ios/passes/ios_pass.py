"""``IOSPass``: schedule a Relax function with IOS and apply the schedule.

Usable anywhere a TVM pass is::

    mod = tvm.transform.Sequential([relax.transform.BindParams("main", params),
                                    IOSPass(max_group_size=3, max_num_groups=8)])(mod)

The pass extracts the op graph, runs the IOS search
(:func:`~tvm_ios.schedule.ios.ios_schedule`) with the injected cost model, then rewrites
through :class:`ApplySchedule`'s mechanics: merged convolutions, bindings in stage order,
and the schedule recorded on the module (:func:`schedule_of`). After GraphTurbo's
``OrderInstances`` the search keeps to its order of instances
(:func:`~tvm_ios.passes.instance_order.graphturbo_ranks`).
"""
from __future__ import annotations

import logging

from .. import _tvm
from ..cost.analytical import AnalyticalCostModel
from ..graph.blocks import DEFAULT_MAX_BLOCK_BOUND, DEFAULT_MAX_BLOCK_SIZE
from ..graph.extract import extract
from ..schedule.ios import ios_schedule
from .apply_schedule import apply_to_function
from .instance_order import graphturbo_ranks

__all__ = ["IOSPass"]

logger = logging.getLogger(__name__)


@_tvm.module_pass(opt_level=0, name="tvm_ios.IOSPass")
class IOSPass:
    """Inter-operator scheduling of a Relax function.

    Parameters
    ----------
    cost_model : CostModel, optional
        Prices stages (default: :class:`~tvm_ios.cost.analytical.AnalyticalCostModel`).
    max_group_size : int
        r, ops per group.
    max_num_groups : int
        s, groups per stage.
    strategy : {"both", "parallel", "merge"}
        Parallelization strategies to consider.
    func_name : str
        The function to schedule.
    max_block_size, max_block_bound : int, float
        Segments larger than this, or with a larger transition bound, are cut (as in
        :func:`~tvm_ios.schedule.ios.ios_schedule`).
    """

    def __init__(self, cost_model=None, max_group_size: int = 3, max_num_groups: int = 8,
                 strategy: str = "both", func_name: str = "main",
                 max_block_size: int = DEFAULT_MAX_BLOCK_SIZE,
                 max_block_bound: float = DEFAULT_MAX_BLOCK_BOUND):
        if max_group_size < 1 or max_num_groups < 1:
            raise ValueError(f"IOSPass: r and s must be >= 1, got r={max_group_size}, "
                             f"s={max_num_groups}")
        self.cost_model = cost_model or AnalyticalCostModel()
        self.options = dict(max_group_size=max_group_size, max_num_groups=max_num_groups,
                            strategy=strategy, max_block_size=max_block_size,
                            max_block_bound=max_block_bound)
        self.func_name = func_name

    def transform_module(self, mod, ctx):
        if self.func_name not in [gv.name_hint for gv in mod.get_global_vars()]:
            raise ValueError(f"IOSPass: module has no function {self.func_name!r}")
        ext = extract(mod[self.func_name], name=self.func_name)
        order = graphturbo_ranks(mod, self.func_name, ext)
        schedule = ios_schedule(ext.graph, self.cost_model, order=order, **self.options)
        logger.info("IOSPass: %s", str(schedule).splitlines()[0])
        return apply_to_function(mod, self.func_name, ext, schedule)
