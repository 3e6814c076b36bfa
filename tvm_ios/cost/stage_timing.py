"""Build and time stage modules through TVM's meta_schedule builder and runners.

Builds run in meta_schedule's ``LocalBuilder`` process pool with :func:`build_stage` (weights
bound to random constants, weight-only arithmetic folded, a concurrent stage rewritten into
its rProgram and tuned kernels applied where the stage module says so (:func:`prepare_stage`),
``tvm.compile``) and
:func:`export_stage`; both live in this importable module so the pool's workers do not
import the tensor intrinsics the default build function needs (~27 s per worker). Runs go
through ``LocalRunner`` or ``RPCRunner`` (a tracker and servers keyed as
``tvm.exec.rpc_tracker`` / ``tvm.exec.rpc_server`` use them) with a Relax VM evaluator:
``warmup`` untimed calls, then ``repeat`` timings of ``number`` calls each (at least
``min_repeat_ms`` long). The figure a cost model keeps is the median.
"""
from __future__ import annotations

import functools
import logging
import os
import shutil
import socket
import statistics
import tempfile
import time
from dataclasses import dataclass

import numpy as np

from .. import _tvm
from ..runtime.rpc import RPCError, alloc_rpc, check_tracker, parse_tracker

__all__ = ["MeasureSettings", "MeasureResult", "MeasureError", "Measurer", "build_stage",
           "prepare_stage",
           "export_stage", "time_vm_local", "time_vm_rpc"]

logger = logging.getLogger(__name__)


class MeasureError(RuntimeError):
    """A stage could not be built or run, or the runner cannot be reached."""


@dataclass(frozen=True)
class MeasureSettings:
    """How stages are timed. ``timeout_s`` bounds one build, one run, one RPC session.

    ``flush_bytes`` > 0 (CPU): before every timed call a buffer of that size is written,
    evicting the stage's weights from the caches, as they are in a whole model whose
    weights exceed the last-level cache (each call is then timed alone; ``number`` calls
    per repeat).
    """

    number: int = 3
    repeat: int = 3
    min_repeat_ms: int = 0
    warmup: int = 1
    timeout_s: float = 60.0
    build_workers: int | None = None
    batch_size: int = 32
    flush_bytes: int = 0


@dataclass
class MeasureResult:
    """Run seconds of one stage (``repeat`` figures), or the error that stopped it."""

    key: str
    run_secs: list | None = None
    error: str | None = None

    @property
    def median_us(self) -> float:
        """Median of the run seconds, in microseconds."""
        return float(statistics.median(self.run_secs)) * 1e6


def build_stage(mod, target, _params=None):
    """meta_schedule ``f_build``: :func:`prepare_stage`, then compile."""
    return _tvm.compile_module(prepare_stage(mod, target), target)


@functools.lru_cache(maxsize=8)
def _kernel_db(path: str):
    from ..tuning.kernel_db import KernelDB  # noqa: PLC0415

    return KernelDB(path)


def _kernels(path: str, target):
    """The (cached) kernel database at ``path`` if it fits ``target``, else None (warned)."""
    kernels = _kernel_db(path)
    if kernels.matches(target):
        return kernels
    logger.warning("kernel database %s is for %s, the stage is built for %s: untuned", path,
                   kernels.name, target)
    return None


def prepare_stage(mod, target):
    """The module a stage's build compiles (it runs in a builder worker).

    Weights are bound to random constants and weight-only arithmetic is folded; a module
    marked ``tvm_ios.stage_engine = "rprogram"`` (a concurrent stage) is rewritten by
    ``RProgramPass`` for ``target`` (one rProgram PrimFunc on llvm, one persistent kernel
    on CUDA); a module naming a kernel database (``tvm_ios.kernels``) gets its tuned kernels
    (llvm only).
    """
    from tvm import relax  # noqa: PLC0415  (runs in a builder worker)

    from ..kernels.blocked_conv import register_blocked_conv2d  # noqa: PLC0415
    from .stage_module import ENGINE_ATTR, KERNELS_ATTR  # noqa: PLC0415

    register_blocked_conv2d()  # (a worker's first build may be of a blocked-layout stage)
    target = _tvm.make_target(target)
    attrs = dict(mod.attrs) if mod.attrs is not None else {}
    func = mod["main"]
    num_input = int(func.attrs["num_input"]) if func.attrs is not None \
        and "num_input" in func.attrs else len(func.params)
    rng = np.random.default_rng(0)
    binding = {p: relax.const((rng.standard_normal(_tvm.shape_of(p)) * 0.1)
                              .astype(_tvm.dtype_of(p)))
               for p in list(func.params)[num_input:]}
    if binding:
        mod = _tvm.IRModule({"main": func.bind_params(binding)}, attrs=mod.attrs)
        mod = relax.transform.FoldConstant()(mod)
    llvm = target.kind.name == "llvm"
    kernels = _kernels(str(attrs[KERNELS_ATTR]), target) \
        if KERNELS_ATTR in attrs and llvm else None
    engine = str(attrs.get(ENGINE_ATTR, ""))
    if engine in ("rprogram", "balanced"):
        from ..passes.rprogram_pass import RProgramPass  # noqa: PLC0415

        mod = RProgramPass("ios", target=target, kernels=kernels,
                           balance=engine == "balanced")(mod)
    if kernels is not None:
        from ..kernels.tuned_build import apply_kernels  # noqa: PLC0415

        mod = apply_kernels(mod, kernels, target)
    return mod


