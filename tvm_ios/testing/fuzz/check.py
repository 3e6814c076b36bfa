"""The fuzzer's oracle: one random CNN through one pipeline against TVM's default build.

:func:`check_spec` builds the spec's module with TVM's ``default`` Relax pipeline (the
reference) and with a tvm-ios pipeline (``ios``, ``ios-stages``, ...), runs both on the same
random input with :func:`tvm_ios.runtime.compare.compare_executables` and returns a plain
record ``{seed, pipeline, status, max_rel_diff, error, ops}``: ``ok``, ``mismatch`` (the
largest difference over the largest reference output beyond ``tolerance``) or ``crash``
(the pipeline's build or run raised). The reference executable is cached per spec, so a
seed checked on several pipelines builds its reference once.
"""
from __future__ import annotations

import json
import logging

from ... import _tvm
from ...runtime.compare import build, compare_executables, random_inputs
from ..random_cnn import build_cnn, random_spec

__all__ = ["check_spec", "check_seed", "resolve_pipeline", "TOLERANCE", "PIPELINES"]

logger = logging.getLogger(__name__)

#: Largest ``max |diff| / max |reference|`` that counts as equal (float32 sums in another order).
TOLERANCE = 1e-4

#: The tvm-ios Relax pipelines (their names in ``tvm_ios._autoload.NAMES``).
PIPELINES = ("ios", "ios-stages", "ios-rprogram", "ios-wavefront", "ios-graphturbo")

_REFERENCE: dict = {}


def _reference(spec: dict, mod, params, target):
    key = json.dumps(spec, sort_keys=True, default=list) + str(target)
    if key not in _REFERENCE:
        _REFERENCE.clear()  # one spec at a time: campaigns go seed by seed
        inputs = random_inputs(_tvm.bind_params(mod, params), seed=spec["seed"])
        _REFERENCE[key] = (build(mod, target, params), inputs)
    return _REFERENCE[key]


def resolve_pipeline(name: str):
    """What ``tvm.compile`` gets for ``name``: a registered name as it is, or
    ``NAME:key=value,...`` (e.g. ``ios-stages:device=v100``) as that variant with options."""
    if ":" not in name:
        return name
    from ..._autoload import NAMES
    from ...relax_pipeline import pipeline

    base, _, rest = name.partition(":")
    if base not in NAMES:
        raise ValueError(f"unknown pipeline {base!r}; known: {', '.join(NAMES)}")
    options = dict(item.split("=", 1) for item in rest.split(",") if item)
    return pipeline(**{**NAMES[base], **options})


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    lines = [line for line in text if line.strip()]
    return f"{type(err).__name__}: {lines[-1] if lines else ''}"[:300]


def check_spec(spec: dict, pipeline: str, target: str = "llvm",
               tolerance: float = TOLERANCE) -> dict:
    """Check one spec on one pipeline; the record (see the module docstring)."""
    from ..._autoload import autoload

    autoload()
    target = _tvm.make_target(target)
    record = {"seed": spec["seed"], "pipeline": pipeline, "status": "ok",
              "max_rel_diff": None, "error": None, "ops": len(spec["ops"])}
    mod, params = build_cnn(spec)
    try:
        exe_ref, inputs = _reference(spec, mod, params, target)
    except Exception as err:  # noqa: BLE001  (a generator bug, reported as a crash)
        record.update(status="crash", error="reference build: " + _first_line(err))
        return record
    try:
        exe = build(mod, target, params, pipeline=resolve_pipeline(pipeline))
        cmp = compare_executables(exe_ref, exe, inputs, _tvm.device_for(target))
    except Exception as err:
        logger.debug("seed %s on %s crashed", spec["seed"], pipeline, exc_info=True)
        record.update(status="crash", error=_first_line(err))
        return record
    rel = cmp.max_abs_diff / max(cmp.max_abs_value, 1e-6)
    record["max_rel_diff"] = float(rel)
    if not rel <= tolerance:  # NaN counts as a mismatch
        record.update(status="mismatch",
                      error=f"max |diff| {cmp.max_abs_diff:.3g} of max |out| "
                            f"{cmp.max_abs_value:.3g}")
    return record


def check_seed(seed: int, pipeline: str, **options) -> dict:
    """:func:`check_spec` of ``random_spec(seed)``."""
    return check_spec(random_spec(seed), pipeline, **options)
