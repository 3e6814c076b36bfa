"""``tvm-ios tune-kernels``: tune the kernels a model's builds call, with TVM's meta_schedule.

    tvm-ios tune-kernels --model inception_v3 --image-size 75 --trials 600
    tvm-ios tune-kernels --model squeezenet --db DIR --rpc-tracker 127.0.0.1:9190 --rpc-key k
    tvm-ios tune-kernels --model inception_v3 --image-size 75 --retime 8 --from OTHER_CPU_DB
    tvm-ios tune-kernels --model resnext29 --image-size 32 --variants packed \
        --kernel 'fused_conv2d7_*' 'fused_conv2d11_*' --trials 256

The database (TVM's JSON format, append-only; a rerun resumes up to ``--trials`` per
variant) defaults to the user's cache, ``$TVM_IOS_CACHE/kernels/<target name>/<model>-<digest>``
(:mod:`tvm_ios.tuning.cache`), the directory ``tvm-ios run`` and the other verbs find
first with ``--kernels auto``; ``--db benchmarks/kernels/...`` tunes a committed seed.
"""
from __future__ import annotations

import importlib.util
import sys
import time

from .common import add_model_options, load_model, write_json

#: The kernel variants (:data:`tvm_ios.tuning.kernel_db.VARIANTS`; parsing imports no TVM).
VARIANTS = ("parallel", "serial", "packed", "serial-packed")

__all__ = ["add_parser", "add_kernels_option", "kernels_of", "missing_tune_extra",
           "scheduled_builds"]

TUNE_MODULES = ("xgboost", "psutil", "cloudpickle")


def add_parser(subparsers) -> None:
    """Register ``tune-kernels``."""
    parser = subparsers.add_parser(
        "tune-kernels", help="tune the model's kernels (sequential, vEU and packed-weight "
                             "variants) with TVM's meta_schedule into a kernel database")
    add_model_options(parser)
    parser.add_argument("--target", default=None,
                        help="llvm target (default: this CPU, e.g. llvm -mcpu=znver4 with "
                             "its core count); only llvm is supported")
    parser.add_argument("--db", metavar="DIR", default=None,
                        help="kernel database directory (default the user's cache: "
                             "$TVM_IOS_CACHE/kernels/<target name>/<model>-<digest>, "
                             "TVM_IOS_CACHE defaulting to ~/.cache/tvm-ios)")
    parser.add_argument("--trials", type=int, default=500,
                        help="measured candidates per variant in total, records already in "
                             "the database included (default 500)")
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS),
                        help="parallel: the sequential build's kernels; serial: one-core "
                             "kernels the CPU vDevice inlines into vEUs; packed and "
                             "serial-packed: those two with their weights repacked at "
                             "compile time, each used where faster (default all)")
    parser.add_argument("--kernel", dest="only", nargs="+", metavar="PATTERN", default=(),
                        help="tune only the kernels whose name matches one of these "
                             "shell-style patterns ('fused_conv2d7_*': meta_schedule's task "
                             "names, as the tuning log and the CPU bench's profile print "
                             "them); --trials then counts their records only")
    parser.add_argument("--all-ops", action="store_true",
                        help="tune every kernel, not only those with a convolution or matmul")
    parser.add_argument("--rpc-tracker", metavar="HOST:PORT", help="time on RPC servers")
    parser.add_argument("--rpc-key", help="device key of the RPC servers")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds per candidate run and for the tracker to answer")
    parser.add_argument("--cover", type=int, default=8,
                        help="trials at least for each kernel the database has no record "
                             "of, tuned first, past --trials if need be (default 8; 0: off)")
    parser.add_argument("--sequential-only", action="store_true",
                        help="tune the sequential build's kernels only, not also those the "
                             "IOS builds (stages, rProgram) fuse otherwise once their "
                             "schedule has moved ops, nor each op fused alone (what a "
                             "stage's measurement runs)")
    parser.add_argument("--layout", default=None, metavar="NCHW|NCHW<b>c",
                        help="the convolutions' layout to tune (and build) in: NCHW, or "
                             "blocked, NCHW16c say (their channels split into blocks of 16, "
                             "vectorised over a block); kept in the database, which every "
                             "build then takes its graph into (default: the database's, "
                             "NCHW for a new one)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the search")
    parser.add_argument("--retime", type=int, metavar="K", default=0,
                        help="no search: time the K best records of each kernel again with "
                             "today's runner (parallel kernels on the target's cores; cold "
                             "or warm as for a search) and append them; builds rank a "
                             "kernel's records of the latest run's timing (databases timed "
                             "otherwise before)")
    parser.add_argument("--from", dest="source", metavar="DIR", default=None,
                        help="with --retime: take the candidates from this database (another "
                             "CPU's, say), build them for --target and time them here: a "
                             "database of this CPU seeded with them, to tune on from")
    timing = parser.add_mutually_exclusive_group()
    timing.add_argument("--warm", action="store_true",
                        help="time candidates with their weights in the caches, many calls "
                             "in a row, as a model whose weights fit the last-level cache "
                             "runs its kernels (default where they fit)")
    timing.add_argument("--cold", action="store_true",
                        help="time candidates with the caches flushed before each call, as "
                             "a model whose weights exceed the last-level cache runs its "
                             "kernels (default where they exceed it)")
    parser.set_defaults(handler=run)