def export_stage(executable) -> str:
    """meta_schedule ``f_export``: a shared library in a fresh temporary directory."""
    path = os.path.join(tempfile.mkdtemp(prefix="tvm_ios_stage_"), "stage.so")
    executable.export_library(path)
    return path


def _time_vm(rt_mod, device, config, repeated_args, warmup: int,
             flush_bytes: int = 0) -> list[float]:
    from tvm import relax  # noqa: PLC0415  (runs in a runner worker)

    vm = relax.VirtualMachine(rt_mod, device)
    costs: list[float] = []
    for args in repeated_args:
        vm.set_input("main", *args)
        for _ in range(warmup):
            vm.invoke_stateful("main")
        if flush_bytes > 0:
            costs.extend(_time_cold(vm, device, config, flush_bytes))
            continue
        timer = vm.time_evaluator("invoke_stateful", device, number=config.number,
                                  repeat=config.repeat, min_repeat_ms=config.min_repeat_ms)
        costs.extend(float(x) for x in timer("main").results)
    return costs


def _time_cold(vm, device, config, flush_bytes: int) -> list[float]:
    """Mean seconds per call of ``config.repeat`` repeats of ``config.number`` calls, each
    call after the caches were flushed by writing ``flush_bytes``."""
    scratch = np.zeros(max(1, flush_bytes // 8), "float64")
    costs = []
    for _ in range(config.repeat):
        total = 0.0
        for _ in range(config.number):
            scratch += 1.0
            start = time.perf_counter()
            vm.invoke_stateful("main")
            device.sync()
            total += time.perf_counter() - start
        costs.append(total / config.number)
    return costs


def time_vm_local(rt_mod, device, config, repeated_args, warmup: int = 1,
                  flush_bytes: int = 0) -> list[float]:
    """LocalRunner ``f_run_evaluator`` for a Relax VM executable."""
    return _time_vm(rt_mod, device, config, repeated_args, warmup, flush_bytes)


def time_vm_rpc(session, rt_mod, device, config, repeated_args, warmup: int = 1,
                flush_bytes: int = 0) -> list[float]:
    """RPCRunner ``f_run_evaluator`` for a Relax VM executable (session unused)."""
    del session
    return _time_vm(rt_mod, device, config, repeated_args, warmup, flush_bytes)


class Measurer:
    """Times stage modules for one target on one device (local, or RPC by tracker key).

    Parameters
    ----------
    target : str, dict or Target
        Build target (``"llvm"`` runs here).
    rpc_tracker : str, optional
        ``host:port`` of an RPC tracker; with ``rpc_key`` runs go to its servers.
    rpc_key : str, optional
        Device key the servers registered with.
    settings : MeasureSettings, optional
        Warm-up, number, repeat, min-repeat-ms, timeouts, batch size.
    device_key : str, optional
        Names the device in the log (default ``rpc:<key>`` or ``local:<hostname>:<cpu>``,
        the CPU as LLVM names it, so figures of another CPU are not read as this one's;
        plus ``:cold`` when the settings flush the caches).
    """

    def __init__(self, target="llvm", rpc_tracker: str | None = None,
                 rpc_key: str | None = None, settings: MeasureSettings | None = None,
                 device_key: str | None = None):
        self.target = _tvm.make_target(target)
        self.settings = settings or MeasureSettings()
        self.rpc = parse_tracker(rpc_tracker, rpc_key) if rpc_tracker else None
        self.device_key = device_key or (f"rpc:{rpc_key}" if self.rpc else
                                         f"local:{socket.gethostname()}:{_tvm.llvm_system_cpu()}")
        if self.settings.flush_bytes > 0 and device_key is None:
            self.device_key += ":cold"  # cold-cache figures are not warm ones
        self._builder = self._runner = None

    @property
    def target_str(self) -> str:
        """The target as logged."""
        return str(self.target)

    @property
    def device_type(self) -> str:
        """The runners' device string (``"cpu"`` for llvm)."""
        kind = self.target.kind.name
        return "cpu" if kind in ("llvm", "c") else kind

    def __repr__(self) -> str:
        return f"Measurer({self.target_str!r}, {self.device_key!r})"

    def _ms(self):
        from .._tvm import ms  # noqa: PLC0415  (heavy; only when measuring)

        return ms

    def _setup(self) -> None:
        if self._runner is not None:
            return
        ms, s = self._ms(), self.settings
        if self.device_type == "cpu":  # builder and runner workers size TVM's pool from it:
            # TVM's default on x86 is half the cores (it assumes hyper-threads), which would
            # give a concurrent stage's rProgram one vEU here
            _tvm.worker_threads(len(_tvm.usable_cores()))
        config = ms.runner.EvaluatorConfig(number=s.number, repeat=s.repeat,
                                           min_repeat_ms=s.min_repeat_ms)
        if self.rpc:
            try:
                rpc_config = check_tracker(*self.rpc, timeout_s=s.timeout_s)
            except RPCError as err:
                raise MeasureError(str(err)) from err
            self._runner = ms.runner.RPCRunner(
                rpc_config, config, f_alloc_argument=alloc_rpc,
                f_run_evaluator=functools.partial(time_vm_rpc, warmup=s.warmup,
                                                  flush_bytes=s.flush_bytes))
        else:
            if not _tvm.device_for(self.target).exist:
                raise MeasureError(f"target {self.target_str} runs on {self.device_type}, which "
                                   "this machine does not have; use --rpc-tracker to measure "
                                   "on a remote device")
            self._runner = ms.runner.LocalRunner(
                timeout_sec=s.timeout_s, evaluator_config=config,
                f_run_evaluator=functools.partial(time_vm_local, warmup=s.warmup,
                                                  flush_bytes=s.flush_bytes))
        self._builder = ms.builder.LocalBuilder(
            max_workers=s.build_workers, timeout_sec=s.timeout_s,
            f_build=build_stage, f_export=export_stage)

    def measure(self, stages: list, on_result=None) -> list[MeasureResult]:
        """Build and time ``stages`` (:class:`~.stage_module.StageModule`), batch by batch.

        ``on_result(stage, result)`` is called as each result arrives (the log appends
        there, so a killed run keeps every figure it finished).
        """
        self._setup()
        out: list[MeasureResult] = []
        size = max(1, self.settings.batch_size)
        for start in range(0, len(stages), size):
            batch = stages[start:start + size]
            for stage, result in zip(batch, self._measure_batch(batch)):
                out.append(result)
                if on_result is not None:
                    on_result(stage, result)
        return out

    def _measure_batch(self, batch: list) -> list[MeasureResult]:
        ms = self._ms()
        built = self._builder.build([ms.builder.BuilderInput(s.mod, self.target)
                                     for s in batch])
        results, inputs, pending = [], [], []
        for stage, b in zip(batch, built):
            if b.error_msg:
                results.append(MeasureResult(stage.key, error=f"build for {self.target_str} "
                                             f"failed: {_short(b.error_msg)}"))
                continue
            results.append(None)
            args = [ms.arg_info.TensorInfo(dtype, shape) for shape, dtype in stage.inputs]
            inputs.append(ms.runner.RunnerInput(b.artifact_path, self.device_type, args))
            pending.append(len(results) - 1)
        futures = self._runner.run(inputs) if inputs else []
        for slot, future, runner_input in zip(pending, futures, inputs):
            res = future.result()
            key = batch[slot].key
            if res.error_msg:
                results[slot] = MeasureResult(key, error=f"run on {self.device_key} failed: "
                                              f"{_short(res.error_msg)}")
            else:
                results[slot] = MeasureResult(key, [float(getattr(x, "value", x))
                                                    for x in res.run_secs])
            shutil.rmtree(os.path.dirname(runner_input.artifact_path), ignore_errors=True)
        return results

    def close(self) -> None:
        """Shut the runner's worker pool down."""
        if self._runner is not None and hasattr(self._runner, "pool"):
            self._runner.pool.shutdown()
        self._runner = self._builder = None


def _short(message: str, lines: int = 6) -> str:
    """The error line of a worker's traceback first, then its last lines for context."""
    text = [ln.strip() for ln in str(message).strip().splitlines() if ln.strip()]
    errors = [ln for ln in text if "Error" in ln.split(":", 1)[0]]
    head = errors[-1:] if errors else []
    return " | ".join(head + [ln for ln in text[-lines:] if ln not in head])
