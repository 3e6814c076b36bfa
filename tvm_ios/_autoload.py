"""Entry point TVM calls on ``import tvm`` (group ``tvm.backends``).

It only registers the ``ios`` Relax pipeline under a lazy factory, so importing TVM does
not import tvm-ios's passes until ``tvm.compile(..., relax_pipeline="ios")`` asks for them.
"""
from __future__ import annotations


def _ios_pipeline(**options):
    from .pipeline import ios_pipeline  # noqa: PLC0415  (lazy on purpose)

    return ios_pipeline(**options)


def autoload() -> None:
    """Register the ``ios`` pipeline once."""
    from tvm.relax import pipeline  # noqa: PLC0415

    if "ios" not in pipeline.PIPELINE_MAP:
        pipeline.register_pipeline("ios")(_ios_pipeline)
