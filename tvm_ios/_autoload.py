"""Entry point TVM calls on ``import tvm`` (group ``tvm.backends``).

It only registers the tvm-ios Relax pipelines by name (``ios`` and the variants of
:data:`tvm_ios.relax_pipeline.VARIANTS`, listed again here so that nothing is imported),
each under a lazy factory: importing TVM does not import tvm-ios's passes until
``tvm.compile(..., relax_pipeline="ios")`` asks for them.
"""
from __future__ import annotations

import functools

#: Pipeline name -> keyword arguments of ``tvm_ios.pipeline`` (its ``VARIANTS``).
NAMES = {
    "ios": {},
    "ios-rprogram": {"engine": "rprogram"},
    "ios-wavefront": {"engine": "rprogram", "policy": "wavefront"},
    "ios-stages": {"engine": "stages"},
    "ios-graphturbo": {"engine": "rprogram", "graphturbo": "auto"},
}


def _factory(variant: dict, **options):
    from .relax_pipeline import pipeline

    return pipeline(**{**variant, **options})


def autoload() -> None:
    """Register the tvm-ios pipelines once (names already taken are left alone)."""
    from tvm.relax import pipeline

    for name, variant in NAMES.items():
        if name not in pipeline.PIPELINE_MAP:
            pipeline.register_pipeline(name)(functools.partial(_factory, variant))
