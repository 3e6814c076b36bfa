"""``SplitInstances``: cut GraphTurbo's sub-graphs into instances computed on slices.

Plans the function with :func:`tvm_ios.graphturbo.plan.plan_graph` (reusing the groups of
``GroupSubgraphs`` when recorded) and rewrites its dataflow block so that each instance is
a call of its own private Relax function (``gt<sg>_<k>_inst``) on slices of its inputs,
instances of one SG after another, with concatenations where a consumer reads several
producer parts. The plan (split, order,
bindings, scopes, memory figures) is recorded on the module for ``OrderInstances``.
"""
from __future__ import annotations

import logging

from tvm import relax

from .. import _tvm
from ..graphturbo.hwspec import HardwareSpec, get_hw
from ..graphturbo.layers import layer_graph
from ..graphturbo.plan import plan_graph
from ..graphturbo.splitinfo import SGContext
from . import graphturbo_attr as _graphturbo_attr
from .instance_emitter import InstanceEmitter, sg_masks

__all__ = ["SplitInstances"]

logger = logging.getLogger(__name__)


@_tvm.module_pass(opt_level=0, name="tvm_ios.SplitInstances")
class SplitInstances:
    """Rewrite a Relax function into GraphTurbo sub-graph instances.

    Parameters
    ----------
    hw : str or HardwareSpec, optional
        Target; default: the one ``GroupSubgraphs`` recorded, else ``dsa``.
    order : {"auto", "bfs", "dfs"}
        Order recorded for ``OrderInstances`` (auto: the better LB use).
    oversize : {"error", "fallback"}
        What to do with a layer too large for the local buffer at any split.
    func_name : str
        The function to rewrite.
    outline : bool
        Make each instance a private Relax function called from ``func_name`` (default);
        False leaves its ops inline.
    """

    def __init__(self, hw=None, order: str = "auto", oversize: str = "error",
                 func_name: str = "main", outline: bool = True):
        self.hw = get_hw(hw) if hw is not None else None
        self.order, self.oversize, self.func_name = order, oversize, func_name
        self.outline = outline

    def transform_module(self, mod, ctx):  # noqa: D102  (tvm.transform protocol)
        if self.func_name not in [gv.name_hint for gv in mod.get_global_vars()]:
            raise ValueError(f"SplitInstances: module has no function {self.func_name!r}")
        record = _graphturbo_attr.load(mod, self.func_name)
        hw = self.hw or (HardwareSpec(**record["hw"]) if "hw" in record else get_hw("dsa"))
        lg = layer_graph(mod[self.func_name], name=self.func_name)
        sgs = sg_masks(lg, record["groups"]) if "groups" in record else None
        plan = plan_graph(lg, hw, order=self.order, oversize=self.oversize, sgs=sgs)
        sgs = sg_masks(lg, [sg["layers"] for sg in plan.sgs])
        splits = [(sg["dim"], sg["factor"]) for sg in plan.sgs]
        order = sorted((i["sg"], i["k"]) for i in plan.split["instances"])
        emitter = InstanceEmitter(SGContext(lg, hw), sgs, splits, order, mod.clone(),
                                  self.outline)  # the builder adds functions to its module
        new_func = relax.analysis.remove_all_unused(emitter.visit_expr(mod[self.func_name]))
        new_mod = emitter.builder_.get()
        new_mod[new_mod.get_global_var(self.func_name)] = new_func
        for key, value in (mod.attrs.items() if mod.attrs is not None else ()):
            new_mod = new_mod.with_attr(key, value)
        mod = new_mod
        record.update(hw=hw.to_dict(), plan=plan.to_dict(), emitted="topological")
        logger.info("SplitInstances: %s", str(plan).splitlines()[0])
        return _graphturbo_attr.store(mod, self.func_name, record)
