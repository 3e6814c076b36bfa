"""A kernel database variant's files as builds read them: corrupt lines skipped, and the
records that rank, by how they were timed.

A line that is not a JSON document of the meta_schedule format is skipped, named in a
warning (:func:`open_records`). Read-only, a clean copy is read; opened for tuning (which
appends to the files), the corrupt lines move to ``<file>.corrupt`` first, so what follows
them is kept and the database stays loadable.

Every run that adds records to a variant (a search, a retiming) times its candidates one way:
*cold*, each call after its arguments but the first were flushed from the caches, as a
model whose weights exceed the caches runs its kernels (the tuner's default), or *warm*, many
calls in a row (``--warm``; the runs in ``target.json``'s history without a ``cache`` entry
were all timed so, before cold timing existed). The two do not compare: the same kernel
times lower warm, so a database holding both ranks a warm-timed candidate first whatever its
cold time, and a packed kernel timed cold loses to a plain one timed warm. On the Zen 4,
RandWire's 1232-channel 1x1 convolution: the plain kernel's record 123 us (warm; 206 us
cold), the packed one's 133 (cold; 139 again, 180 against the plain one's 259 reading a new
copy of its weights each call, as the model does) -- the build ran the plain one.

So a variant's records rank within the timing of its latest run (:func:`preferred`): for each
workload, its records so timed, or all of its records where it has none
(:func:`ranked_lines`). ``tvm-ios tune-kernels --retime K`` times the K best candidates of
every workload again, the current way, and so gives each workload records that rank.

A read copy then holds only the records a reader can be given (:func:`best_lines`): a build
asks each kernel's best one, and meta_schedule's ``JSONDatabase`` replays every record's
trace on its workload as it loads the file. Inception V3's packed variant on the Zen 3,
2208 records (45 MB), took 12.0 s to load, its 59 best records 1.5 s (parallel: 7.5 and
0.7 s): each stage build's worker loads them anew, and 6 stage builds had run past the
builder's 60 s timeout.
"""
from __future__ import annotations

import gzip
import json
import logging
import lzma
import os
import shutil
import tempfile
from pathlib import Path

from .. import _tvm

__all__ = ["COLD", "WARM", "FILES", "best_lines", "clean_lines", "line_timings", "mixed",
           "open_records", "pack_beside", "preferred", "ranked_lines", "runs_of",
           "unpack_beside"]

logger = logging.getLogger(__name__)

COLD, WARM = "cold", "warm"
FILES = ("database_workload.json", "database_tuning_record.json")
MAX_SECS = 1e10  # meta_schedule's stub time of a candidate that did not run
_TOLD: set = set()


def clean_lines(path: Path) -> tuple[list[str], list[int]]:
    """The valid JSON lines of ``path`` and the 1-based numbers of the corrupt ones."""
    good, bad = [], []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            bad.append(number)
            continue
        if not isinstance(value, list) or len(value) < 2:
            bad.append(number)
            continue
        good.append(line)
    return good, bad


def runs_of(history, variant: str) -> list:
    """The runs in ``history`` (``target.json``'s ``tuning`` list) that added to ``variant``."""
    return [entry for entry in history or () if entry.get("variant") == variant]


def preferred(history, variant: str) -> str:
    """How the latest run in ``history`` (``target.json``'s ``tuning`` list) timed the
    variant's records: ``"cold"`` or ``"warm"`` (``"cold"``, the tuner's default, when no
    run is listed)."""
    runs = runs_of(history, variant)
    return runs[-1].get("cache", WARM) if runs else COLD


def mixed(history, variant: str) -> bool:
    """Whether the runs in ``history`` timed the variant's records both ways."""
    return len({run.get("cache", WARM) for run in runs_of(history, variant)}) > 1


def line_timings(history, variant: str, count: int) -> list[str]:
    """The timing of each of the variant's ``count`` record lines, in file order.

    Each run in ``history`` appended the lines up to its ``records`` (the count after it);
    lines past the last run listed were appended by a run that did not finish (killed
    before it wrote its entry) and count as timed by the tuner's default, cold.
    """
    out: list[str] = []
    for run in runs_of(history, variant):
        end = min(int(run.get("records", len(out))), count)
        out.extend([run.get("cache", WARM)] * max(0, end - len(out)))
    if len(out) < count:
        logger.debug("%d %s records past the runs listed: counted as timed cold",
                     count - len(out), variant)
    return out + [COLD] * (count - len(out))


def ranked_lines(lines: list[str], timings: list[str], prefer: str) -> list[str] | None:
    """The record lines that rank: for each workload (a line's first item), those timed
    ``prefer`` if it has any, else all of its lines; None when that is every line."""
    workloads = [json.loads(line)[0] for line in lines]
    timed = {w for w, t in zip(workloads, timings) if t == prefer}
    out = [line for line, w, t in zip(lines, workloads, timings)
           if t == prefer or w not in timed]
    return None if len(out) == len(lines) else out


