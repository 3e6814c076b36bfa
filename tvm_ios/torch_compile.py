"""A ``torch.compile`` backend that builds each captured graph with a tvm-ios pipeline::

    import tvm_ios
    fast = torch.compile(model, backend=tvm_ios.torch_backend(pipeline="ios", target="llvm"))
    y = fast(x)   # TVM's kernels, IOS's stages; eager PyTorch for graphs TVM cannot take

TVM 0.27 ships one (``tvm.relax.frontend.torch.relax_dynamo(pipeline)``); it is not used
as it is because it applies the pipeline as a pass and then runs ``relax.build``'s default
pipeline again (the ``ios`` pipeline already ends in TVM's default build), picks its own
target, keeps batch norms unfolded and lets any conversion or build error escape into the
user's program; and its ``from_fx`` does not convert the functional ``batch_norm`` of
dynamo's graphs ("Unsupported function types ['batch_norm']"). Here each FX graph is
exported again with ``torch.export`` and imported by
:func:`~tvm_ios.models.torch_import.from_torch` (batch norms folded into the convolutions,
as for ``--model``), then compiled with ``tvm.compile(mod, target,
relax_pipeline=pipeline)``. A graph that fails anywhere on the way runs eagerly instead,
with a warning naming the error: the user's program never crashes because of the backend. The module's parameters and buffers, which
dynamo passes as graph inputs, are read once when a graph is compiled (an inference
backend: weights changed later are not seen).
"""
from __future__ import annotations

import logging

from . import _tvm
from .models.torch_import import from_torch

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
    import torch

    if any(not isinstance(t, torch.Tensor) or t.device.type != "cpu" for t in example_inputs):
        raise ValueError("only CPU tensor inputs are compiled")
    weights = _weight_inputs(graph_module, example_inputs)
    frozen = _frozen(graph_module, example_inputs, weights, torch)
    users = [t for i, t in enumerate(example_inputs) if i not in weights]
    mod, params = from_torch(frozen, tuple(users))
    mod = _tvm.bind_params(mod, params)
    main = _tvm.virtual_machine(_tvm.compile_module(mod, target, pipeline=pipeline))["main"]
    logger.info("torch_backend: compiled a graph of %d nodes (%d inputs, %d weights)",
                len(graph_module.graph.nodes), len(users), len(weights))
    wrap = _returns_tuple(graph_module)

    def run(*args):
        args = [a for i, a in enumerate(args) if i not in weights]
        out = _to_torch(main(*[_tvm.tensor(a.detach().contiguous().numpy()) for a in args]),
                        torch)
        return (out,) if wrap and isinstance(out, torch.Tensor) else out

    return run


def _weight_inputs(graph_module, example_inputs) -> set:
    """Positions of the inputs that are the module's parameters and buffers: dynamo passes
    them as graph inputs (``inline_inbuilt_nn_modules``), sourced from ``._parameters[...]``
    or ``._buffers[...]`` of a module."""
    found = set()
    placeholders = [n for n in graph_module.graph.nodes if n.op == "placeholder"]
    for i, node in enumerate(placeholders[:len(example_inputs)]):
        source = getattr(node.meta.get("grapharg"), "source", None)
        name = source.name if isinstance(getattr(source, "name", None), str) else ""
        if "._parameters[" in name or "._buffers[" in name:
            found.add(i)
    return found


def _frozen(graph_module, example_inputs, weights: set, torch):
    """``graph_module`` as a module of its user inputs only, its weight inputs held as
    buffers (named after their placeholders), so that export sees them as constants."""
    names = [n.name.strip("_") for n in graph_module.graph.nodes if n.op == "placeholder"]

    class Frozen(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.graph_module = graph_module
            for i in sorted(weights):
                self.register_buffer(names[i], example_inputs[i].detach().clone())

        def forward(self, *users):
            it = iter(users)
            args = [getattr(self, names[i]) if i in weights else next(it)
                    for i in range(len(example_inputs))]
            return self.graph_module(*args)

    return Frozen()


def _returns_tuple(graph_module) -> bool:
    """Whether the FX graph returns a tuple or list (dynamo's graphs do)."""
    outputs = [n for n in graph_module.graph.nodes if n.op == "output"]
    return bool(outputs) and isinstance(outputs[0].args[0], (tuple, list))


def _to_torch(value, torch):
    """VM outputs (a tensor or a tuple of them) as torch tensors; a tuple stays a tuple."""
    if isinstance(value, torch.Tensor):
        return value
    if hasattr(value, "numpy"):
        return torch.from_numpy(value.numpy())
    return tuple(_to_torch(v, torch) for v in value)
