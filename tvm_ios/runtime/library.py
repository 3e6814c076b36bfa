"""Libraries that carry their schedule: what ``tvm-ios compile`` exports and ``run --lib`` checks.

The tvm-ios pipeline adds one Relax function, :data:`METADATA_FUNC`, to the module it
builds; it takes no argument and returns a JSON string: the passes applied, the schedule,
the rPrograms, the target, the TVM and tvm-ios versions, the inputs of ``main`` and the
thread-pool workers (vEUs) the CPU rPrograms need. Whoever loads the library can check it
before running it::

    meta = read_metadata(load_library("out.so"))
    check_library(meta, inputs=[("data", (1, 3, 75, 75), "float32")])

Every failure here is a :class:`LibraryError` (a ``ValueError``) with a sentence that
says what is wrong and what to do.
"""
from __future__ import annotations

import hashlib
import json
import logging
import struct
from pathlib import Path

from tvm import relax

from .. import __version__ as TVM_IOS_VERSION
from .. import _tvm

__all__ = ["METADATA_FUNC", "LibraryError", "attach_metadata", "read_metadata",
           "load_library", "check_library", "function_inputs", "weights_digest", "elf_extent"]

logger = logging.getLogger(__name__)

#: The Relax function (and VM function) holding a library's metadata as JSON.
METADATA_FUNC = "tvm_ios_metadata"


class LibraryError(ValueError):
    """A library that cannot be run here as it is (wrong target, version, shapes, pool)."""


def function_inputs(mod, func_name: str = "main") -> list[dict]:
    """``[{"name", "shape", "dtype"}]`` of the runtime inputs of ``mod[func_name]`` (the
    leading ``num_input`` parameters when that attribute is set)."""
    func = mod[func_name]
    params = list(func.params)
    if func.attrs is not None and "num_input" in func.attrs:
        params = params[: int(func.attrs["num_input"])]
    return [{"name": _tvm.var_name(p), "shape": list(_tvm.shape_of(p) or ()),
             "dtype": _tvm.dtype_of(p)} for p in params]


