"""The module attributes that tell how a stage module is built (plain names, no imports).

:mod:`~.stage_module` writes them on the stage modules it makes; the builder's
:func:`~.stage_timing.prepare_stage` reads them in its worker process. Both import them from
here, so neither imports the other to learn them.
"""

__all__ = ["ENGINE_ATTR", "KERNELS_ATTR"]

#: ``"rprogram"`` or ``"balanced"`` on a concurrent stage run as an rProgram.
ENGINE_ATTR = "tvm_ios.stage_engine"
#: The kernel database directory whose tuned kernels the stage's build applies (llvm).
KERNELS_ATTR = "tvm_ios.kernels"
