"""Databases of TVM-tuned kernels: where they live, which CPU they fit, how a build uses them.

A kernel database is a directory holding two meta_schedule JSON databases (TVM's own format,
``database_workload.json`` and ``database_tuning_record.json``, one JSON document a line,
append-only) and a ``target.json`` naming the target they were tuned for:

* ``parallel/``: kernels tuned for the whole CPU (``num-cores`` = the cores), what the
  sequential build and every single-op stage call;
* ``serial/``: kernels tuned with one core and no ``parallel`` loop, what a vEU of the CPU
  vDevice runs inside an rProgram (a kernel inside a vEU runs on that vEU's thread only);
* ``packed/``: the parallel variant's kernels tuned with meta_schedule's weight layout
  rewrite (:mod:`~..kernels.prepack`): their weights are repacked once, at compile time;
* ``serial-packed/``: the serial variant's kernels tuned so (a vEU's, whose packed weights
  are constants of its rProgram).

:func:`host_target` is the target a tuned build uses here (``mcpu`` of this CPU, its core
count); :func:`target_name` names a directory after it (``llvm-znver4-2c``). A database
tuned for another target is applied only if this CPU runs its code (:mod:`~.cpu_compat`;
builds then target the database's CPU): :func:`open_kernels` warns, naming both, and
otherwise the build stays untuned. A line that is not valid JSON is skipped with its file
and line named, and a build ranks a variant's records within the way its latest run timed
them, cold or warm (:mod:`~.records`). What is committed are xz copies of the JSON
files and of the stage log (:meth:`KernelDB.pack`), unpacked on first use, pruned to each
workload's best records (:mod:`~.prune`).
"""
from __future__ import annotations

import hashlib
import json
import logging
import shutil
from functools import lru_cache
from pathlib import Path

from .. import _tvm
from . import records as db_records
from ..kernels.blocked_conv import parse_layout
from .cpu_compat import (disabled_groups, hidden_features, incompatibility, os_cpu_flags,
                         schedules_fit)

__all__ = ["KernelDB", "KernelDBError", "host_target", "serial_target", "target_name",
           "open_kernels", "runs_here", "find_kernels", "default_kernels_dir", "MATCH_KEYS",
           "STAGE_LOG"]

logger = logging.getLogger(__name__)

FILES = db_records.FILES
VARIANTS = ("parallel", "serial", "packed", "serial-packed")
#: The stage log kept beside a database: stages measured with its kernels (``tvm-ios tune``).
STAGE_LOG = "stages.jsonl"
#: Target attributes that must agree for a database to count as tuned for a target (where
#: they do not, :func:`~.cpu_compat.incompatibility` decides whether it is applied).
MATCH_KEYS = ("kind", "mtriple", "mcpu", "mattr", "num-cores")


class KernelDBError(ValueError):
    """A kernel database that cannot be opened (missing, or not a database at all)."""


def host_target(num_cores: int | None = None):
    """The llvm target of this CPU: ``mcpu`` as LLVM detects it, ``num-cores`` = usable cores,
    and ``mattr`` turning off what the model has but this machine hides
    (:func:`~.cpu_compat.hidden_features`: AVX-512 on a Zen 4 VM that masks it).

    (A string target with flags is rejected by TVM 0.27 and ``mcpu=native`` falls back to
    a generic CPU, so the target is a dict.)
    """
    cores = num_cores or len(_tvm.usable_cores())
    spec = {"kind": "llvm", "mcpu": _tvm.llvm_system_cpu(), "num-cores": int(cores)}
    hidden = _hidden_here(spec["mcpu"])
    if hidden:
        spec["mattr"] = [f"-{feature}" for feature in hidden]
    return _tvm.make_target(spec)


@lru_cache(maxsize=None)
def _hidden_here(mcpu: str) -> tuple:
    """The features of ``mcpu`` this machine hides (logged once)."""
    model = _tvm.llvm_cpu_features(_tvm.make_target({"kind": "llvm", "mcpu": mcpu}))
    hidden = tuple(hidden_features(model, os_cpu_flags()))
    if hidden:
        logger.info("this %s hides %s (not in /proc/cpuinfo): kernels are built without them",
                    mcpu, ", ".join(hidden))
    return hidden


