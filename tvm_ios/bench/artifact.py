"""Cross-compile a model into a benchmark artifact on a machine with no GPU.

An artifact directory holds ``model.so`` (the exported Relax VM library, weights as
arguments), ``reference.npz`` (the output of TVM's default ``llvm`` build on the artifact's
input and weights), for CUDA targets ``kernels.fatbin`` (the library's CUDA source compiled
here by nvcc, so the GPU host needs neither NVRTC nor nvcc; the ``ios-rprogram`` variant's
library holds one more CUDA module for its rProgram kernels, compiled to
``kernels-1.fatbin``), and ``manifest.json``.
Weights and input travel as recipes (:mod:`tvm_ios.bench.tensors`).
"""
from __future__ import annotations

import contextlib
import datetime
import json
import logging
import platform
from pathlib import Path

import numpy as np

from .. import __version__ as TVM_IOS_VERSION
from .. import _tvm
from ..kernels.gpu.build import device_sources
from ..runtime import compare
from ..runtime.outputs import flatten_outputs
from . import tensors
from .manifest import Manifest, sha256_bytes, sha256_file

__all__ = ["build_artifact", "VARIANTS", "argument_specs"]

logger = logging.getLogger(__name__)

#: Variants a build can produce: TVM's default build, IOS stages run one kernel at a time,
#: and the rProgram engine (each concurrent stage one persistent kernel).
VARIANTS = ("tvm-default", "ios-sequential", "ios-rprogram", "ios-graphturbo")
LIBRARY, REFERENCE, KERNELS, NET = "model.so", "reference.npz", "kernels.fatbin", "net.json"
#: What this process already made, by what determines it: a pack builds seven variants of
#: each model on the same input and weights (one reference), several of them with the same
#: CUDA source (TVM's kernels of the default and the CUDA-graph builds, say).
_REFERENCES: dict = {}
_FATBINS: dict = {}


def argument_specs(mod, params: dict) -> tuple[list[dict], list[dict]]:
    """Inputs and weights of ``mod["main"]`` in argument order, as name/shape/dtype/position.

    A parameter named in ``params`` is a weight; any other is an input.
    """
    inputs, weights = [], []
    for position, var in enumerate(mod["main"].params):
        name, shape = _tvm.var_name(var), _tvm.shape_of(var)
        if shape is None:
            raise ValueError(f"argument {name!r} of main has no static shape; an artifact "
                             "needs static shapes")
        spec = {"name": name, "shape": list(shape), "dtype": _tvm.dtype_of(var),
                "position": position}
        (weights if name in params else inputs).append(spec)
    missing = sorted(set(params) - {w["name"] for w in weights})
    if missing:
        raise ValueError(f"params {missing[:5]} are not arguments of main")
    return inputs, weights


def _recipes(inputs, weights, params, seed):
    input_recipes = [dict(spec, **tensors.input_recipe(spec["name"], spec["shape"],
                                                         spec["dtype"], seed + i))
                     for i, spec in enumerate(inputs)]
    weight_recipes = [dict(spec, **tensors.recipe_of(spec["name"], params[spec["name"]],
                                                       seed * 1_000_003 + 7 * i + 1))
                      for i, spec in enumerate(weights)]
    return input_recipes, weight_recipes


def _apply_variant(mod, variant: str, target, ios_options: dict, checks: bool = True):
    """Rewrite ``mod`` for ``variant``; returns (module, schedule JSON or None). Without
    ``checks`` an rProgram build carries no per-call bounded-wait check and its kernels'
    host stubs no argument checks (a timing build)."""
    if variant == "tvm-default":
        return mod, None
    if variant == "ios-graphturbo":  # GraphTurbo's instances as rTasks of rPrograms
        from ..passes.graphturbo_rprogram import GraphTurboRProgramPass

        return GraphTurboRProgramPass(target=target, check_waits=checks, check_args=checks,
                                      **ios_options)(mod), None
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
    from ..cost.analytical import AnalyticalCostModel
    from ..passes.apply_schedule import schedule_of

    options = dict(ios_options)
    cost_model = AnalyticalCostModel(device=options.pop("device"))
    kernels = options.pop("kernels", None)  # a kernel database's path (llvm): tuned kernels
    if kernels is not None:
        from ..tuning.kernel_db import KernelDB

        kernels = KernelDB(kernels)
    if variant == "ios-rprogram":
        from ..passes.rprogram_pass import RProgramPass

        rewritten = RProgramPass(options.get("policy", "ios"), cost_model=cost_model,
                                 target=target, kernels=kernels, check_waits=checks,
                                 check_args=checks)(mod)
    else:
        from ..passes.ios_pass import IOSPass

        rewritten = IOSPass(cost_model=cost_model, **options)(mod)
    schedule = schedule_of(rewritten)
    if kernels is not None:
        from ..kernels.tuned_build import apply_kernels

        rewritten = apply_kernels(rewritten, kernels, target)
    return rewritten, (schedule.to_dict() if schedule is not None else None)


