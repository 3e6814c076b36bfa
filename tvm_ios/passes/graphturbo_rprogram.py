"""``GraphTurboRProgramPass``: GraphTurbo's instances run as rTasks of persistent kernels.

One pass for the whole flow, so that a pipeline composes it in one line::

    mod = GraphTurboRProgramPass(hw="cpu", target="llvm")(mod)
    ex = tvm.compile(mod, "llvm")

It runs ``GroupSubgraphs``, ``SplitInstances(outline=False)``, ``OrderInstances`` and
``RProgramPass(policy="instances")``: the instances of the sub-graphs become rTasks of
rPrograms, bound to vEUs by GraphTurbo's core binding on vEUs, each waiting only for the
instances it reads, with the tensors of an instance (and its output, when its consumers run
on the same vEU) kept in the vEU's fast memory. The record GraphTurbo keeps on the module
(``tvm_ios.graphturbo``) gains ``rprogram``: the programs, the binding, the scopes and the
activation traffic of the original, of the instances run one at a time and of the rTasks.
"""
from __future__ import annotations

import logging

from .. import _tvm
from ..graph.extract import extract
from ..graphturbo.hwspec import get_hw
from ..kernels.instance_policy import INSTANCE_PROGRAM_OPS
from ..kernels.program_regions import augment
from ..kernels.traffic import activation_traffic
from . import graphturbo_attr
from .group_subgraphs import GroupSubgraphs
from .order_instances import OrderInstances
from .rprogram_pass import RProgramPass
from .split_instances import SplitInstances

__all__ = ["GraphTurboRProgramPass", "default_hw"]

logger = logging.getLogger(__name__)


def default_hw(target) -> str:
    """The GraphTurbo preset matching a target's vEUs: ``cpu`` or ``<gpu>-block``."""
    target = _tvm.make_target(target)
    if target.kind.name == "llvm":
        return "cpu"
    arch = str(target.attrs.get("arch", "sm_90"))
    return "a100-block" if arch.startswith("sm_8") else "h100-block"


@_tvm.module_pass(opt_level=0, name="tvm_ios.GraphTurboRProgramPass")
class GraphTurboRProgramPass:
    """Group, split and order GraphTurbo instances, then run them as rTasks.

    Parameters
    ----------
    hw : str or HardwareSpec, optional
        What instances are sized for (default: :func:`default_hw` of ``target``: one vEU's
        fast memory).
    target : str, dict or Target
        ``llvm`` (the CPU vDevice) or a CUDA target.
    num_veus : int, optional
        vEUs on the CPU vDevice (default: the thread pool's workers).
    order, oversize : str
        As for :class:`~tvm_ios.passes.split_instances.SplitInstances`.
    max_ops : int, optional
        Most ops of one rProgram (default
        :data:`~tvm_ios.kernels.instance_policy.INSTANCE_PROGRAM_OPS`).
    func_name : str
        The function to rewrite.
    kernels : KernelDB, optional
        Tuned kernels for the CPU vDevice's vEUs, as for
        :class:`~tvm_ios.passes.rprogram_pass.RProgramPass` (tuned for whole ops: an
        instance's op on a slice has another shape, found in the database only if tuned too).
    check_waits, check_args : bool
        As for :class:`~tvm_ios.passes.rprogram_pass.RProgramPass` (GPU targets): each
        program's bounded-wait record checked after the call; TVM's argument checks in the
        kernels' host stubs. Both off: a timing build.
    """

    def __init__(self, hw=None, target="llvm", num_veus: int | None = None,
                 order: str = "auto", oversize: str = "error",
                 max_ops: int | None = INSTANCE_PROGRAM_OPS, func_name: str = "main",
                 kernels=None, check_waits: bool = True, check_args: bool = True):
        self.hw = get_hw(hw if hw is not None else default_hw(target))
        self.split = _tvm.Sequential([
            GroupSubgraphs(self.hw, func_name),
            SplitInstances(order=order, oversize=oversize, func_name=func_name, outline=False),
            OrderInstances(func_name)])
        self.rewrite = RProgramPass("instances", num_veus=num_veus, func_name=func_name,
                                    target=target, max_ops=max_ops, kernels=kernels,
                                    check_waits=check_waits, check_args=check_args)
        self.func_name = func_name

    @property
    def programs(self) -> list:
        """The rPrograms built by the last run."""
        return self.rewrite.programs

    def transform_module(self, mod, ctx):
        split = self.split(mod)
        out = self.rewrite(split)
        record = graphturbo_attr.load(split, self.func_name)
        record["rprogram"] = {
            "programs": [_summary(p) for p in self.programs],
            "traffic": self._traffic(mod, split)}
        logger.info("GraphTurboRProgramPass: %d rPrograms, traffic %s", len(self.programs),
                    {k: v["bytes"] for k, v in record["rprogram"]["traffic"].items()})
        return graphturbo_attr.store(out, self.func_name, record)

    def _traffic(self, mod, split) -> dict:
        """Activation traffic: original, instances one at a time, instances as rTasks."""
        ext = extract(split[self.func_name], name=self.func_name)
        _, members = augment(ext)
        local = {members[op][-1] for p in self.programs for op in p.meta["local_ops"]}
        return {"original": activation_traffic(mod[self.func_name], name=self.func_name),
                "instances": activation_traffic(split[self.func_name], name=self.func_name),
                "rtasks": activation_traffic(split[self.func_name], local,
                                             name=self.func_name)}


def _summary(program) -> dict:
    meta = program.meta
    return {"name": program.name, "veus": program.num_veus, "rtasks": program.num_tasks,
            "barriers": program.num_barriers, "ops": len(program.ops),
            "instances": meta["instances"], "binding": meta["veus"], "scopes": meta["scopes"],
            "kept_ops": len(meta["local_ops"]), "fast_bytes": meta["fast_bytes"]}
