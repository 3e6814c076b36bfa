"""Real pipeline stages: a model cut by :class:`~tvm_ios.passes.partition_stages.
PartitionStages`, each stage compiled with TVM and run on its EP.

:class:`StagePlan` holds a model with its weights bound and its layers (op-graph units);
:func:`compile_stages` builds the stage functions of a configuration (cached by layer range
and target: a stage's function depends only on its own layers); :class:`PipelineMeasure`
runs a configuration through the :class:`~tvm_ios.pipelining.executor.PipelineExecutor` and
is the measure strategy the online tuners drive.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

import numpy as np

from .. import _tvm
from ..graph.extract import extract
from ..passes.partition_stages import PartitionStages, layer_cuts, stage_module, stage_names
from ..runtime.compare import random_inputs
from .executor import PipelineExecutor, StageSpec
from .space import Config

__all__ = ["StagePlan", "CompiledStage", "compile_stages", "stage_inputs", "PipelineMeasure",
           "pipeline_specs"]

logger = logging.getLogger(__name__)


class StagePlan:
    """A model ready to be cut into stages (weights bound, layers extracted)."""

    def __init__(self, mod, func_name: str = "main"):
        self.mod, self.func_name = mod, func_name
        self.ext = extract(mod[func_name], name=func_name)
        self.graph = self.ext.graph

    @classmethod
    def from_model(cls, mod, params=None, func_name: str = "main") -> "StagePlan":
        """Bind ``params`` into ``mod`` and extract its layers."""
        return cls(_tvm.bind_params(mod, params or {}, func_name), func_name)

    @property
    def num_layers(self) -> int:
        """Layers (op-graph units)."""
        return len(self.ext.units)

    def partition(self, stages) -> "object":
        """The module cut into ``len(stages)`` stage functions (layers per stage)."""
        return PartitionStages(layer_cuts(self.ext, stages), self.func_name)(self.mod)

    def inputs(self, seed: int = 0) -> list[np.ndarray]:
        """Random inputs of the model."""
        return random_inputs(self.mod, self.func_name, seed)


@dataclass
class CompiledStage:
    """A compiled stage function and the name of its layer range."""

    name: str
    executable: object

    def runner(self, ep):
        """In the calling thread: size its thread pool for ``ep`` and return ``fn(args)``."""
        target = _tvm.make_target(ep.target)
        device = _tvm.device_for(target)
        if ep.kind == "cpu":
            _tvm.config_threads(ep.units, ep.cores)
        vm = _tvm.virtual_machine(self.executable, device)
        func = vm["main"]

        def call(args):
            args = [a if a.device == device else a.copyto(device) for a in args]
            return list(func(*args))
        return call

    def time_on(self, ep, args, repeat: int = 5) -> float:
        """Median seconds of one call on ``ep`` (run in a thread of its own)."""
        box = {}

        def work():
            try:
                call = self.runner(ep)
                call(args)
                samples = []
                for _ in range(repeat):
                    start = time.perf_counter()
                    call(args)
                    samples.append(time.perf_counter() - start)
                box["t"] = float(np.median(samples))
            except BaseException as err:  # noqa: BLE001  (re-raised below)
                box["err"] = err
        thread = threading.Thread(target=work, name=f"time-{self.name}")
        thread.start()
        thread.join()
        if "err" in box:
            raise RuntimeError(f"timing stage {self.name} on {ep.name}: {box['err']}") \
                from box["err"]
        return box["t"]


def compile_stages(plan: StagePlan, stages, targets=None, cache: dict | None = None):
    """Compile each stage of ``stages`` (layers per stage); ``targets`` per stage."""
    targets = targets or ["llvm"] * len(stages)
    cache = {} if cache is None else cache
    bounds = Config(tuple(stages), tuple(range(len(stages)))).bounds()
    missing = [k for k, (a, b) in enumerate(zip(bounds, bounds[1:]))
               if (a, b, str(targets[k])) not in cache]
    if missing:
        parted = plan.partition(stages)
        names = stage_names(plan.func_name, len(stages))
        for k in missing:
            key = (bounds[k], bounds[k + 1], str(targets[k]))
            exe = _tvm.compile_module(stage_module(parted, names[k]), targets[k])
            cache[key] = CompiledStage(f"layers{bounds[k]}-{bounds[k + 1] - 1}", exe)
    return [cache[(a, b, str(t))] for a, b, t in zip(bounds, bounds[1:], targets)]


def stage_inputs(plan: StagePlan, compiled, seed: int = 0) -> list[list]:
    """The arguments each compiled stage receives for one random frame."""
    from .eps import EPSpec

    host = EPSpec("host", "cpu", 1, "FEP", 1.0)
    args = [_tvm.tensor(x) for x in plan.inputs(seed)]
    out = []
    for stage in compiled:
        out.append(args)
        args = stage.runner(host)(args)
    return out


def pipeline_specs(compiled, eps, config: Config) -> list[StageSpec]:
    """Executor stages for ``config``: stage k runs on ``eps[config.eps[k]]``."""
    return [StageSpec(f"{stage.name}@{eps[e].name}", lambda s=stage, ep=eps[e]: s.runner(ep))
            for stage, e in zip(compiled, config.eps)]


class PipelineMeasure:
    """Measure strategy of the online tuners: build and run a configuration for real.

    Parameters
    ----------
    plan : StagePlan
        The model.
    eps : sequence of EPSpec
        The execution places.
    frames : int
        Frames run per measurement (after one warm-up frame).
    """

    def __init__(self, plan: StagePlan, eps, frames: int = 8, queue_size: int = 2):
        self.plan, self.eps, self.frames, self.queue_size = plan, list(eps), frames, queue_size
        self.cache: dict = {}
        self.inputs = [_tvm.tensor(x) for x in plan.inputs()]

    def __call__(self, config: Config):
        start = time.perf_counter()
        targets = [self.eps[e].target for e in config.eps]
        compiled = compile_stages(self.plan, config.stages, targets, self.cache)
        executor = PipelineExecutor(pipeline_specs(compiled, self.eps, config), self.queue_size)
        executor.run([self.inputs])
        run = executor.run([self.inputs] * self.frames)
        return run.throughput, time.perf_counter() - start, run.stage_seconds