def weights_digest(params: dict) -> str:
    """A SHA-256 of the weights (names, shapes, dtypes, values), to tell whether a library
    was built from the weights a model gives now."""
    digest = hashlib.sha256()
    for name in sorted(params):
        array = params[name]
        digest.update(f"{name}:{array.shape}:{array.dtype};".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def attach_metadata(mod, data: dict):
    """``mod`` with :data:`METADATA_FUNC` returning ``data`` (plus the versions) as JSON."""
    record = {"tvm_ios": TVM_IOS_VERSION, "tvm": _tvm.TVM_VERSION, **data}
    func = relax.Function([], _tvm.string_imm(json.dumps(record)), relax.ObjectType())
    mod = mod.clone()
    mod[METADATA_FUNC] = func.with_attr("global_symbol", METADATA_FUNC)
    return mod


def load_library(path: str | Path):
    """The runtime module of an exported library, with a clear error when it cannot load."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"library {path} does not exist")
    need, size = elf_extent(path), path.stat().st_size
    if need > size:  # (the loader would map pages past the end: SIGBUS, no message)
        raise LibraryError(f"{path} is cut short or damaged: its ELF headers need {need} "
                           f"bytes, the file has {size}. Rebuild it with `tvm-ios compile`.")
    try:
        return _tvm.load_module(str(path))
    except Exception as err:  # noqa: BLE001  (TVM raises several kinds here)
        raise LibraryError(f"{path} cannot be loaded by TVM {_tvm.TVM_VERSION}: "
                           f"{_first_line(err)}. Was it built for another target or TVM "
                           "version? Rebuild it with `tvm-ios compile` here.") from None


def elf_extent(path: str | Path) -> int:
    """The bytes an ELF file's headers say it holds (its program and section header tables
    and every segment's file image); 0 for a file that is not ELF."""
    with open(path, "rb") as handle:
        head = handle.read(64)
        if len(head) < 52 or head[:4] != b"\x7fELF" or head[4] not in (1, 2):
            return 0
        end = "<" if head[5] == 1 else ">"
        wide = head[4] == 2  # ELF64
        phoff, shoff = struct.unpack_from(end + ("QQ" if wide else "II"), head,
                                          0x20 if wide else 0x1C)
        phsize, phnum, shsize, shnum = struct.unpack_from(end + "HHHH", head,
                                                          0x36 if wide else 0x2A)
        need = max(phoff + phsize * phnum, shoff + shsize * shnum)
        handle.seek(phoff)
        table = handle.read(phsize * phnum)
    for k in range(len(table) // max(phsize, 1)):
        entry = table[k * phsize:(k + 1) * phsize]
        offset, filesz = (struct.unpack_from(end + "QQQQ", entry, 8)[::3] if wide else
                          struct.unpack_from(end + "IIII", entry, 4)[::3])
        need = max(need, offset + filesz)
    return need


def read_metadata(lib, where: str = "library") -> dict:
    """The metadata a tvm-ios library carries (:data:`METADATA_FUNC`)."""
    try:
        vm = _tvm.virtual_machine(lib)
        return json.loads(str(vm[METADATA_FUNC]()))
    except Exception as err:  # noqa: BLE001
        raise LibraryError(f"{where} carries no tvm-ios metadata ({_first_line(err)}); "
                           "build it with `tvm-ios compile` or the tvm-ios pipeline") from None


def check_library(meta: dict, inputs: list | None = None, weights: str | None = None,
                  workers: int | None = None, where: str = "library") -> None:
    """Raise :class:`LibraryError` when a library's metadata says it cannot run here.

    Parameters
    ----------
    meta : dict
        From :func:`read_metadata`.
    inputs : list of dict, optional
        The inputs the caller will pass (:func:`function_inputs`); checked against the
        library's.
    weights : str, optional
        :func:`weights_digest` of the caller's weights; checked when the library has one.
    workers : int, optional
        Workers of TVM's thread pool here; checked against the vEUs the library's CPU
        rPrograms need.
    where : str
        Names the library in messages.
    """
    if meta.get("tvm") != _tvm.TVM_VERSION:
        raise LibraryError(f"{where} was built with TVM {meta.get('tvm')}, this is TVM "
                           f"{_tvm.TVM_VERSION}; rebuild it here")
    kind = meta.get("target_kind")
    if kind not in ("llvm", "c") and not _tvm.device_exists(_tvm.make_target(meta["target"])):
        raise LibraryError(f"{where} was built for target {meta.get('target')!r} and no "
                           f"{str(kind).upper()} device is present here")
    if inputs is not None:
        _check_inputs(meta.get("inputs", []), inputs, where)
    if weights is not None and meta.get("weights") not in (None, weights):
        raise LibraryError(f"{where} was built from other weights than the model gives here "
                           f"(it was built from {meta.get('model')!r}); compile it again")
    needed = int(meta.get("num_veus", 0) or 0)
    if workers is not None and needed > workers:
        raise LibraryError(
            f"{where} runs rPrograms on {needed} vEUs, one per worker of TVM's thread pool, "
            f"but the pool has {workers} workers here: set TVM_NUM_THREADS={needed} (on a "
            f"machine with at least {needed} cores), or recompile the library here")


def _check_inputs(built: list, given: list, where: str) -> None:
    def spec(items):
        return [(tuple(i["shape"]), i["dtype"]) for i in items]

    if spec(built) != spec(given):
        raise LibraryError(
            f"{where} takes inputs {_show(built)} but the model gives {_show(given)}; "
            "compile the library for this model (same --image-size and --batch)")


def _show(items: list) -> str:
    return ", ".join(f"{i['name']}{tuple(i['shape'])} {i['dtype']}" for i in items) or "none"


def _first_line(err: Exception) -> str:
    lines = [line for line in str(err).strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else type(err).__name__
