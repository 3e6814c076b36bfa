"""``GroupSubgraphs``: GraphTurbo's grouping (Algorithm 2) of a Relax function's layers.

Records the sub-graphs (lists of layer names) on the module for ``SplitInstances``; the
function itself is unchanged (grouping alone does not change what runs)::

    seq = tvm.transform.Sequential([GroupSubgraphs("dsa"), SplitInstances("dsa"),
                                    OrderInstances()])
"""
from __future__ import annotations

import logging

from .. import _tvm
from ..graphturbo.grouping import group_subgraphs
from ..graphturbo.hwspec import get_hw
from ..graphturbo.layers import layer_graph
from ..graphturbo.splitinfo import SGContext
from . import graphturbo_attr as _graphturbo_attr

__all__ = ["GroupSubgraphs"]

logger = logging.getLogger(__name__)


@_tvm.module_pass(opt_level=0, name="tvm_ios.GroupSubgraphs")
class GroupSubgraphs:
    """Group the layers of a Relax function into sub-graphs sized to the local buffer.

    Parameters
    ----------
    hw : str or HardwareSpec
        Target (``dsa``, ``h100``, ``a100`` or a spec).
    func_name : str
        The function to group.
    """

    def __init__(self, hw="dsa", func_name: str = "main"):
        self.hw = get_hw(hw)
        self.func_name = func_name

    def transform_module(self, mod, ctx):  # noqa: D102  (tvm.transform protocol)
        if self.func_name not in [gv.name_hint for gv in mod.get_global_vars()]:
            raise ValueError(f"GroupSubgraphs: module has no function {self.func_name!r}")
        lg = layer_graph(mod[self.func_name], name=self.func_name)
        grouping = group_subgraphs(SGContext(lg, self.hw))
        record = {"hw": self.hw.to_dict(),
                  "groups": [lg.graph.names_of(m) for m in grouping.sgs],
                  "grouping": grouping.to_dict()}
        logger.info("GroupSubgraphs: %d layers -> %d sub-graphs", len(lg.graph),
                    len(grouping.sgs))
        return _graphturbo_attr.store(mod, self.func_name, record)