def serial_target(target):
    """``target`` with one core: what the serial (vEU) variants are tuned for."""
    spec = _tvm.target_to_dict(_tvm.make_target(target))
    spec = {k: v for k, v in spec.items() if k in ("kind", "mcpu", "mattr", "mtriple")}
    return _tvm.make_target({**spec, "num-cores": 1})


def target_name(target) -> str:
    """A directory name for a target: ``llvm-<mcpu>[-no-<family>...]-<cores>c``
    (``llvm-znver4-2c``; ``llvm-znver4-no-avx512-2c`` where ``mattr`` turns AVX-512 off)."""
    spec = _tvm.target_to_dict(_tvm.make_target(target))
    parts = [spec.get("kind", "llvm"), spec.get("mcpu") or "generic"]
    parts += [f"no-{group}" for group in disabled_groups(spec.get("mattr"))]
    if spec.get("num-cores"):
        parts.append(f"{spec['num-cores']}c")
    return "-".join(str(p) for p in parts)


def _identity(target) -> dict:
    spec = _tvm.target_to_dict(_tvm.make_target(target))
    return {k: spec.get(k) for k in MATCH_KEYS if spec.get(k) not in (None, "", [], ())}


def default_kernels_dir(model: str, image_size: int | None, target=None,
                        root: str | Path | None = None) -> Path:
    """``<root>/<target name>/<model>-<size>``; root: ``benchmarks/kernels`` of the checkout."""
    root = Path(root) if root else Path(__file__).resolve().parents[2] / "benchmarks" / "kernels"
    size = image_size if image_size is not None else "default"
    return root / target_name(target or host_target()) / f"{model}-{size}"


