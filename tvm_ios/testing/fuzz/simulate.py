"""``tvm-ios fuzz --simulate``: the rPrograms' OpenCL rendering of a random CNN under Oclgrind.

For the rProgram pipelines (``ios-rprogram``: policy ``ios``, ``ios-wavefront``: policy
``wavefront``) :func:`simulate_spec` plans the spec's persistent rPrograms for a GPU target
(as ``tvm-ios codegen --simulate`` does: IOS without merges under the target's analytical
model) and runs each under Oclgrind with :func:`tvm_ios.kernels.simulation.check.simulate_model`,
which compares every output with TVM's ``llvm`` build of each op. The record has the
fields of :func:`~.check.check_spec`, the pipeline named ``oclgrind:<pipeline>``.
"""
from __future__ import annotations

import shutil

from ... import _tvm
from ..random_cnn import build_cnn

__all__ = ["simulate_spec", "oclgrind_available", "POLICY", "GPU_TARGET"]

#: Pipelines with rPrograms -> their policy.
POLICY = {"ios-rprogram": "ios", "ios-wavefront": "wavefront"}

#: The GPU target whose kernels are rendered for OpenCL.
GPU_TARGET = "nvidia/nvidia-h100"


def oclgrind_available() -> bool:
    """Whether the ``oclgrind`` command is installed."""
    return shutil.which("oclgrind") is not None


def simulate_spec(spec: dict, pipeline: str, tolerance: float = 1e-3,
                  timeout: float = 120.0) -> dict:
    """Simulate the rPrograms of ``spec`` for ``pipeline`` (a key of :data:`POLICY`)."""
    from ...cost.analytical import AnalyticalCostModel
    from ...graph.extract import extract
    from ...kernels.gpu.programs import plan_programs
    from ...kernels.simulation.check import simulate_regions
    from ...schedule.ios import ios_schedule

    record = {"seed": spec["seed"], "pipeline": f"oclgrind:{pipeline}", "status": "ok",
              "max_rel_diff": None, "error": None, "ops": len(spec["ops"])}
    mod, params = build_cnn(spec)
    mod = _tvm.bind_params(mod, params)
    policy = POLICY[pipeline]
    try:
        schedule = None
        if policy == "ios":
            schedule = ios_schedule(extract(mod["main"]).graph, AnalyticalCostModel("h100"),
                                    strategy="parallel", max_group_size=3, max_num_groups=8)
        regions, gpu, vdevice = plan_programs(mod, GPU_TARGET, policy, schedule)
        sim = simulate_regions(regions, gpu, vdevice, seed=spec["seed"], data_races=False,
                               timeout=timeout)
    except Exception as err:  # noqa: BLE001  (a crash is a finding)
        record.update(status="crash", error=f"{type(err).__name__}: {str(err)[:300]}")
        return record
    record["programs"] = sim["programs"]
    diff = sim["max_abs_diff"]
    record["max_rel_diff"] = diff
    if sim["failures"]:
        record.update(status="crash", error="; ".join(f"{k}: {v[:200]}"
                                                      for k, v in sim["failures"].items()))
    elif diff is not None and not diff <= tolerance:
        record.update(status="mismatch", error=f"max |diff| {diff:.3g} under Oclgrind")
    elif not sim["steps_zero"] or any(any(v for k, v in e.items() if k != "inter_group_races")
                                      for e in sim["errors"].values()):
        record.update(status="mismatch", error=f"Oclgrind reports {sim['errors']}")
    return record
