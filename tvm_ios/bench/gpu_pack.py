"""The GPU day's pack: every artifact of the GPU table, the runtime, one run script.

:func:`plan` lists the artifacts (model x variant), :func:`build_gpu_pack` builds them here
on the CPU (CUDA kernels compiled by nvcc, no GPU needed), writes each one's build time
into ``pack.json`` and packs them with TVM's runtime and apache-tvm-ffi for the GPU host's
Python (:mod:`tvm_ios.bench.pack`), refused above :data:`PACK_LIMIT`. On the host,
``sh pack/run.sh`` checks every artifact, then times them
(:mod:`tvm_ios.bench.isolated`), then PyTorch eager and CUDA graphs on the same weights.

Variants (the manifest's ``variant``): ``tvm-default``; ``tvm-cudagraph`` (TVM's default
with ``relax.backend.use_cuda_graph``); ``ios-stages`` (IOS stages, one kernel at a time);
``ios-rprogram`` (persistent kernels, a timing build without per-call checks) and
``ios-rprogram-checked`` (the same with them, for correctness); ``ios-wavefront`` (the
wavefront policy); ``ios-graphturbo`` (GraphTurbo's instance kernels, a timing build) and
``ios-graphturbo-checked``.
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import _tvm
from .artifact import build_artifact
from .manifest import Manifest

__all__ = ["FULL_MODELS", "FULL_SIZE_OPT_IN", "PACK_LIMIT", "PACK_NAME", "QUICK_MODELS",
           "VARIANTS", "ArtifactSpec",
           "build_gpu_pack", "plan", "zoo_model"]

logger = logging.getLogger(__name__)

#: The pack must leave room for the tracked tree (about 12 MiB) in the 64 MiB a GPU run
#: may carry.
PACK_LIMIT = 40 * 2**20
PACK_NAME = "pack.tar.xz"
#: variant -> (build_artifact variant, ios_options, checks, pass_config)
VARIANTS = {
    "tvm-default": ("tvm-default", None, True, None),
    "tvm-cudagraph": ("tvm-default", None, True, {"relax.backend.use_cuda_graph": True}),
    "ios-stages": ("ios-sequential", {}, True, None),
    "ios-rprogram": ("ios-rprogram", {"policy": "ios"}, False, None),
    "ios-rprogram-checked": ("ios-rprogram", {"policy": "ios"}, True, None),
    "ios-wavefront": ("ios-rprogram", {"policy": "wavefront"}, False, None),
    # a layer whose activations exceed a block's shared memory runs on its own (in DRAM):
    # Inception V3's last average pools at 299 px
    "ios-graphturbo": ("ios-graphturbo", {"oversize": "fallback"}, False, None),
    "ios-graphturbo-checked": ("ios-graphturbo", {"oversize": "fallback"}, True, None),
}
#: model -> image size of the table's models (batch 1).
FULL_MODELS = {"inception_v3": 299, "squeezenet": None, "randwire": None, "nasnet_a": None}
#: Quick correctness: a synthetic DAG and SqueezeNet at 64 px.
QUICK_MODELS = {"dag": None, "squeezenet": 64}
#: variant -> the full-size models it is left out of unless named, for the pack's
#: 30-minute build (the quick set has every variant). GraphTurbo's checked build: Inception
#: V3 at 299 px is 425 rPrograms of 10 734 ops whose host stubs check dozens of tensors
#: each, 979 s here (321 s as a timing build). GraphTurbo on RandWire: many instances hold
#: a pointwise convolution's bias that lowers to two kernels and cuts the programs, 2081 of
#: them; that build alone ran 28 minutes. NASNet-A's, larger, was not tried.
FULL_SIZE_OPT_IN = {"ios-graphturbo-checked": tuple(FULL_MODELS),
                    "ios-graphturbo": ("randwire", "nasnet_a")}


@dataclass
class ArtifactSpec:
    """One artifact to build: model, input size, variant; ``name`` is its directory."""

    model: str
    image_size: int | None
    variant: str
    batch: int = 1
    extra: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        size = f"-{self.image_size}px" if self.image_size else ""
        return f"{self.model}{size}-b{self.batch}-{self.variant}"


def plan(models, variants=None) -> list[ArtifactSpec]:
    """Every (model, variant) pair, ``models`` (a dict or (name, image size) pairs) in the
    order given. Without ``variants``: all, less :data:`FULL_SIZE_OPT_IN` for a model of
    :data:`FULL_MODELS` at its full size."""
    unknown = sorted(set(variants or ()) - set(VARIANTS))
    if unknown:
        raise ValueError(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")

    def chosen(model, size):
        if variants is not None:
            return variants
        full = model in FULL_MODELS and size == FULL_MODELS[model]
        return [v for v in VARIANTS if not (full and model in FULL_SIZE_OPT_IN.get(v, ()))]
    pairs = models.items() if isinstance(models, dict) else models
    return [ArtifactSpec(m, size, v) for m, size in pairs for v in chosen(m, size)]


def zoo_model(spec: ArtifactSpec):
    """(mod, params, net) of a zoo model: the default ``load`` of :func:`build_one`. The
    synthetic DAG of the quick set is the CLI's to give (``tvm_ios.testing``, a layer this
    one does not import)."""
    from .. import models

    mod, params = models.get(spec.model, batch_size=spec.batch, image_size=spec.image_size)
    return mod, params, models.net(spec.model, image_size=spec.image_size)


def _label(spec: ArtifactSpec, directory: Path) -> None:
    """The manifest's variant is the pack's (the table's column); a quick-correctness size
    is part of the model's name (``squeezenet@64``), not the table's full-size row."""
    manifest = Manifest.load(directory)
    manifest.variant = spec.variant
    if spec.image_size and QUICK_MODELS.get(spec.model) == spec.image_size:
        manifest.model = f"{spec.model}@{spec.image_size}"
    manifest.save(directory)


def build_one(spec: ArtifactSpec, out: Path, target: str, load=zoo_model) -> float:
    """Build ``spec`` into ``out/spec.name`` unless a valid artifact for ``target``'s kind
    is there; seconds spent (0 when kept)."""
    directory = out / spec.name
    try:
        kept = Manifest.load(directory)
        kept.check_files(directory)
        if kept.target_kind == _tvm.make_target(target).kind.name:
            logger.warning("%s: kept", directory)
            _label(spec, directory)
            return 0.0
    except (OSError, ValueError) as err:  # missing or stale (ManifestError): build it
        logger.info("%s: building (%s)", directory, err)
    variant, options, checks, config = VARIANTS[spec.variant]
    if variant != "ios-graphturbo" and options is not None and (
            "cuda" in target or "nvidia" in target):
        options = dict(options, device="h100")
    mod, params, net = load(spec)
    started = time.perf_counter()
    build_artifact(mod, params, directory, model=spec.model, batch=spec.batch, target=target,
                   variant=variant, ios_options=options, checks=checks, pass_config=config,
                   net=net)
    _label(spec, directory)
    seconds = time.perf_counter() - started
    logger.warning("%s: built in %.0f s", directory, seconds)
    return seconds


def _last_one(load):
    """``load`` remembering its last model (the specs of one model come together; the
    weights of one model can be hundreds of megabytes)."""
    kept: dict = {}

    def cached(spec: ArtifactSpec):
        key = (spec.model, spec.image_size, spec.batch)
        if key not in kept:
            kept.clear()
            kept[key] = load(spec)
        return kept[key]
    return cached


def build_gpu_pack(out_dir, specs: list[ArtifactSpec], *, target: str = "nvidia/nvidia-h100",
                   ffi_wheel=None, cudart=None, limit: int = PACK_LIMIT,
                   budget_s: float | None = None, load=zoo_model) -> dict:
    """Build ``specs`` under ``out_dir/artifacts`` and pack them as ``out_dir/pack.tar.xz``.

    ``budget_s`` stops building (the rest is listed as skipped) once it is spent; ``load``
    gives a spec's ``(mod, params, net or None)`` (default: the zoo). Returns
    the pack's summary with ``build_s`` per artifact and ``skipped``.
    """
    from . import pack

    out = Path(out_dir)
    (out / "artifacts").mkdir(parents=True, exist_ok=True)
    started, build_s, skipped = time.perf_counter(), {}, []
    load = _last_one(load)
    for spec in specs:
        if VARIANTS[spec.variant][3] and _tvm.make_target(target).kind.name != "cuda":
            logger.warning("%s: skipped (a CUDA-only build option)", spec.name)
            skipped.append(spec.name)  # CUDA graphs have no llvm runtime
            continue
        if budget_s is not None and time.perf_counter() - started > budget_s:
            skipped.append(spec.name)
            continue
        build_s[spec.name] = round(build_one(spec, out / "artifacts", target, load), 1)
    built = [out / "artifacts" / name for name in build_s]
    summary = pack.build_pack(out / PACK_NAME, built, ffi_wheel=ffi_wheel, cudart=cudart,
                              limit=limit, info={"target": target, "build_s": build_s,
                                                 "skipped": skipped})
    summary.update(build_s=build_s, skipped=skipped)
    (out / "gpu_pack.json").write_text(json.dumps(summary, indent=1))
    return summary
