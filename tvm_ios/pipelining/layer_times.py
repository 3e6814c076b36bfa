"""Layer-time sources: seconds per (layer, EP), modelled or measured.

A pipeline's layers are the op-graph nodes of a model in topological order (convolutions,
pools, matmuls; free ops ride along with the layer before them). Two sources fill the
``[layer, EP]`` table the schedulers read:

* :func:`modelled_times`: the analytical roofline of :class:`~tvm_ios.cost.analytical.
  AnalyticalCostModel` priced on each EP's :meth:`~tvm_ios.pipelining.eps.EPSpec.device_spec`
  (for platforms we do not have, such as the paper's gem5 configurations).
* :func:`measured_times`: every layer built with TVM as its own stage (the
  :class:`~tvm_ios.passes.partition_stages.PartitionStages` pass, one layer per stage) and
  timed on each CPU EP's thread group; every measurement is appended to a JSON-lines log.
"""
from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import dataclass

import numpy as np

from ..cost.analytical import AnalyticalCostModel
from ..graph.opgraph import OpGraph

__all__ = ["LayerTimes", "layer_weights", "modelled_times", "measured_times"]

logger = logging.getLogger(__name__)


@dataclass
class LayerTimes:
    """Seconds of each layer on each EP.

    Parameters
    ----------
    layers : list of str
        Layer names, in pipeline order.
    eps : list of str
        EP names.
    seconds : numpy.ndarray
        ``[len(layers), len(eps)]`` seconds per frame.
    weights : list of float
        Static layer weights (FLOPs, the paper's Eq. 1) for seed generation.
    source : str
        ``modelled`` or ``measured``.
    """

    layers: list
    eps: list
    seconds: np.ndarray
    weights: list
    source: str = "modelled"

    def __post_init__(self):
        self.seconds = np.asarray(self.seconds, dtype=float)
        if self.seconds.shape != (len(self.layers), len(self.eps)):
            raise ValueError(f"LayerTimes: table shape {self.seconds.shape} does not match "
                             f"{len(self.layers)} layers x {len(self.eps)} EPs")
        if len(self.weights) != len(self.layers):
            raise ValueError("LayerTimes: one weight per layer is needed")

    @property
    def num_layers(self) -> int:
        """L."""
        return len(self.layers)

    @property
    def num_eps(self) -> int:
        """Number of EPs."""
        return len(self.eps)

    def to_json(self) -> str:
        """Serialise."""
        return json.dumps({"layers": self.layers, "eps": self.eps, "weights": self.weights,
                           "seconds": self.seconds.tolist(), "source": self.source})

    @classmethod
    def from_json(cls, text: str) -> "LayerTimes":
        """Inverse of :meth:`to_json`."""
        data = json.loads(text)
        return cls(data["layers"], data["eps"], np.array(data["seconds"]),
                   data["weights"], data.get("source", "modelled"))


def layer_weights(graph: OpGraph) -> list[float]:
    """FLOPs per layer (at least 1, so every layer weighs something)."""
    return [max(float(node.flops), 1.0) for node in graph.nodes]


def modelled_times(graph: OpGraph, eps) -> LayerTimes:
    """Roofline seconds of every node of ``graph`` on every EP."""
    table = np.zeros((len(graph.nodes), len(eps)))
    for j, ep in enumerate(eps):
        model = AnalyticalCostModel(ep.device_spec())
        for i, node in enumerate(graph.nodes):
            outputs = math.prod(node.shape) if node.shape else 1
            us, _ = model.op_time(node.flops, node.bytes, outputs)
            table[i, j] = (us + ep.device_spec().launch_us) * 1e-6
    return LayerTimes([n.name for n in graph.nodes], [e.name for e in eps], table,
                      layer_weights(graph), "modelled")


def measured_times(mod, params, eps, log_path: str | None = None, repeat: int = 5,
                   seed: int = 0) -> LayerTimes:
    """Build each layer of ``mod`` on each CPU EP and time it (median of ``repeat`` runs).

    Each measurement is appended to ``log_path`` (JSON lines: layer, ep, seconds) as soon as
    it is taken, so an interrupted run loses nothing already measured.
    """
    from .stages import StagePlan, compile_stages, stage_inputs

    for ep in eps:
        if ep.kind != "cpu":
            raise ValueError(f"measured_times: EP {ep.name!r} is {ep.kind}; only CPU EPs can "
                             "be measured on this machine")
    plan = StagePlan.from_model(mod, params)
    per_layer = [1] * plan.num_layers
    compiled = compile_stages(plan, per_layer)
    inputs = stage_inputs(plan, compiled, seed=seed)
    table = np.zeros((plan.num_layers, len(eps)))
    for j, ep in enumerate(eps):
        for i, stage in enumerate(compiled):
            table[i, j] = stage.time_on(ep, inputs[i], repeat)
            _log(log_path, plan.graph.nodes[i].name, ep.name, table[i, j])
    return LayerTimes([n.name for n in plan.graph.nodes], [e.name for e in eps], table,
                      layer_weights(plan.graph), "measured")


def _log(path: str | None, layer: str, ep: str, seconds: float) -> None:
    logger.info("layer %s on %s: %.3f ms", layer, ep, seconds * 1e3)
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"layer": layer, "ep": ep, "seconds": seconds,
                                     "time": time.time()}) + "\n")