def cuda_sources(executable) -> list[str]:
    """CUDA sources of the library's modules, breadth first in import order (TVM's own
    kernels first, then external modules such as the rProgram kernels)."""
    return device_sources(executable.mod, "cuda")


def _kernel_file(index: int) -> str:
    return KERNELS if index == 0 else KERNELS.replace(".", f"-{index}.", 1)


def _compile_kernels(executable, target, out: Path) -> tuple[dict | None, dict]:
    """Compile each CUDA module's source of the library with nvcc here, one fatbin each.

    Returns the manifest's ``kernels`` entry (None for non-CUDA targets) and the files
    written, by role: ``kernels`` for TVM's module, ``kernels_1``... for further modules
    (the rProgram kernels), listed in ``kernels["modules"]``.
    """
    if target.kind.name != "cuda":
        return None, {}
    from .._tvm import nvcc

    sources = cuda_sources(executable)
    if not sources:
        raise RuntimeError("expected a CUDA module in the library, found none")
    files, modules = {}, []
    for i, source in enumerate(sources):
        key = (sha256_bytes(source.encode()), str(target))
        if key not in _FATBINS:
            with target:
                _FATBINS[key] = bytes(nvcc.compile_cuda(source, target_format="fatbin",
                                                        compiler="nvcc"))
        (out / _kernel_file(i)).write_bytes(_FATBINS[key])
        role = "kernels" if i == 0 else f"kernels_{i}"
        files[role] = _kernel_file(i)
        modules.append({"role": role, "source_sha256": sha256_bytes(source.encode())})
    kernels = {"format": "fatbin", "source_sha256": modules[0]["source_sha256"],
               "compiler": "nvcc " + ".".join(map(str, nvcc.get_cuda_version()))}
    if len(modules) > 1:
        kernels["modules"] = modules
    return kernels, files


def _reference(mod, inputs, weights, arrays, recipes, built=None) -> list[np.ndarray]:
    """Outputs of TVM's default llvm build of the unrewritten module (``built`` if given),
    made once per module and tensor ``recipes`` in this process."""
    if built is not None:
        ordered = sorted(inputs + weights, key=lambda s: s["position"])
        return flatten_outputs(compare.run(built, [arrays[s["name"]] for s in ordered]))
    key = (_tvm.structural_hash(mod), sha256_bytes(json.dumps(recipes).encode()))
    if key not in _REFERENCES:
        exe = compare.build(mod, "llvm", {w["name"]: arrays[w["name"]] for w in weights})
        _REFERENCES[key] = flatten_outputs(compare.run(exe, [arrays[i["name"]]
                                                             for i in inputs]))
    return [o.copy() for o in _REFERENCES[key]]


def _versions() -> dict:
    return {"tvm": _tvm.TVM_VERSION, "tvm_ffi": _tvm.tvm_ffi.__version__,
            "tvm_ios": TVM_IOS_VERSION, "numpy": np.__version__,
            "python": platform.python_version()}