def best_lines(lines: list[str], keep: int) -> list[str] | None:
    """Of each workload's record lines, the ``keep`` that meta_schedule ranks first (least
    mean run time, the earlier of equals), in file order; lines that never rank (no time,
    a failed run, an empty trace) are left out. None when that is every line."""
    ranks: dict = {}
    for number, line in enumerate(lines):
        workload, record = json.loads(line)[:2]
        trace, secs = record[0], record[1]
        mean = sum(secs) / len(secs) if secs else MAX_SECS
        if mean < MAX_SECS and trace and trace[0]:
            ranks.setdefault(workload, []).append((mean, number))
    chosen = sorted(n for ranked in ranks.values() for _, n in sorted(ranked)[:keep])
    return None if len(chosen) == len(lines) else [lines[n] for n in chosen]


def open_records(folder: Path, writable: bool, ranked: tuple | None, scratch: list,
                 keep: int | None = None):
    """The ``JSONDatabase`` of a variant's ``folder``: corrupt lines skipped (see the module
    docstring); ``ranked``, ``(history, variant)``, leaves out of a read copy the records
    that do not rank (:func:`ranked_lines`), ``keep`` all but each workload's ``keep``
    best of those (:func:`best_lines`). Copies are made in new directories appended to
    ``scratch`` (the caller removes them)."""
    folder.mkdir(parents=True, exist_ok=True) if writable else None
    paths = [folder / f for f in FILES]
    lines = {p: clean_lines(p) for p in paths if p.is_file()}
    for p, (_, bad) in lines.items():
        if bad:
            logger.warning("kernel database %s: skipped corrupt line(s) %s", p,
                           ", ".join(map(str, bad)))
    kept = _ranked(folder, lines[paths[1]][0], *ranked) \
        if ranked is not None and paths[1] in lines else None
    if keep and not writable and paths[1] in lines:
        best = best_lines(lines[paths[1]][0] if kept is None else kept, keep)
        kept = kept if best is None else best
    if kept is not None:
        lines[paths[1]] = (kept, lines[paths[1]][1])
    if kept is not None or any(bad for _, bad in lines.values()):
        folder = _copy(lines, scratch) if not writable else _set_aside(folder, lines)
    return _tvm.ms.database.JSONDatabase(str(folder / FILES[0]), str(folder / FILES[1]),
                                         allow_missing=True)


def _ranked(folder: Path, lines: list[str], history, variant: str) -> list[str] | None:
    prefer = preferred(history, variant)
    kept = ranked_lines(lines, line_timings(history, variant, len(lines)), prefer)
    if kept is not None and (str(folder), len(lines)) not in _TOLD:
        _TOLD.add((str(folder), len(lines)))  # (once a file: builds read it again and again)
        logger.info("kernel database %s: %d of %d records rank (timed %s)", folder,
                    len(kept), len(lines), prefer)
    return kept


def _copy(lines: dict, scratch: list) -> Path:
    copy = Path(tempfile.mkdtemp(prefix="tvm_ios_kdb_"))
    scratch.append(str(copy))
    for p, (good, _) in lines.items():
        (copy / p.name).write_text("".join(g + "\n" for g in good))
    return copy


def _set_aside(folder: Path, lines: dict) -> Path:
    for p, (good, bad) in lines.items():
        if bad:
            text = p.read_text().splitlines()
            with open(f"{p}.corrupt", "a", encoding="utf-8") as out:
                out.writelines(text[n - 1] + "\n" for n in bad)
            tmp = p.with_suffix(".tmp")
            tmp.write_text("".join(g + "\n" for g in good))
            os.replace(tmp, p)
    return folder


def pack_beside(path: Path) -> Path:
    """Write ``<path>.xz`` (what a checkout carries of a database file or stage log) and
    remove an older ``<path>.gz``; returns the packed file."""
    path = Path(path)
    packed = path.with_name(path.name + ".xz")
    with open(path, "rb") as src, lzma.open(packed, "wb", preset=9 | lzma.PRESET_EXTREME) as dst:
        shutil.copyfileobj(src, dst)
    path.with_name(path.name + ".gz").unlink(missing_ok=True)
    return packed


def unpack_beside(path: Path) -> None:
    """Restore ``path`` from ``<path>.xz`` (or an older ``<path>.gz``) where it is missing."""
    path = Path(path)
    if path.is_file():
        return
    for suffix, opener in ((".xz", lzma.open), (".gz", gzip.open)):
        packed = path.with_name(path.name + suffix)
        if packed.is_file():
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            with opener(packed, "rb") as src, open(tmp, "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.replace(tmp, path)  # (atomic: a concurrent reader sees all of it or none)
            return
