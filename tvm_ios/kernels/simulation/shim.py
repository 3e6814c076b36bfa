"""A preloaded shim that keeps Oclgrind's race detector from drowning in cross-group reports.

Oclgrind 21.10 checks, when a work-group completes, its global accesses against those of
the work-groups that completed before; every conflict between two *different* groups goes
to ``RaceDetector::insertKernelRace``, which de-duplicates it by scanning a list of every
report so far. A persistent rProgram reads, by design, what other vEUs (work-groups) wrote
in the same launch, ordered by the step array, which Oclgrind does not model: each such
read is reported. Their pairs of work-items are distinct, so the list grows to tens of
thousands and the scan is quadratic: on Inception V3's 1024-thread programs it took 93% of
the simulator's time (``perf``), hours per program on two cores.

Those reports never count as errors here (:mod:`tvm_ios.kernels.simulation.oclgrind` counts only
races whose two sides are in one work-group, which Oclgrind finds at barriers, in another
function). The shim defines that one C++ function, by its mangled name, as a no-op, and is
preloaded (``LD_PRELOAD``) into the simulator process: Oclgrind's library calls it through
its PLT, so the preloaded definition wins. Races inside a work-group, out-of-bounds accesses
and barrier divergence are reported as before; cross-group races are then not recorded.
Where no C compiler is found, the simulation runs without the shim (slower, same verdict).
"""
from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["race_shim", "SHIM_SYMBOL"]

logger = logging.getLogger(__name__)

#: ``oclgrind::RaceDetector::insertKernelRace(oclgrind::RaceDetector::Race const&)``
SHIM_SYMBOL = "_ZN8oclgrind12RaceDetector16insertKernelRaceERKNS0_4RaceE"

_SOURCE = f"""/* tvm-ios: drop Oclgrind's reports of races across work-groups (see oclgrind_shim.py) */
void {SHIM_SYMBOL}(void *self, const void *race) {{
    (void)self;
    (void)race;
}}
"""


def race_shim() -> str | None:
    """The path of the compiled shim (built once per user and source), or None where it
    cannot be built (no C compiler: a warning says the simulation will be slower)."""
    digest = hashlib.sha256(_SOURCE.encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"tvm_ios_oclgrind_shim_{os.getuid()}_{digest}.so"
    if path.is_file():
        return str(path)
    compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if compiler is None:
        logger.warning("no C compiler: Oclgrind runs without the cross-group race shim "
                       "(large programs simulate much slower)")
        return None
    with tempfile.TemporaryDirectory(prefix="tvm_ios_shim_") as tmp:
        source = Path(tmp) / "shim.c"
        source.write_text(_SOURCE)
        built = Path(tmp) / "shim.so"
        proc = subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", str(built),
                               str(source)], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            logger.warning("the cross-group race shim did not compile (%s): Oclgrind runs "
                           "without it: %s", compiler, proc.stderr.strip()[-500:])
            return None
        staged = path.with_suffix(f".{os.getpid()}.tmp")
        shutil.copyfile(built, staged)
        os.replace(staged, path)  # atomic: concurrent builders leave one whole file
    return str(path)
