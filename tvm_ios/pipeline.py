"""The ``ios`` Relax pipeline: IOS scheduling, then TVM's default build pipeline.

Registered on ``import tvm`` through the ``tvm.backends`` entry point, so that any TVM user
with tvm-ios installed can write ``tvm.compile(mod, target, relax_pipeline="ios")``.
"""
from __future__ import annotations

from tvm import relax

from . import _tvm
from .cost.analytical import AnalyticalCostModel
from .kernels.tuned_build import kernels_pass
from .passes.ios_pass import IOSPass

__all__ = ["ios_pipeline", "register"]


def ios_pipeline(kernels=None, **ios_options):
    """A module pass running :class:`IOSPass` (with ``ios_options``) then the default build.

    The default build is the one ``tvm.compile`` would pick for the current target: the
    target's own pipeline (with dlight schedules) on GPUs, the generic one elsewhere. On a
    CPU target the IOS cost model defaults to the ``cpu`` preset, and ``kernels`` (a kernel
    database or its directory, from ``tvm-ios tune-kernels``) applies tuned kernels.
    """

    @_tvm.module_pass(opt_level=0, name="tvm_ios.ios_pipeline")
    def _pipeline(mod, _ctx):
        target = _tvm.Target.current(allow_none=True)
        options = dict(ios_options)
        if target is not None and "gpu" in target.keys:
            default = relax.get_default_pipeline(target)
            passes = [IOSPass(**options)]
        else:
            default = relax.get_pipeline("default")
            options.setdefault("cost_model", AnalyticalCostModel("cpu"))
            passes = [IOSPass(**options)]
            if kernels is not None:
                passes.append(kernels_pass(kernels))
        return _tvm.Sequential(passes + [default])(mod)

    return _pipeline


def register() -> None:
    """Register the pipeline as ``ios`` (idempotent)."""
    from ._autoload import autoload  # noqa: PLC0415

    autoload()
