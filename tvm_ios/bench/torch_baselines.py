"""PyTorch baselines on the same model and weights as a benchmark artifact.

``python -m tvm_ios.cli.bench_torch DIR... [--modes eager cuda-graph compile]`` runs on
the GPU host's own PyTorch: it rebuilds the model from the artifact's ``net.json`` (the zoo's
framework-neutral definition, through :mod:`tvm_ios.models.torch_emit`), materialises the
artifact's weights and input from their recipes, checks each mode's output against the
artifact's CPU reference, and only then times it: warm-up, ``repeat`` repeats (CUDA events on
a GPU) rotating over several inputs, median. Modes: ``eager``, ``cuda-graph`` (one captured
graph replayed; inputs copied into its static buffer outside the timed region),
``compile`` (``torch.compile`` default) and ``compile-max-autotune``. TF32 is off, so that
PyTorch computes in float32 like the TVM builds; cuDNN picks its fastest algorithm per shape.
Imports no TVM: the host needs only PyTorch and NumPy.
"""
from __future__ import annotations

import json
import logging
import statistics
import time
from pathlib import Path

import numpy as np

from . import tensors
from .manifest import Manifest
from .run import BenchResult, check_outputs

__all__ = ["MODES", "load_torch_model", "bench_torch"]

logger = logging.getLogger(__name__)

MODES = ("eager", "cuda-graph", "compile", "compile-max-autotune")


def load_torch_model(directory, device: str = "cpu"):
    """``(module, manifest)``: the artifact's model as a ``torch.nn.Module`` on ``device``."""
    from ..models.netdef import Net
    from ..models.torch_emit import to_torch

    directory = Path(directory)
    manifest = Manifest.load(directory)
    manifest.check_files(directory)
    if "net" not in manifest.files:
        raise ValueError(f"{directory}: artifact has no net.json (built from an ONNX file?); "
                         "PyTorch baselines need a zoo model")
    net = Net.from_dict(json.loads((directory / manifest.files["net"]["name"]).read_text()))
    weights = {s["name"]: tensors.materialize(s) for s in manifest.params}
    return to_torch(net, weights).to(device), manifest


def _runner(torch, module, mode: str, example):
    """A callable ``run(x) -> output`` for ``mode`` (the CUDA graph copies x in first)."""
    if mode == "eager":
        return module
    if mode.startswith("compile"):
        options = {"mode": "max-autotune"} if mode == "compile-max-autotune" else {}
        return torch.compile(module, **options)
    if example.device.type != "cuda":
        raise RuntimeError("cuda-graph needs a CUDA device")
    static_in = example.clone()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            module(static_in)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = module(static_in)

    def replay(x):
        static_in.copy_(x)
        graph.replay()
        return static_out

    return replay


def _timed(torch, run, inputs, cuda: bool, repeat: int, number: int) -> list[float]:
    """Per-repeat mean latency in ms; ``inputs`` rotate over the repeats."""
    times = []
    for r in range(repeat):
        x = inputs[r % len(inputs)]
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            for _ in range(number):
                run(x)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / number)
        else:
            begin = time.perf_counter()
            for _ in range(number):
                run(x)
            times.append((time.perf_counter() - begin) * 1e3 / number)
    return times


def bench_torch(directory, modes=("eager",), device: str | None = None, warmup: int = 10,
                repeat: int = 50, number: int = 1, rotate: int = 4) -> list[BenchResult]:
    """Check and time each PyTorch mode on an artifact's model; one result per mode.

    A mode that fails (``cuda-graph`` without a GPU, a compile error) gives a result with
    status ``"failed: <reason>"``; one whose output differs from the reference, ``"mismatch"``;
    neither has a latency.
    """
    import torch

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    # Every column computes in float32: no TF32 in cuDNN convolutions or matmuls (PyTorch
    # allows it in convolutions by default), fastest cuDNN algorithm per shape.
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    module, manifest = load_torch_model(directory, device)
    (spec,) = manifest.inputs
    base = torch.from_numpy(tensors.materialize(spec)).to(device)
    inputs = [torch.from_numpy(tensors.materialize(spec, seed=spec["seed"] + 1000 + k))
              .to(device) for k in range(max(1, rotate))]
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    versions = {"torch": torch.__version__, "cuda": torch.version.cuda, "numpy": np.__version__}
    results = []
    for mode in modes:
        result = BenchResult(manifest.model, manifest.batch, f"torch-{mode}", name, "ok",
                             float("nan"), 0.0, versions=versions,
                             settings={"warmup": warmup, "repeat": repeat, "number": number,
                                       "rotate": len(inputs), "tf32": False,
                                       "cudnn_benchmark": True})
        results.append(result)
        with torch.no_grad():
            try:
                begin = time.perf_counter()
                run = _runner(torch, module, mode, base)
                out = run(base).detach().cpu().numpy().copy()
                result.settings["setup_s"] = round(time.perf_counter() - begin, 2)
            except Exception as err:  # noqa: BLE001  (report the mode's failure, go on)
                result.status = f"failed: {type(err).__name__}: {str(err)[:200]}"
                logger.warning("%s %s: %s", manifest.model, mode, result.status)
                continue
            result.max_abs_err, result.error_bound, ok = check_outputs(
                manifest, Path(directory), [out])
            if not ok:
                result.status = "mismatch"
                continue
            for k in range(warmup):
                run(inputs[k % len(inputs)])
            result.repeats_ms = _timed(torch, run, inputs, device == "cuda", repeat, number)
            result.latency_ms = statistics.median(result.repeats_ms)
    return results