def add_kernels_option(parser, default=None) -> None:
    """``--kernels DIR|auto|none``: the kernel database every build of the verb applies."""
    parser.add_argument("--kernels", metavar="DIR", default=default,
                        help="kernel database of `tvm-ios tune-kernels` applied to every "
                             "build (auto: this model's in the cache $TVM_IOS_CACHE, else "
                             "a seed for its name, size and CPU, if any; none: untuned; "
                             f"default {default or 'none'})")


def kernels_of(args, name: str | None = None, mod=None):
    """The :class:`~tvm_ios.tuning.kernel_db.KernelDB` of ``--kernels`` for this machine,
    or None (untuned: none asked, none found, or tuned for another target, with a warning).
    ``auto``: the model's own in the user's cache (needs its Relax module ``mod``), else a
    seed (:func:`~tvm_ios.tuning.cache.lookup`)."""
    from ..tuning.cache import lookup  # noqa: PLC0415
    from ..tuning.kernel_db import open_kernels  # noqa: PLC0415

    spec = getattr(args, "kernels", None)
    if spec in (None, "none"):
        return None
    if spec == "auto":
        path = lookup(name or args.model, args.image_size, mod)
        return open_kernels(path) if path is not None else None
    return open_kernels(spec)


def missing_tune_extra() -> str | None:
    """The tuning modules that are not installed, as one line, or None."""
    missing = [m for m in TUNE_MODULES if importlib.util.find_spec(m) is None]
    if not missing:
        return None
    return (f"kernel tuning needs {', '.join(missing)}: pip install 'tvm-ios[tune]' "
            "(or: pip install xgboost-cpu psutil cloudpickle tornado)")


class _Bar:
    def __init__(self, stream=None):
        self.stream, self.start = stream or sys.stderr, time.perf_counter()
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.last = -1.0

    def __call__(self, variant: str, done: int, total: int) -> None:
        now = time.perf_counter()
        if not self.tty and done < total and now - self.last < 15:
            return
        self.last = now
        filled = int(30 * done / max(total, 1))
        line = (f"tune-kernels {variant} [{'#' * filled}{'.' * (30 - filled)}] {done}/{total} "
                f"trials, {now - self.start:.0f}s")
        self.stream.write(("\r" if self.tty else "") + line + ("" if self.tty and done < total
                                                               else "\n"))
        self.stream.flush()


def run(args) -> int:
    """Tune, print one line per variant; ``--json`` writes the reports."""
    missing = missing_tune_extra()
    if missing:
        print(f"tvm-ios tune-kernels: error: {missing}", file=sys.stderr)
        return 2
    from .. import _tvm  # noqa: PLC0415
    from ..runtime.rpc import RPCError, check_tracker, parse_tracker  # noqa: PLC0415
    from ..tuning.cache import cache_dir  # noqa: PLC0415
    from ..tuning.kernel_db import KernelDB, host_target  # noqa: PLC0415
    from ..tuning.search import tune_kernels  # noqa: PLC0415
    from ..cost.stage_module import op_stages  # noqa: PLC0415
    from ..passes.dedup_ops import DedupOps  # noqa: PLC0415
    from ..passes.trim_dead_taps import TrimDeadTaps  # noqa: PLC0415
    from ..passes.blocked_layout import in_layout  # noqa: PLC0415

    target = _tvm.make_target(args.target) if args.target else host_target()
    if target.kind.name != "llvm":
        raise ValueError(f"tune-kernels tunes llvm kernels; target {args.target!r} is "
                         f"{target.kind.name}")
    rpc = parse_tracker(args.rpc_tracker, args.rpc_key) if args.rpc_tracker else None
    try:
        if rpc is not None:  # before anything slow: the tracker must answer first
            check_tracker(*rpc, timeout_s=args.timeout)
    except RPCError as err:
        print(f"tvm-ios tune-kernels: error: {err}", file=sys.stderr)
        return 2
    mod, params, name = load_model(args)
    path = args.db or cache_dir(name, mod, target)  # (the user's cache: kernel_cache)
    kernels = KernelDB(path, target, create=True)
    if not kernels.matches(target):
        raise ValueError(f"{path} holds kernels for {kernels.name}, not {target}: pick "
                         "another --db")
    if args.layout is not None:
        _set_layout(kernels, args.layout)
    if args.source and not args.retime:
        print("tvm-ios tune-kernels: error: --from DIR goes with --retime K (the K best "
              "records of each kernel there are timed here)", file=sys.stderr)
        return 2
    try:
        if args.retime:
            return _retime(args, kernels, rpc, name, params)
        bound = _tvm.bind_params(mod, params)
        dedup, trim = DedupOps(), TrimDeadTaps()  # (trimming takes NCHW convolutions)
        ios_mod = in_layout(trim(dedup(bound)), kernels)  # the graph the tvm-ios builds take
        mod = in_layout(bound, kernels)  # (vEU kernels: ios_mod's)
        fused = {"parallel", "packed"} & set(args.variants)  # (serial ones: op by op)
        also = [mod] if trim.trimmed or dedup.removed else []  # TVM's own sequential build
        if fused and not args.sequential_only:  # + each op alone, as a stage's judge runs it
            also += scheduled_builds(ios_mod, kernels) + op_stages(ios_mod, kernels.target)
        reports = tune_kernels(ios_mod, kernels, args.variants, args.trials, rpc, _Bar(),
                               seed=args.seed, anchors_only=not args.all_ops,
                               cover=args.cover, also=also, only=args.only,
                               timeout_s=args.timeout,
                               cold=_cold(args, params))
    except RPCError as err:
        print(f"tvm-ios tune-kernels: error: {err}", file=sys.stderr)
        return 2
    kernels.pack()  # the .xz copies are what a checkout carries
    for r in reports:
        print(f"{name} {r.variant}: {r.tasks} tasks, {r.trials} trials measured now, "
              f"{r.records} records{' of those kernels' if args.only else ''} in {path}, "
              f"{r.wall_s:.0f}s")
    write_json(args.json, {"db": str(path), "target": kernels.name,
                           "reports": [vars(r) for r in reports]})
    return 0


