"""tvm-ios: inter-operator scheduling for Apache TVM (Relax).

Public API (imported lazily, so that ``import tvm`` stays fast when TVM autoloads this
plugin through its ``tvm.backends`` entry point)::

    from tvm_ios import OpGraph, ios_schedule, IOSPass, schedule_of, pipeline
    graph = op_graph(mod)
    schedule = ios_schedule(graph, AnalyticalCostModel(), max_group_size=3, max_num_groups=8)
    mod = tvm.transform.Sequential([IOSPass()])(mod)
    ex = tvm.compile(mod, "llvm", relax_pipeline=pipeline(engine="rprogram"))  # or "ios"
    fast = torch.compile(model, backend=torch_backend(pipeline="ios", target="llvm"))
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "OpGraph": "tvm_ios.graph.opgraph",
    "OpNode": "tvm_ios.graph.opgraph",
    "op_graph": "tvm_ios.graph.extract",
    "Schedule": "tvm_ios.schedule.schedule",
    "Stage": "tvm_ios.schedule.schedule",
    "ScheduleError": "tvm_ios.schedule.schedule",
    "ios_schedule": "tvm_ios.schedule.ios",
    "sequential_schedule": "tvm_ios.schedule.baselines",
    "greedy_schedule": "tvm_ios.schedule.baselines",
    "AnalyticalCostModel": "tvm_ios.cost.analytical",
    "IOSPass": "tvm_ios.passes.ios_pass",
    "ApplySchedule": "tvm_ios.passes.apply_schedule",
    "schedule_of": "tvm_ios.passes.apply_schedule",
    "models": "tvm_ios.models",
    "pipeline": "tvm_ios.relax_pipeline",
    "torch_backend": "tvm_ios.torch_compile",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'tvm_ios' has no attribute {name!r}")
    module = importlib.import_module(_EXPORTS[name])
    return module if name == "models" else getattr(module, name)
