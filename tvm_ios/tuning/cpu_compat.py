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
"""
from __future__ import annotations

from .. import _tvm

__all__ = ["incompatibility", "TUNING_HINTS"]

#: Prefixes (and names) of LLVM x86 features that are tuning hints, not instructions.
TUNING_HINTS = ("false-deps-", "fast-", "faster-", "slow-", "no-bypass-delay", "prefer-",
                "tuning-", "idivl-", "idivq-", "lea-", "pad-short-", "avoid-", "allow-light-",
                "use-glm-", "use-slm-", "sbb-dep-", "branch-hint", "macrofusion",
                "branchfusion", "ermsb", "fsrm")


def _isa(features) -> set:
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
    lacking = _isa(_tvm.llvm_cpu_features(_tvm.make_target(tuned))) \
        - _isa(_tvm.llvm_cpu_features(_tvm.make_target(here)))
    if lacking:
        return f"{b.get('mcpu') or 'this CPU'} lacks {', '.join(sorted(lacking)[:6])}"
    return None
