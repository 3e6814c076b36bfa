"""Whether this CPU runs the kernels of a database tuned on another one.

A kernel database names the llvm target it was tuned for (:mod:`~.kernel_db`). A machine
upgraded to a newer CPU of the same line (AMD Zen 4 to Zen 5: ``znver4`` to ``znver5``)
runs every instruction that target's code uses, so its tuned kernels still beat untuned
ones many times over; only the ranking of the candidates was measured on the other CPU.
:func:`incompatibility` says what stops a database from running here, or nothing:

* the kind, the core count (parallel kernels and vEU counts are tuned for it) and ``mattr``
  must agree, and the triple (absent: this machine's);
* every instruction-set feature LLVM gives the database's ``mcpu`` must be one of this
  CPU's. LLVM's tuning hints (``fast-*``, ``slow-*``, ``false-deps-*``, ``prefer-256-bit``,
  ...) are listed as features too; they change code choices, not what can run, so they
  are not compared.

Such a database is applied with a warning and the build targets the database's CPU (code
this CPU runs); ``tvm-ios tune-kernels`` makes one ranked here.

LLVM names this CPU by its model (``znver4``), and a model implies its instruction sets; a
virtual machine may hide some of them (a Zen 4 VM without AVX-512: code built for
``znver4`` died of an illegal instruction, every tuning candidate with it).
:func:`hidden_features` compares the vector features LLVM gives the model with the flags the
operating system reports (``/proc/cpuinfo``); the host target turns the hidden ones off
(``mattr``), so its code runs, and its databases are its own. A database tuned where nothing
was hidden still serves it (:func:`schedules_fit`): records are schedules, not code, so its
kernels are built for this machine's target, without the hidden instructions.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from .. import _tvm

__all__ = ["incompatibility", "TUNING_HINTS", "CHECKED", "os_cpu_flags", "hidden_features",
           "disabled_groups", "schedules_fit"]

#: Prefixes (and names) of LLVM x86 features that are tuning hints, not instructions.
TUNING_HINTS = ("false-deps-", "fast-", "faster-", "slow-", "no-bypass-delay", "prefer-",
                "tuning-", "idivl-", "idivq-", "lea-", "pad-short-", "avoid-", "allow-light-",
                "use-glm-", "use-slm-", "sbb-dep-", "branch-hint", "macrofusion",
                "branchfusion", "ermsb", "fsrm")


#: Prefixes of the LLVM x86 features compared with the operating system's flags: the vector
#: instruction sets generated code uses, whose names the two spell alike but for ``_.-``
#: (``avx512vnni``/``avx512_vnni``, ``amx-tile``/``amx_tile``). AVX10 is spelled otherwise.
CHECKED = ("avx", "amx", "fma", "f16c", "vaes", "vpclmulqdq", "gfni")


def _norm(name: str) -> str:
    return name.lower().replace("_", "").replace(".", "").replace("-", "")


@lru_cache(maxsize=None)
def os_cpu_flags(path: str = "/proc/cpuinfo") -> frozenset | None:
    """The CPU flags the operating system reports (Linux x86: the first ``flags`` line of
    ``path``), spelled as :func:`hidden_features` compares them; None where it reports none
    (another OS or architecture: nothing is then taken to be hidden)."""
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(_norm(flag) for flag in value.split())
    return None


def hidden_features(features, flags) -> list[str]:
    """The vector features (:data:`CHECKED`) in LLVM's ``features`` of a CPU model that
    ``flags`` (:func:`os_cpu_flags`) lacks: instructions the model has but this machine does
    not run. ``flags`` None: none."""
    if flags is None:
        return []
    return sorted(f for f in isa_features(features)
                  if f.startswith(CHECKED) and not f.startswith("avx10") and _norm(f) not in flags)


def disabled_groups(mattr) -> list[str]:
    """The families of the features ``mattr`` turns off (``-avx512f``, ``-avx512bw``:
    ``avx512``), for a target's directory name."""
    groups = set()
    for attr in mattr or ():
        attr = str(attr)
        if attr.startswith("-"):
            name = attr[1:]
            groups.add(next((g for g in ("avx512", "amx") if name.startswith(g)), name))
    return sorted(groups)


def isa_features(features) -> set:
    return {f for f in features if not f.startswith(TUNING_HINTS)}


def _spec(target) -> dict:
    return _tvm.target_to_dict(_tvm.make_target(target))


def incompatibility(tuned, here) -> str | None:
    """Why code tuned for ``tuned`` cannot run on ``here`` (llvm targets), or None.

    Parameters
    ----------
    tuned, here : str, dict or Target
        The database's target and the target of this machine's build.
    """
    a, b = _spec(tuned), _spec(here)
    for key in ("kind", "num-cores", "mattr"):
        if (a.get(key) or None) != (b.get(key) or None):
            return f"{key} {a.get(key)!r} is not {b.get(key)!r}"
    if a.get("kind") != "llvm":
        return None if a == b else "another target"
    system = _tvm.llvm_system_triple()
    if (a.get("mtriple") or system) != (b.get("mtriple") or system):
        return f"triple {a.get('mtriple') or system} is not {b.get('mtriple') or system}"
    lacking = isa_features(_tvm.llvm_cpu_features(_tvm.make_target(tuned))) \
        - isa_features(_tvm.llvm_cpu_features(_tvm.make_target(here)))
    if lacking:
        return f"{b.get('mcpu') or 'this CPU'} lacks {', '.join(sorted(lacking)[:6])}"
    return None


def schedules_fit(tuned, here) -> bool:
    """Whether a database tuned for ``tuned`` serves ``here`` rebuilt for ``here``: ``here``
    is the same kind of machine but for features its ``mattr`` turns off (a VM hiding
    AVX-512) and ``tuned`` turns none off. Its schedules (loop tilings, vector lengths) then
    build for ``here``, where LLVM splits the vectors the hidden instructions would take."""
    a, b = _spec(tuned), _spec(here)
    off = [str(m) for m in b.get("mattr") or ()]
    if a.get("mattr") or not off or not all(m.startswith("-") for m in off):
        return False
    return incompatibility({**a, "mattr": off}, b) is None
