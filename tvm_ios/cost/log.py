"""The measurement log: append-only JSON lines that outlive the process.

One line per measured stage::

    {"key": ..., "target": "llvm ...", "device_key": "local:host", "run_secs": [...],
     "median_us": 12.3, "timestamp": 1763790000.0, "tvm_version": "0.27.0",
     "tvm_ios_version": "0.1.0", "stage": {"strategy": ..., "groups": [[{op}, ...], ...]},
     "signature": ..., "build": ...}

``(key, target, device_key)`` identifies a measurement: a stage found there is never
measured again, whatever model it came from. ``signature`` (:mod:`.signature`) names the
same stage without building its module, so lookups by it are cheap; records written
before it existed are found by key. ``build`` (with tuned kernels) is a digest of the code
the stage's build compiled (:mod:`.reuse`): a stage whose database grew is found by it when
its own kernels did not change. Lines are only ever appended (flushed and
fsynced one by one), each under an exclusive ``flock`` of the file, so that processes
appending to one log at once never glue a line to another's; a corrupt or partial line (a
run killed mid-write) is skipped with a warning naming its line number and left where it is.
A write that fails (a full disk) raises ``OSError`` naming the log; what was appended
before stays.
"""
from __future__ import annotations

import fcntl
import json
import logging
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .. import __version__ as TVM_IOS_VERSION
from .. import _tvm
from ..tuning.records import unpack_beside

__all__ = ["LogRecord", "MeasureLog"]

logger = logging.getLogger(__name__)

_REQUIRED = ("key", "target", "device_key", "run_secs", "median_us")


@dataclass
class LogRecord:
    """One measurement (see the module docstring for the fields)."""

    key: str
    target: str
    device_key: str
    run_secs: list
    median_us: float
    timestamp: float = field(default_factory=time.time)
    tvm_version: str = _tvm.TVM_VERSION
    tvm_ios_version: str = TVM_IOS_VERSION
    stage: dict = field(default_factory=dict)
    signature: str = ""
    build: str = ""

    @property
    def ident(self) -> tuple[str, str, str]:
        """``(key, target, device_key)``."""
        return (self.key, self.target, self.device_key)

    @classmethod
    def from_dict(cls, data: dict) -> "LogRecord":
        """Parse a log line's object; raises ``ValueError`` naming a missing or bad field."""
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        missing = [k for k in _REQUIRED if k not in data]
        if missing:
            raise ValueError(f"missing field(s) {missing}")
        if not isinstance(data["run_secs"], list) or not data["run_secs"]:
            raise ValueError("field 'run_secs' must be a non-empty list")
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        record = cls(**known)
        record.median_us = float(record.median_us)
        return record


class MeasureLog:
    """An append-only JSON-lines log of stage measurements, indexed in memory.

    Parameters
    ----------
    path : str or Path, optional
        The log file (created on first append; its directory too). None keeps the log in
        memory only.
    """

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else None
        self.records: list[LogRecord] = []
        self.index: dict[tuple[str, str, str], LogRecord] = {}
        self.by_signature: dict[tuple[str, str, str], LogRecord] = {}
        self.by_build: dict[tuple[str, str, str], LogRecord] = {}
        self.unsigned: set[tuple[str, str]] = set()  # (target, device key) of old records
        self.skipped = 0
        if self.path is not None:
            unpack_beside(self.path)  # (a committed log is carried packed: ``<path>.xz``)
        if self.path is not None and self.path.exists():
            self._load()

    def __len__(self) -> int:
        return len(self.records)

    def __repr__(self) -> str:
        return f"MeasureLog({str(self.path) if self.path else None!r}, {len(self)} records)"

    def _load(self) -> None:
        with open(self.path, encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = LogRecord.from_dict(json.loads(line))
                except (ValueError, TypeError) as err:
                    self.skipped += 1
                    logger.warning("%s line %d skipped (corrupt or partial record: %s)",
                                   self.path, number, str(err)[:120])
                    continue
                self._add(record)
        logger.info("%s: %d records loaded, %d lines skipped", self.path, len(self),
                    self.skipped)

    def _add(self, record: LogRecord) -> None:
        self.records.append(record)
        self.index.setdefault(record.ident, record)
        if record.signature:
            self.by_signature.setdefault((record.signature, record.target, record.device_key),
                                         record)
        if record.build:
            self.by_build.setdefault((record.build, record.target, record.device_key), record)
        if not record.signature and record.stage.get("strategy") != "model":
            self.unsigned.add((record.target, record.device_key))  # (models: found by key)

    def lookup(self, key: str, target: str, device_key: str) -> LogRecord | None:
        """The first record of a stage on a target and device, or None."""
        return self.index.get((key, target, device_key))

    def lookup_signature(self, signature: str, target: str,
                         device_key: str) -> LogRecord | None:
        """The first record of a stage signature on a target and device, or None."""
        return self.by_signature.get((signature, target, device_key))

    def lookup_build(self, build: str, target: str, device_key: str) -> LogRecord | None:
        """The first record of a build digest (:mod:`.reuse`) on a target and device."""
        return self.by_build.get((build, target, device_key))

    def append(self, record: LogRecord) -> None:
        """Add a record and append it to the file at once (flushed and fsynced).

        Raises ``OSError`` (its ``filename`` the log) when the write fails, a full disk say.
        """
        self._add(record)
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(asdict(record), separators=(",", ":")).encode() + b"\n"
        try:
            with open(self.path, "ab") as handle:
                # one appender at a time: no other line between the check and the write
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)  # (released on close)
                if not _ends_with_newline(self.path):
                    line = b"\n" + line  # a killed writer left a partial line: never glue
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as err:
            err.filename = err.filename or str(self.path)
            raise

    def for_device(self, target: str | None = None,
                   device_key: str | None = None) -> list[LogRecord]:
        """Records of one target and/or device key."""
        return [r for r in self.records if (target is None or r.target == target)
                and (device_key is None or r.device_key == device_key)]


def _ends_with_newline(path: Path) -> bool:
    """Whether ``path`` is empty or ends with a newline."""
    with open(path, "rb") as handle:
        if handle.seek(0, os.SEEK_END) == 0:
            return True
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"
