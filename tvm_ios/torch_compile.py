"""A ``torch.compile`` backend that builds each captured graph with a tvm-ios pipeline::

    import tvm_ios
    fast = torch.compile(model, backend=tvm_ios.torch_backend(pipeline="ios", target="llvm"))
    y = fast(x)   # TVM's kernels, IOS's stages; eager PyTorch for graphs TVM cannot take

TVM 0.27 ships one (``tvm.relax.frontend.torch.relax_dynamo(pipeline)``); it is not used
as it is because it applies the pipeline as a pass and then runs ``relax.build``'s default
pipeline again (the ``ios`` pipeline already ends in TVM's default build), picks its own
target, keeps batch norms unfolded and lets any conversion or build error escape into the
user's program. Here each FX graph goes through TVM's ``from_fx`` (as ``relax_dynamo``
does), its batch norms are folded (:mod:`tvm_ios.models.fold_batch_norm`) and it is
compiled with ``tvm.compile(mod, target, relax_pipeline=pipeline)``. A graph that fails
anywhere on the way runs eagerly instead, with a warning naming the error: the user's
program never crashes because of the backend.
"""
from __future__ import annotations

import logging

from . import _tvm
from .models.fold_batch_norm import fold_batch_norm

logger = logging.getLogger(__name__)

__all__ = ["torch_backend"]


def torch_backend(pipeline="ios", target="llvm"):
    """A ``torch.compile`` backend compiling with ``pipeline`` for ``target``.

    Parameters
    ----------
    pipeline : str or tvm.transform.Pass
        A Relax pipeline name (``"ios"``, ``"default"``...) or pass, as ``tvm.compile``
        takes it (e.g. ``tvm_ios.pipeline(engine="stages")``).
    target : str or dict or tvm.target.Target
        The TVM target; only CPU targets (``llvm``) run: inputs and outputs stay on the CPU.

    Returns
    -------
    callable
        ``backend(graph_module, example_inputs) -> callable`` for ``torch.compile``.
    """

    def backend(graph_module, example_inputs):
        try:
            return _compiled(graph_module, example_inputs, pipeline, target)
        except Exception as err:  # noqa: BLE001  (any failure: run this graph eagerly)
            first = (str(err).strip().splitlines() or [type(err).__name__])[0][:300]
            logger.warning("torch_backend: graph of %d nodes runs eagerly: %s: %s",
                           len(graph_module.graph.nodes), type(err).__name__, first)
            return graph_module.forward

    return backend


def _compiled(graph_module, example_inputs, pipeline, target):
    """The VM function of ``graph_module`` compiled with ``pipeline``, as a torch callable."""
    import torch  # noqa: PLC0415
    from tvm.relax.frontend.torch import from_fx  # noqa: PLC0415

    if any(not isinstance(t, torch.Tensor) or t.device.type != "cpu" for t in example_inputs):
        raise ValueError("only CPU tensor inputs are compiled")
    input_info = [(tuple(int(d) for d in t.shape), str(t.dtype).replace("torch.", ""))
                  for t in example_inputs]
    with torch.no_grad():
        mod = from_fx(graph_module, input_info)
    mod, folded = fold_batch_norm(mod)
    vm = _tvm.virtual_machine(_tvm.compile_module(mod, target, pipeline=pipeline))
    main = vm["main"]
    logger.info("torch_backend: compiled a graph of %d nodes (%d batch norms folded)",
                len(graph_module.graph.nodes), folded)

    def run(*args):
        tensors = [_tvm.tensor(a.detach().contiguous().numpy()) for a in args]
        out = main(*tensors)
        return _to_torch(out, torch)

    return run


def _to_torch(value, torch):
    """VM outputs (a tensor or a tuple of them) as torch tensors; a tuple stays a tuple."""
    if isinstance(value, torch.Tensor):
        return value
    if hasattr(value, "numpy"):
        return torch.from_numpy(value.numpy())
    return tuple(_to_torch(v, torch) for v in value)