class KernelDB:
    """A kernel database directory (see the module docstring).

    Parameters
    ----------
    path : str or Path
        The directory.
    target : str, dict or Target, optional
        Target of a new database (default :func:`host_target`); an existing one keeps the
        target its ``target.json`` names.
    create : bool
        Create the directory when missing (tuning); else a missing one is an error.
    """

    def __init__(self, path, target=None, create: bool = False):
        self.path = Path(path)
        meta = self.path / "target.json"
        if meta.is_file():
            self.meta = json.loads(meta.read_text())
            self.target = _tvm.make_target(self.meta["target"])
        elif create:
            self.target = _tvm.make_target(target or host_target())
            self.meta = {"target": _identity(self.target), "target_name":
                         target_name(self.target), "tuning": []}
            self.path.mkdir(parents=True, exist_ok=True)
            self.save_meta()
        else:
            raise KernelDBError(f"{self.path} is not a kernel database (no target.json); "
                                "make one with `tvm-ios tune-kernels`")
        self._dbs: dict = {}
        self._tmp: list[str] = []

    def __repr__(self) -> str:
        return f"KernelDB({str(self.path)!r}, {target_name(self.target)})"

    @property
    def name(self) -> str:
        """The target name (``llvm-znver4-2c``)."""
        return target_name(self.target)

    def save_meta(self) -> None:
        """Write ``target.json``."""
        (self.path / "target.json").write_text(json.dumps(self.meta, indent=1) + "\n")

    @property
    def layout(self) -> str:
        """The convolutions' layout the kernels were tuned in (``NCHW``, or a blocked one
        such as ``NCHW16c``: the graph is then rewritten by
        :class:`~tvm_ios.passes.blocked_layout.BlockedLayout` before every build)."""
        return self.meta.get("layout", "NCHW")

    @property
    def block(self) -> int | None:
        """Channels per block of :attr:`layout`; None for ``NCHW``."""
        return parse_layout(self.layout)

    def matches(self, target) -> bool:
        """Whether the database was tuned for ``target`` (kind, mtriple, mcpu, mattr, num-cores)."""
        return _identity(self.target) == _identity(target)

    def target_for(self, variant: str):
        """The target a variant's kernels are tuned and applied for."""
        return serial_target(self.target) if variant.startswith("serial") else self.target

    def best_us(self, variant: str, func, name: str = "main") -> float | None:
        """The best time TVM's runner measured for PrimFunc ``func`` (untuned, as the
        build lowers it) in ``variant``, us; None without a record."""
        if not self.has(variant):
            return None
        record = self.database(variant).query_tuning_record(
            _tvm.ms_workload(func), self.target_for(variant), name)
        if record is None or not record.run_secs:
            return None
        return min(float(x) for x in record.run_secs) * 1e6

    def has(self, variant: str) -> bool:
        """Whether the variant's tuning-record file exists and holds a record."""
        self.unpack(variant)
        path = self.path / variant / FILES[1]
        return path.is_file() and path.stat().st_size > 0

    def database(self, variant: str, writable: bool = False, keep: int = 1):
        """The meta_schedule ``JSONDatabase`` of a variant (:mod:`~.records`).

        Read (what builds and record times use), corrupt lines are skipped, each named in a
        warning, and only the records that rank are read: where a workload has records
        timed as the variant's latest run timed them (cold or warm), its others are left
        out, and of those only each workload's ``keep`` best (a build asks for the best).
        ``writable`` (tuning appends to the files) holds every record; corrupt lines are
        moved to ``<file>.corrupt`` first. A read after records were appended gives a
        database holding them.
        """
        if variant not in VARIANTS:
            raise ValueError(f"kernel variant must be one of {VARIANTS}, got {variant!r}")
        self.unpack(variant)
        if writable:
            if (variant, "writable") not in self._dbs:
                self._dbs[(variant, "writable")] = self._open(variant, True)
            return self._dbs[(variant, "writable")]
        records = self.path / variant / FILES[1]
        stamp = records.stat().st_size if records.is_file() else -1  # (grows as appended)
        cached = self._dbs.get((variant, keep))
        if cached is None or cached[0] != stamp:
            self._dbs[(variant, keep)] = (stamp, self._open(variant, False, keep))
        return self._dbs[(variant, keep)][1]

    def _open(self, variant: str, writable: bool, keep: int | None = None):
        ranked = None if writable else (self.meta.get("tuning", []), variant)
        return db_records.open_records(self.path / variant, writable, ranked, self._tmp, keep)

    @property
    def fingerprint(self) -> str:
        """A short digest of the target and the record counts (read once): what a stage
        measured with these kernels is logged under."""
        if getattr(self, "_fingerprint", None) is None:
            kept = self.meta.get("fingerprint")  # (pruned: :mod:`~.prune` kept it)
            if kept and kept.get("counts") == self._counts():
                self._fingerprint = kept["value"]
                return self._fingerprint
            ident = f"{self.name}:{self.num_records('parallel')}:{self.num_records('serial')}"
            packed, vpacked = self.num_records("packed"), self.num_records("serial-packed")
            ident += f":{packed}" if packed else ""  # (digests of databases before a
            ident += f":sp{vpacked}" if vpacked else ""  # packed variant stay the same)
            ranked = [v for v in VARIANTS if db_records.mixed(self.meta.get("tuning"), v)]
            ident += f":ranked-{'-'.join(ranked)}" if ranked else ""  # (which records rank)
            self._fingerprint = hashlib.sha1(ident.encode()).hexdigest()[:10]
        return self._fingerprint

    def _counts(self) -> dict:
        return {v: self.num_records(v) for v in VARIANTS}

    def keep_fingerprint(self, value: str) -> None:
        """Keep :attr:`fingerprint` at ``value`` while the record counts stay as they are now
        (a pruned database: the same best records, so the same stage figures); records added
        later change it again. Saved with :meth:`save_meta`."""
        self.meta["fingerprint"] = {"value": value, "counts": self._counts()}
        self._fingerprint = None

    @property
    def stage_log(self) -> Path:
        """The stage log kept beside the database (:data:`STAGE_LOG`: stages measured with
        its kernels), restored from its packed copy where the working copy is missing."""
        path = self.path / STAGE_LOG
        db_records.unpack_beside(path)
        return path

    def num_records(self, variant: str) -> int:
        """Tuning records of a variant (lines of its record file)."""
        self.unpack(variant)
        path = self.path / variant / FILES[1]
        return len(db_records.clean_lines(path)[0]) if path.is_file() else 0

    def pack(self) -> list[Path]:
        """Write ``<file>.xz`` beside each database file and the stage log (what is committed:
        the JSON files are large, ~70 kB a workload, and compress ~30x), removing older
        ``.gz`` copies; returns the packed files."""
        paths = [self.path / v / name for v in VARIANTS for name in FILES]
        out = [db_records.pack_beside(p) for p in paths + [self.path / STAGE_LOG]
               if p.is_file()]
        return out

    def unpack(self, variant: str) -> None:
        """Restore a variant's JSON files from their ``.xz`` (or older ``.gz``) where the JSON
        is missing (a fresh checkout has only the packed files; the JSON is the working copy)."""
        for name in FILES:
            db_records.unpack_beside(self.path / variant / name)

    def close(self) -> None:
        """Forget open databases and remove repaired copies."""
        self._dbs.clear()
        for tmp in self._tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        self._tmp.clear()


