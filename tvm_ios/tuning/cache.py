"""Where a model's tuned kernels are found: the user's cache, then the seeds that ship.

Kernels are tuned per machine, so a user's databases live in a cache of their own:
``$TVM_IOS_CACHE`` (default ``~/.cache/tvm-ios``) ``/kernels/<target name>/<model key>``, the
model key being its name and a digest of the Relax module's structure (weights left out), so
that any model, from the zoo, an ONNX file or PyTorch, finds its own and a model changed
since it was tuned does not. ``tvm-ios tune-kernels`` writes there by default.

Seeds are the databases tuned here on other CPUs, pruned (:mod:`~.db_prune`): in a checkout
all of ``benchmarks/kernels``; in a wheel those of the embedded default (Inception V3 at
75 px, package data ``tvm_ios/seeds``). They are keyed by zoo name and image size
(:func:`~.kernel_db.find_kernels`). :func:`lookup` tries the cache, then the seeds;
:func:`tune_hint` is the one line a build without a database logs: which command tunes it
and about how long that took on the CPUs the seeds were tuned on.
"""
from __future__ import annotations

import logging
import os
import re
import shutil
from pathlib import Path

from .. import _tvm
from .kernel_db import VARIANTS, KernelDB, find_kernels, host_target, target_name

__all__ = ["cache_dir", "cache_root", "lookup", "model_key", "seed_roots", "tune_hint"]

logger = logging.getLogger(__name__)

_PACKAGE = Path(__file__).resolve().parents[1]
#: Trials ``tvm-ios tune-kernels`` measures per variant unless told (its ``--trials``).
DEFAULT_TRIALS = 500
_HINTED: set = set()


def cache_root() -> Path:
    """``$TVM_IOS_CACHE/kernels`` (default ``~/.cache/tvm-ios/kernels``)."""
    base = os.environ.get("TVM_IOS_CACHE") or Path.home() / ".cache" / "tvm-ios"
    return Path(base) / "kernels"


def model_key(name: str, mod) -> str:
    """``<name>-<digest>``: the model's name (made a file name) and 12 hex digits of the
    structural hash of its Relax module, as it is before its weights are bound."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(name)).strip("_") or "model"
    digest = _tvm.structural_hash(mod, map_free_vars=True) & ((1 << 48) - 1)
    return f"{safe}-{digest:012x}"


def cache_dir(name: str, mod, target=None) -> Path:
    """The cache directory of a model's kernels for ``target`` (default this CPU's)."""
    return cache_root() / target_name(target or host_target()) / model_key(name, mod)


def seed_roots() -> list[Path]:
    """The directories of seed databases that exist: the wheel's package data, then the
    checkout's ``benchmarks/kernels``."""
    roots = [_PACKAGE / "seeds", _PACKAGE.parent / "benchmarks" / "kernels"]
    return [root for root in roots if root.is_dir()]


def lookup(name: str, image_size: int | None, mod=None, target=None) -> Path | None:
    """The database ``--kernels auto`` applies: the model's cache directory when it holds a
    database (needs ``mod``), else a seed for this zoo name and size (this CPU's, else one
    whose code this CPU runs, else any: :func:`~.kernel_db.open_kernels` then decides and
    warns); None when there is none, after logging :func:`tune_hint` once."""
    if mod is not None:
        own = cache_dir(name, mod, target)
        if (own / "target.json").is_file():
            return own
    for root in seed_roots():
        found = find_kernels(name, image_size, target, root=root)
        if found is not None:
            return _writable(found, root)
    hint = tune_hint(name, image_size, target)
    if hint not in _HINTED:
        _HINTED.add(hint)
        logger.warning(hint)
    return None


def _writable(seed: Path, root: Path) -> Path:
    """``seed`` where it can be unpacked in place, else its copy in the cache (a wheel
    installed where the user cannot write: the packed files are restored beside a copy)."""
    if os.access(seed, os.W_OK):
        return seed
    copy = cache_root() / "seeds" / seed.relative_to(root)
    if not (copy / "target.json").is_file():
        shutil.copytree(seed, copy, dirs_exist_ok=True)
        logger.info("kernel seed %s copied to %s (not writable where installed)", seed, copy)
    return copy


def _seconds_per_trial(name: str) -> float | None:
    """Mean tuning wall time per measured trial in the seeds of ``name`` (None if none)."""
    wall = trials = 0.0
    for root in seed_roots():
        for meta in root.glob(f"*/{name}-*/target.json"):
            for run in KernelDB(meta.parent).meta.get("tuning", []):
                pruned = run.get("pruned", {})
                wall += float(pruned.get("wall_s_before", run.get("wall_s", 0)) or 0)
                trials += float(pruned.get("trials_before", run.get("trials", 0)) or 0)
    return wall / trials if trials else None


def tune_hint(name: str, image_size: int | None, target=None) -> str:
    """One line: no tuned kernels for this model here, the command that tunes them into the
    cache, and about how long it takes (from the seeds' tuning histories, when any)."""
    size = f" --image-size {image_size}" if image_size is not None else ""
    per_trial = _seconds_per_trial(name)
    variants = len(VARIANTS)  # (tune-kernels tunes all four by default)
    took = (f" (about {per_trial * DEFAULT_TRIALS * variants / 60:.0f} min at "
            f"{DEFAULT_TRIALS} trials a variant, as on the CPUs it was tuned on)"
            if per_trial else "")
    return (f"no tuned kernels for {name} on {target_name(target or host_target())}: "
            f"building untuned; `tvm-ios tune-kernels --model {name}{size}` tunes them into "
            f"{cache_root()}{took}")