def _set_layout(kernels, layout: str) -> None:
    """Record ``layout`` in a new database; an error for one tuned in another layout."""
    from ..kernels.blocked_conv import parse_layout  # noqa: PLC0415

    parse_layout(layout)  # (an unknown name is an error before anything is written)
    if layout == kernels.layout:
        return
    if any(kernels.num_records(v) for v in VARIANTS):
        raise ValueError(f"{kernels.path} holds kernels tuned in layout {kernels.layout}, "
                         f"not {layout}: pick another --db")
    kernels.meta["layout"] = layout
    kernels.save_meta()


def scheduled_builds(mod, kernels) -> list:
    """The modules of the IOS builds with ``kernels`` (stages and rProgram engines, their
    schedules priced from the database's stage log where it has one), as the ``ios``
    pipeline leaves them for the database: a schedule that moves ops changes how TVM fuses
    them, and a fused kernel the database lacks runs untuned (RandWire's stages build had
    one conv taking 7.5 of its 30 ms). A rerun after ``tvm-ios tune --kernels`` covers the
    kernels of the schedules its log leads to."""
    from ..relax_pipeline import pipeline  # noqa: PLC0415

    out = []
    with kernels.target:
        for engine in ("stages", "rprogram"):
            out.append(pipeline(engine=engine, kernels=kernels).before_kernels(
                mod, kernels.target))
    return out


def _cold(args, params) -> bool:
    """``--cold``/``--warm``, else cold where the model's weights exceed this CPU's
    last-level cache (:func:`~tvm_ios.tuning.search.timing_for`)."""
    from ..tuning.search import timing_for  # noqa: PLC0415

    if args.cold or args.warm:
        return args.cold
    weights = sum(int(getattr(v, "nbytes", 0)) for v in params.values())
    return timing_for(weights) == "cold"


def _retime(args, kernels, rpc, name, params) -> int:
    """``--retime K``: the K best records of every workload timed again, per variant."""
    from ..tuning.kernel_db import KernelDB  # noqa: PLC0415
    from ..tuning.retime import retime_kernels  # noqa: PLC0415

    source = KernelDB(args.source) if args.source else None
    origin = source or kernels
    reports = []
    for variant in args.variants:
        if not origin.has(variant):
            print(f"tvm-ios tune-kernels: {origin.path} has no {variant} kernels to retime",
                  file=sys.stderr)
            continue
        report = retime_kernels(kernels, variant, args.retime, rpc, _Bar(), source=source,
                                timeout_s=args.timeout, cold=_cold(args, params))
        reports.append(report)
        print(f"{name} {variant}: {report.timed} candidates of {report.workloads} kernels "
              f"timed again, {report.changed} now best another, {report.failed} failed, "
              f"{report.wall_s:.0f}s")
    if not reports:
        print(f"tvm-ios tune-kernels: error: nothing to retime in {origin.path}: tune it "
              "first (without --retime)", file=sys.stderr)
        return 2
    kernels.pack()
    write_json(args.json, {"db": str(kernels.path), "target": kernels.name,
                           "retimed": [vars(r) for r in reports]})
    return 0
