"""Build, run and compare Relax modules: how every rewrite of tvm-ios is checked.

``compare_modules`` builds an original and a rewritten module for the same target, runs
both on the same random inputs, and reports the largest absolute difference of their
outputs and the latency of each build (TVM's time evaluator, median of repeats).
"""
from __future__ import annotations

import logging
from dataclasses import asdict, dataclass

import numpy as np

from .. import _tvm
from .outputs import flatten_outputs

__all__ = ["build", "random_inputs", "run", "caller", "time_module", "compare_modules",
           "compare_executables", "Comparison"]

logger = logging.getLogger(__name__)


def build(mod, target="llvm", params: dict | None = None, pipeline="default"):
    """Bind ``params`` (if any) and compile ``mod``; returns the executable."""
    return _tvm.compile_module(_tvm.bind_params(mod, params or {}), target, pipeline)


def random_inputs(mod, func_name: str = "main", seed: int = 0) -> list[np.ndarray]:
    """Random arrays for the runtime inputs of ``mod[func_name]`` (after parameter binding).

    With a ``num_input`` attribute only that many leading parameters are inputs.
    """
    func = mod[func_name]
    params = list(func.params)
    if func.attrs is not None and "num_input" in func.attrs:
        params = params[: int(func.attrs["num_input"])]
    rng = np.random.default_rng(seed)
    arrays = []
    for param in params:
        shape = _tvm.shape_of(param)
        if shape is None:
            raise ValueError(f"input {_tvm.var_name(param)!r} of {func_name} has no static "
                             "shape; give the inputs explicitly")
        arrays.append(rng.standard_normal(shape).astype(_tvm.dtype_of(param)))
    return arrays


def run(executable, inputs: list[np.ndarray], device=None, func_name: str = "main"):
    """Run an executable's function on numpy inputs; returns numpy output(s)."""
    vm = _tvm.virtual_machine(executable, device)
    args = [_tvm.tensor(x, device) for x in inputs]
    return _tvm.to_numpy(vm[func_name](*args))


def caller(executable, inputs: list[np.ndarray], device=None, func_name: str = "main"):
    """A function that calls ``func_name`` of ``executable`` on ``inputs`` once and waits
    for it (the VM and the input tensors are set up once, here)."""
    device = device or _tvm.cpu()
    vm = _tvm.virtual_machine(executable, device)
    vm.set_input(func_name, *[_tvm.tensor(x, device) for x in inputs])

    def call():
        vm.invoke_stateful(func_name)
        device.sync()

    return call


def time_module(executable, inputs: list[np.ndarray], device=None, number: int = 1,
                repeat: int = 3, func_name: str = "main") -> float:
    """Median latency in milliseconds of one call (TVM's time evaluator)."""
    device = device or _tvm.cpu()
    vm = _tvm.virtual_machine(executable, device)
    args = [_tvm.tensor(x, device) for x in inputs]
    timer = vm.time_evaluator(func_name, device, number=number, repeat=repeat)
    return float(np.median(timer(*args).results) * 1e3)


@dataclass
class Comparison:
    """Result of :func:`compare_modules`: the largest |diff| and |reference| over the
    outputs, the latencies, and per flattened output its |diff| and |reference| maxima."""

    max_abs_diff: float
    max_abs_value: float
    latency_ms_original: float | None
    latency_ms_rewritten: float | None
    output_diffs: list | None = None
    output_scales: list | None = None

    def to_dict(self) -> dict:
        """JSON-serialisable dict."""
        return asdict(self)


def compare_modules(original, rewritten, params: dict | None = None, target="llvm",
                    seed: int = 0, timing: bool = False, repeat: int = 3,
                    prepare=None, rewritten_target=None) -> Comparison:
    """Build both modules, run them on the same random input, compare outputs.

    Parameters
    ----------
    original, rewritten : IRModule
        The modules (their ``main`` functions take the same inputs and parameters).
    params : dict, optional
        Weights bound into both before building.
    target : str, dict or Target
        Build target (``llvm`` runs here).
    seed : int
        Seed of the random inputs.
    timing : bool
        Also time both builds (median of ``repeat`` runs).
    prepare : callable, optional
        ``prepare(mod)`` of the rewritten module after its weights are bound (tuned kernels
        are applied there: :func:`~tvm_ios.kernels.tuned_build.apply_kernels`).
    rewritten_target : optional
        Target of the rewritten build (default ``target``; a tuned build uses the database's).
    """
    target = _tvm.make_target(target)
    exe_a = build(original, target, params)
    bound = _tvm.bind_params(rewritten, params or {})
    exe_b = build(prepare(bound) if prepare else bound, rewritten_target or target)
    inputs = random_inputs(_tvm.bind_params(original, params or {}), seed=seed)
    return compare_executables(exe_a, exe_b, inputs, _tvm.device_for(target), timing, repeat)


def compare_executables(exe_a, exe_b, inputs: list[np.ndarray], device=None,
                        timing: bool = False, repeat: int = 3) -> Comparison:
    """Run two built executables on the same ``inputs`` and compare them (see
    :func:`compare_modules`); ``exe_a`` is the reference."""
    out_a = flatten_outputs(run(exe_a, inputs, device))
    out_b = flatten_outputs(run(exe_b, inputs, device))
    if len(out_a) != len(out_b) or any(a.shape != b.shape for a, b in zip(out_a, out_b)):
        raise AssertionError("the rewritten module returns outputs of other shapes")
    diffs = [float(np.max(np.abs(a - b))) if a.size else 0.0 for a, b in zip(out_a, out_b)]
    scales = [float(np.max(np.abs(a))) if a.size else 0.0 for a in out_a]
    diff, scale = max(diffs, default=0.0), max(scales, default=0.0)
    lat_a = lat_b = None
    if timing:
        lat_a = time_module(exe_a, inputs, device, repeat=repeat)
        lat_b = time_module(exe_b, inputs, device, repeat=repeat)
    logger.info("compare: max |diff| %.3g (max |out| %.3g)", diff, scale)
    return Comparison(diff, scale, lat_a, lat_b, diffs, scales)
