"""Kernels timed inside the model: where a whole build's time goes, as it runs.

:func:`~.cpu_profile.kernel_profile` times each kernel alone, its caches flushed, which
does not add up to the model (Inception V3's tuned kernels at 75 px, 2 threads, Zen 4:
3.32 ms summed cold, 2.55 warm, the model 4.05). Here the kernels run as they do in the
model, back to back, in its order, on its buffers. The Relax VM's instrument hook (0.27 has
no VM profiler) records one run's calls, each with its function and arguments; the calls
are then replayed, in order, with the clock stamped around each one. Timing through the
hook itself is what this module did before: its Python callback converts every argument
on each side of a call and took 2.15 ms of a 4.05 ms run (about 18 us a call), part of it
inside the stamps; a replay call costs about 0.4 us of Python. What the replay leaves out
of the model's own run is the VM's dispatch; its builtins (allocations, tuples) are calls
and are replayed and timed like the kernels.

:func:`in_situ_profile` profiles one build; :func:`compare_in_situ` runs several builds of
one model round-robin (these machines drift) and splits each one's time into its rProgram
kernels, its other kernels and the rest: with a build whose concurrent stages run in turn,
what the rPrograms gain inside the model is read off directly (:func:`rprogram_gain`).
"""
from __future__ import annotations

import logging
import statistics
import time

from .. import _tvm
from ..kernels.prepack import is_rprogram

__all__ = ["in_situ_profile", "compare_in_situ", "rprogram_gain", "kernel_names",
           "recorded_calls", "replay"]

logger = logging.getLogger(__name__)


def kernel_names(mod) -> tuple[set, set]:
    """``(kernels, rprograms)``: names of the PrimFuncs of a compiled module, and of those
    that are rProgram kernels."""
    funcs = {gv.name_hint: f for gv, f in mod.functions.items()
             if isinstance(f, _tvm.tirx.PrimFunc)}
    rprograms = {k for k, f in funcs.items() if is_rprogram(f)}
    return set(funcs), rprograms


class _Recorder:
    """The VM instrument: records the calls of one run, ``(name, func, args)`` in order."""

    def __init__(self):
        self.calls: list = []

    def __call__(self, func, name, before_run, ret_value, *args):
        if before_run:
            self.calls.append((name, func, args))
        return 0  # run the call (VMInstrumentReturnKind.kNoOp)


def recorded_calls(vm, args) -> list:
    """``[(name, func, args)]``: every call one run of ``vm["main"](*args)`` makes."""
    recorder = _Recorder()
    _tvm.set_vm_instrument(vm, recorder)
    try:
        vm["main"](*args)
    finally:
        _tvm.set_vm_instrument(vm, None)
    return recorder.calls


def replay(calls: list) -> tuple[float, dict, dict]:
    """``(wall, seconds, calls)``: the recorded calls run once more in order, each timed;
    per name its seconds and its number of calls."""
    seconds: dict = {}
    counts: dict = {}
    clock = time.perf_counter
    start = clock()
    for name, func, args in calls:
        before = clock()
        func(*args)
        seconds[name] = seconds.get(name, 0.0) + clock() - before
        counts[name] = counts.get(name, 0) + 1
    return clock() - start, seconds, counts


def _median_us(values) -> float:
    return round(statistics.median(values) * 1e6, 1) if values else 0.0


def _summary(plain, runs, names, rprograms, top: int) -> dict:
    per_kernel: dict = {}
    for _, seconds, _ in runs:
        for name in names:
            per_kernel.setdefault(name, []).append(seconds.get(name, 0.0))
    calls = runs[-1][2] if runs else {}
    rows = [{"kernel": k, "calls": calls.get(k, 0), "total_us": _median_us(v),
             "rprogram": k in rprograms} for k, v in per_kernel.items() if calls.get(k)]
    rows.sort(key=lambda r: -r["total_us"])

    def total(keep):
        return _median_us([sum(v for k, v in s.items() if keep(k)) for _, s, _ in runs])
    return {"model_us": _median_us(plain),
            "replayed_us": _median_us([wall for wall, _, _ in runs]),
            "kernels_us": total(names.__contains__), "rprograms_us": total(
                rprograms.__contains__), "rprograms": len(rprograms),
            "other_kernels_us": total(lambda k: k in names and k not in rprograms),
            "calls": sum(calls.get(k, 0) for k in names), "kernels": rows[:top]}


def compare_in_situ(builds: dict, inputs: list, threads: int, rounds: int = 20,
                    warmup: int = 3, top: int = 15) -> dict:
    """Several builds of one model, timed round-robin, plain and replayed call by call.

    Parameters
    ----------
    builds : dict
        ``label -> (module, executable)``: the compiled Relax module (its PrimFuncs name the
        kernels) and its executable.
    inputs : list of numpy arrays
        The model's inputs (copied to the device once, as for a user).
    threads : int
        TVM's pool size.
    rounds : int
        Rounds of plain runs, then rounds of replayed ones, each build once per round.
    top : int
        Kernels listed per build, largest in-situ total first.

    Returns
    -------
    dict
        ``label -> {"model_us", "replayed_us", "kernels_us", "rprograms_us",
        "other_kernels_us", "rprograms", "calls", "kernels"}``: medians over the rounds; the
        kernel rows hold ``kernel``, ``calls`` (per run), ``total_us``, ``rprogram``.
    """
    _tvm.config_threads(int(threads))
    device = _tvm.cpu()
    args = [_tvm.tensor(x, device) for x in inputs]
    vms = {label: _tvm.virtual_machine(exe, device) for label, (_, exe) in builds.items()}
    for vm in vms.values():
        for _ in range(warmup):
            vm["main"](*args)
    plain: dict = {label: [] for label in builds}
    for _ in range(rounds):
        for label, vm in vms.items():
            start = time.perf_counter()
            vm["main"](*args)
            plain[label].append(time.perf_counter() - start)
    calls = {label: recorded_calls(vm, args) for label, vm in vms.items()}
    runs: dict = {label: [] for label in builds}
    for _ in range(rounds):
        for label in builds:
            runs[label].append(replay(calls[label]))
    out = {}
    for label, (mod, _) in builds.items():
        names, rprograms = kernel_names(mod)
        out[label] = _summary(plain[label], runs[label], names, rprograms, top)
    return out


def in_situ_profile(mod, executable, inputs: list, threads: int, rounds: int = 20,
                    top: int = 15) -> dict:
    """One build's kernels timed inside the model (:func:`compare_in_situ` of one build)."""
    return compare_in_situ({"build": (mod, executable)}, inputs, threads, rounds,
                           top=top)["build"]


def rprogram_gain(concurrent: dict, in_turn: dict) -> dict:
    """What a build's rPrograms gain inside the model over the same stages run in turn.

    ``concurrent`` and ``in_turn`` are :func:`compare_in_situ` entries of two builds that
    differ only in those stages. Kernels outside the stages are taken to cost the same in
    both (a stage's neighbours can fuse otherwise; the kernel rows show it): the stages
    in turn took the in-turn build's kernels less the concurrent build's other kernels.
    """
    stages_in_turn = in_turn["kernels_us"] - concurrent["other_kernels_us"]
    return {"rprograms_us": concurrent["rprograms_us"],
            "stages_in_turn_us": round(stages_in_turn, 1),
            "gain_us": round(stages_in_turn - concurrent["rprograms_us"], 1),
            "model_gain_us": round(in_turn["model_us"] - concurrent["model_us"], 1)}