def find_kernels(model: str, image_size: int | None, target=None,
                 root: str | Path | None = None) -> Path | None:
    """The seed database of a model and size under ``root`` (default the checkout's
    ``benchmarks/kernels``) for ``target`` (default :func:`host_target`): its own directory,
    else one tuned on a CPU whose code it runs, else any other (:func:`open_kernels` then
    warns, naming both); None when there is none."""
    path = default_kernels_dir(model, image_size, target, root)
    if path.is_dir():
        return path
    others = [p.parent for p in sorted(path.parents[1].glob(f"*/{path.name}/target.json"))]
    mcpu = str(_tvm.make_target(target or host_target()).attrs.get("mcpu", ""))
    others.sort(key=lambda p: not p.parent.name.startswith(f"llvm-{mcpu}-"))  # this model's first
    return next((p for p in others if runs_here(p, target)), others[0] if others else None)


def runs_here(path, target=None) -> bool:
    """Whether the database at ``path`` fits ``target`` (default :func:`host_target`) or was
    tuned for a CPU whose code it runs, or whose schedules it builds (:func:`schedules_fit`)."""
    db = KernelDB(path)
    here = _tvm.make_target(target or host_target())
    return incompatibility(db.target, here) is None or schedules_fit(db.target, here)


def open_kernels(path, target=None, quiet_missing: bool = False) -> KernelDB | None:
    """The kernel database at ``path`` if it fits ``target`` (default :func:`host_target`).

    A database tuned for another CPU whose code this one runs (:mod:`~.cpu_compat`) is
    returned with a warning naming both; builds then target the database's CPU. One tuned
    for this CPU model where it hid nothing, ``target`` hiding features (a VM masking
    AVX-512: :func:`~.cpu_compat.schedules_fit`), is returned with a warning and its
    ``target`` set to this one: its schedules are built without the hidden instructions. Returns
    None, with a warning naming both targets and what differs, when it was tuned for a
    target whose code cannot run here (the build then stays untuned), and None when
    ``path`` does not exist and ``quiet_missing`` is set (an automatic look-up found nothing).
    """
    if path is None:
        return None
    path = Path(path)
    if not (path / "target.json").is_file() and quiet_missing:
        return None
    db = KernelDB(path)
    here = _tvm.make_target(target or host_target())
    if db.matches(here):
        return db
    tuned, this = json.dumps(_identity(db.target)), json.dumps(_identity(here))
    why = incompatibility(db.target, here)
    if why is None:
        logger.warning("kernel database %s was tuned for target %s, this build is for %s, "
                       "which runs its code: applying it, built for %s (`tvm-ios "
                       "tune-kernels` ranks kernels on this CPU)", path, tuned, this, db.name)
        return db
    if schedules_fit(db.target, here):
        logger.warning("kernel database %s was tuned for target %s, this machine hides %s: "
                       "applying its schedules, built for %s", path, tuned,
                       ", ".join(disabled_groups(here.attrs.get("mattr"))), this)
        db.target = here
        return db
    logger.warning("kernel database %s was tuned for target %s, this build is for %s (%s): "
                   "building untuned", path, tuned, this, why)
    return None
