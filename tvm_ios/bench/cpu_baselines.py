"""CPU columns timed side by side: PyTorch (eager, ``torch.compile``), ONNX Runtime and TVM.

Every column is a *runner*: a callable taking the input array and returning the output in
the column's own type, plus a way to read that output as numpy; :func:`time_runner` times
the call alone (warm-up, then the median of ``repeat`` calls, each timed by
``time.perf_counter``, the same Python-level clock for every column).

Threads, so every column runs at the stated count: PyTorch ``torch.set_num_threads(n)``
(intra-op; inter-op stays 1 thread at batch 1); ONNX Runtime ``intra_op_num_threads = n``
and ``inter_op_num_threads = n`` (used by the parallel execution mode only); TVM's thread
pool resized with ``runtime.config_threadpool`` (:func:`tvm_ios._tvm.config_threads`),
which also decides how many vEUs an rProgram may have.

PyTorch and ONNX Runtime are optional (the ``bench`` extra); their builders raise
``ImportError`` with the ``pip install`` that fixes it.
"""
from __future__ import annotations

import io
import logging
import statistics
import time
from typing import Callable

import numpy as np

from .. import _tvm

__all__ = ["time_runner", "torch_runner", "onnx_session", "onnx_runner", "tvm_runner",
           "to_numpy", "export_onnx", "max_abs_diff"]

logger = logging.getLogger(__name__)


def _need(module: str, extra: str = "bench"):
    try:
        return __import__(module)
    except ImportError as err:
        raise ImportError(f"{module} is not installed: pip install 'tvm-ios[{extra}]'") from err


def time_runner(run: Callable, x, repeat: int = 30, warmup: int = 5,
                budget_s: float = 60.0) -> tuple[float, list[float]]:
    """Median milliseconds of ``run(x)`` (and all samples); stops early past ``budget_s``."""
    for _ in range(warmup):
        run(x)
    samples, start = [], time.perf_counter()
    for _ in range(repeat):
        t0 = time.perf_counter()
        run(x)
        samples.append((time.perf_counter() - t0) * 1e3)
        if time.perf_counter() - start > budget_s and len(samples) >= 5:
            break
    return float(statistics.median(samples)), samples


def to_numpy(value) -> np.ndarray:
    """The first output of a runner's result as a numpy array."""
    if isinstance(value, (list, tuple)):
        value = value[0]
    if hasattr(value, "detach"):
        return value.detach().numpy()
    if hasattr(value, "numpy"):
        return value.numpy()
    return np.asarray(value)


def max_abs_diff(value, reference: np.ndarray) -> float:
    """Largest absolute difference of a runner's output and the reference."""
    out = to_numpy(value)
    if out.shape != reference.shape:
        raise AssertionError(f"output shape {out.shape} differs from {reference.shape}")
    return float(np.max(np.abs(out.astype("float64") - reference)))


def torch_runner(net, params: dict, threads: int, compiled: bool = False):
    """PyTorch eager (or ``torch.compile``, CPU inductor) of the zoo Net with its weights."""
    torch = _need("torch")
    from ..models.torch_emit import to_torch

    torch.set_num_threads(int(threads))
    module = to_torch(net, params)
    if compiled:
        module = torch.compile(module)

    def run(x):
        with torch.inference_mode():
            return module(torch.from_numpy(x))
    return run


def export_onnx(net, params: dict, x: np.ndarray) -> bytes:
    """The Net exported to ONNX (TorchScript exporter, opset 17) from its PyTorch form."""
    torch = _need("torch")
    from ..models.torch_emit import to_torch

    buf = io.BytesIO()
    torch.onnx.export(to_torch(net, params), (torch.from_numpy(x),), buf, dynamo=False,
                      opset_version=17, input_names=["x"], output_names=["y"])
    return buf.getvalue()


def onnx_session(model: bytes, threads: int, parallel: bool = False,
                 profile_prefix: str | None = None):
    """ONNX Runtime CPU session (``ORT_SEQUENTIAL`` or ``ORT_PARALLEL`` execution mode) on
    ``threads`` threads; with ``profile_prefix``, its profiler on, writing there."""
    ort = _need("onnxruntime")
    options = ort.SessionOptions()
    options.intra_op_num_threads = int(threads)
    options.inter_op_num_threads = int(threads)
    options.execution_mode = ort.ExecutionMode.ORT_PARALLEL if parallel \
        else ort.ExecutionMode.ORT_SEQUENTIAL
    if profile_prefix:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def onnx_runner(model: bytes, threads: int, parallel: bool = False):
    """A run function of :func:`onnx_session`."""
    session = onnx_session(model, threads, parallel)
    name = session.get_inputs()[0].name
    return lambda x: session.run(None, {name: x})


def tvm_runner(executable, threads: int):
    """A Relax VM of ``executable`` on the CPU; TVM's pool resized to ``threads`` first."""
    _tvm.config_threads(int(threads))
    vm = _tvm.virtual_machine(executable)
    device = _tvm.cpu()
    cache: dict = {}

    def run(x):
        key = id(x)
        if key not in cache:  # the input is copied to a TVM tensor once, as for a user
            cache.clear()
            cache[key] = _tvm.tensor(x, device)
        return vm["main"](cache[key])
    return run
