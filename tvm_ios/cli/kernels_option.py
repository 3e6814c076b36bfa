"""``--kernels DIR|auto|none``: the option every building verb takes, and what it opens.

Its own module so that :mod:`.common` (loading models) and :mod:`.tune_kernels` (which
imports :mod:`.common`) both use it without importing each other.
"""
from __future__ import annotations

from .errors import note_fallback

__all__ = ["add_kernels_option", "kernels_of"]


def add_kernels_option(parser, default=None) -> None:
    """``--kernels DIR|auto|none``: the kernel database every build of the verb applies."""
    parser.add_argument("--kernels", metavar="DIR", default=default,
                        help="kernel database of `tvm-ios tune-kernels` applied to every "
                             "build (auto: this model's in the cache $TVM_IOS_CACHE, else "
                             "a seed for its name, size and CPU, if any; none: untuned; "
                             f"default {default or 'none'})")


def kernels_of(args, name: str | None = None, mod=None):
    """The :class:`~tvm_ios.tuning.kernel_db.KernelDB` of ``--kernels`` for this machine,
    or None (untuned: none asked, none found, or tuned for another target, with a warning,
    recorded by :func:`~tvm_ios.cli.errors.note_fallback`: exit 2 under ``--strict``).
    ``auto``: the model's own in the user's cache (needs its Relax module ``mod``), else a
    seed (:func:`~tvm_ios.tuning.cache.lookup`)."""
    from ..tuning.cache import hint_once, lookup
    from ..tuning.kernel_db import open_kernels

    spec = getattr(args, "kernels", None)
    if spec in (None, "none"):
        return None
    path = lookup(name or args.model, args.image_size, mod) if spec == "auto" else spec
    if path is None:
        return None
    db = open_kernels(path)
    if db is None:  # tuned for a target whose code cannot run here (warned): untuned
        note_fallback(args, "kernels", "untuned", f"kernel database {path} was tuned for "
                      "another target, whose code cannot run here: building untuned")
        if spec == "auto":  # (and say how to tune for this one)
            hint_once(name or args.model, args.image_size)
    return db
