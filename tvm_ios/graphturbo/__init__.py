"""GraphTurbo (Zhao et al., OSDI'23): hardware-aware grouping, splitting and ordering.

The algorithms decide and return plain data (:class:`~tvm_ios.graphturbo.plan.Plan`); the
passes ``GroupSubgraphs``, ``SplitInstances`` and ``OrderInstances`` in
:mod:`tvm_ios.passes` apply them to Relax modules.
"""
from .hwspec import HardwareSpec, PRESETS, get_hw
from .plan import GraphTurboError, Plan, plan_graph

__all__ = ["HardwareSpec", "PRESETS", "get_hw", "GraphTurboError", "Plan", "plan_graph"]