def build_artifact(mod, params: dict, out_dir, *, model: str, batch: int, target="llvm",
                   variant: str = "tvm-default", ios_options: dict | None = None,
                   seed: int = 0, tolerance: dict | None = None, net=None,
                   checks: bool = True, pass_config: dict | None = None) -> Manifest:
    """Build ``mod`` for ``target`` and write a benchmark artifact into ``out_dir``.

    Parameters
    ----------
    mod : IRModule
        The model; ``main`` takes the inputs and the weights named in ``params``.
    params : dict
        Weights by argument name (their statistics seed the recipes; see ``tensors``).
    out_dir : str or Path
        Directory to write (created; existing artifact files are replaced).
    model, batch : str, int
        Recorded in the manifest.
    target : str, dict or Target
        Build target (``nvidia/nvidia-h100`` for sm_90a, ``llvm`` runs here).
    variant : str
        One of :data:`VARIANTS`.
    ios_options : dict, optional
        Options of ``IOSPass`` for ``ios-sequential`` (``max_group_size``, ...); for
        ``ios-rprogram`` only ``device`` (of the cost model) and ``policy``; for
        ``ios-graphturbo`` those of ``GraphTurboRProgramPass`` (``oversize``, ...).
    seed : int
        Seed of the input and weight recipes.
    tolerance : dict, optional
        ``atol``/``rtol`` of the reference check (max error <= atol + rtol * max|ref|).
    net : Net, optional
        The zoo definition ``mod`` was emitted from; stored as ``net.json`` so that the
        PyTorch baselines rebuild the same model on the GPU host.
    checks : bool
        Keep the per-call checks (an rProgram's bounded-wait record, read after each call:
        take/equal launches, a host copy and a callback; TVM's checks of the arguments in
        the kernels' host stubs): a correctness build. False: a timing build without them.
        Recorded as ``flags["checks"]``.
    pass_config : dict, optional
        TVM PassContext options of the compile (``{"relax.backend.use_cuda_graph": True}``:
        TVM's CUDA graph build); recorded as ``flags["pass_config"]``.

    Returns
    -------
    Manifest
        The manifest written to ``out_dir/manifest.json``.
    """
    target = _tvm.make_target(target)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    inputs, weights = argument_specs(mod, params)
    input_recipes, weight_recipes = _recipes(inputs, weights, params, seed)
    arrays = {r["name"]: tensors.materialize(r) for r in input_recipes + weight_recipes}
    ios_options = dict(ios_options or {})
    if variant in ("ios-sequential", "ios-rprogram"):
        ios_options.setdefault("device", "h100" if target.kind.name == "cuda" else "cpu")
    rewritten, schedule = _apply_variant(mod, variant, target, ios_options, checks)
    logger.info("compiling %s (%s, batch %d) for %s", model, variant, batch, target.kind.name)
    context = _tvm.tvm.transform.PassContext(config=dict(pass_config)) if pass_config \
        else contextlib.nullcontext()
    with context:
        executable = _tvm.compile_module(rewritten, target)
    executable.export_library(str(out / LIBRARY))
    kernels, kernel_files = _compile_kernels(executable, target, out)
    same = variant == "tvm-default" and target.kind.name == "llvm"
    outputs = _reference(mod, inputs, weights, arrays, input_recipes + weight_recipes,
                         executable if same else None)
    np.savez(out / REFERENCE, *outputs)
    files = {"library": LIBRARY, "reference": REFERENCE, **kernel_files}
    if net is not None:
        (out / NET).write_text(json.dumps(net.to_dict()))
        files["net"] = NET
    manifest = Manifest(
        model=model, batch=int(batch), variant=variant, target=_tvm.target_to_dict(target),
        target_kind=target.kind.name, arch=str(target.attrs.get("arch", "") or ""),
        versions=_versions(), created=datetime.datetime.now(datetime.timezone.utc)
        .isoformat(timespec="seconds"),
        flags={"pipeline": "default", "ios_options": ios_options, "seed": seed,
               "checks": bool(checks), "pass_config": dict(pass_config or {})},
        schedule=schedule,
        files={role: {"name": name, "sha256": sha256_file(out / name)}
               for role, name in files.items()},
        inputs=input_recipes, params=weight_recipes,
        outputs=[{"name": f"arr_{i}", "shape": list(o.shape), "dtype": str(o.dtype)}
                 for i, o in enumerate(outputs)],
        tolerance=tolerance or {"atol": 1e-4, "rtol": 1e-3}, kernels=kernels)
    manifest.validate(str(out))
    manifest.save(out)
    return manifest
