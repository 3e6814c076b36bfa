"""Emit a ``torch.nn.Module`` from a :class:`~tvm_ios.models.netdef.Net`.

The PyTorch baselines of the benchmarks must run the same architecture with the same weights
as the Relax module (:mod:`tvm_ios.models.relax_emit`); both are emitted from one ``Net``.
Each node maps to one functional PyTorch call, with the semantics of the NumPy reference
executor (:mod:`tvm_ios.models.reference`): a ``conv`` node is ``F.conv2d`` with bias (BatchNorm
folded) and an optional ReLU/ReLU6, ``shift`` is ``F.pad(x[..., dy:, dx:], (0, dx, 0, dy))``,
pools follow PyTorch's ``ceil_mode`` and ``count_include_pad``.

Imports only torch and the standard library (and no TVM), so that the GPU host can build the
module from a Net's plain-data form with nothing but its own PyTorch.
"""
from __future__ import annotations

import logging
import math
from typing import Callable, Mapping

import torch
import torch.nn.functional as F

__all__ = ["NetModule", "to_torch", "net_layout"]

logger = logging.getLogger(__name__)


def net_layout(net, params: Mapping) -> dict:
    """Convert Relax-layout parameters (``relax_emit``'s) back to the Net layout.

    Conv biases ``(1, C, 1, 1)`` become ``(C,)``, linear weights ``(in, out)`` become
    ``(out, in)``; arrays already in the Net layout pass unchanged.
    """
    out = {}
    for node in net:
        for role, shape in node.params.items():
            name = node.param_name(role)
            value = torch.as_tensor(params[name])
            if tuple(value.shape) != tuple(shape) and value.numel() == math.prod(shape):
                value = value.T if node.op == "linear" else value.reshape(shape)
            if tuple(value.shape) != tuple(shape):
                raise ValueError(f"{net.name}: parameter {name!r} has shape "
                                 f"{tuple(params[name].shape)}, expected {tuple(shape)}")
            out[name] = value.contiguous()
    return out


def _act(y, act):
    if act == "relu":
        return F.relu(y)
    if act == "relu6":
        return F.relu6(y)
    return y


def _conv(node, args, p):
    a = node.attrs
    y = F.conv2d(args[0], p[node.param_name("w")], p[node.param_name("b")],
                 tuple(a["stride"]), tuple(a["padding"]), tuple(a["dilation"]), a["groups"])
    return _act(y, a["act"])


def _pool(node, args, _p):
    a = node.attrs
    if node.op == "max_pool":
        return F.max_pool2d(args[0], tuple(a["kernel"]), tuple(a["stride"]),
                            tuple(a["padding"]), ceil_mode=a["ceil_mode"])
    return F.avg_pool2d(args[0], tuple(a["kernel"]), tuple(a["stride"]), tuple(a["padding"]),
                        ceil_mode=a.get("ceil_mode", False),
                        count_include_pad=a["count_include_pad"])


def _sum(args):
    total = args[0]
    for arg in args[1:]:
        total = total + arg
    return total


def _shift(node, args, _p):
    dy, dx = node.attrs["dy"], node.attrs["dx"]
    return F.pad(args[0][:, :, dy:, dx:], (0, dx, 0, dy))


_OPS: dict[str, Callable] = {
    "conv": _conv,
    "linear": lambda n, a, p: F.linear(a[0], p[n.param_name("w")], p[n.param_name("b")]),
    "relu": lambda n, a, p: F.relu(a[0]),
    "relu6": lambda n, a, p: F.relu6(a[0]),
    "max_pool": _pool,
    "avg_pool": _pool,
    "global_avg_pool": lambda n, a, p: a[0].mean(dim=(2, 3), keepdim=True),
    "concat": lambda n, a, p: torch.cat(a, dim=n.attrs["axis"]),
    "add": lambda n, a, p: _sum(a),
    "mean": lambda n, a, p: _sum(a) * (1.0 / len(a)),
    "shift": _shift,
    "flatten": lambda n, a, p: torch.flatten(a[0], 1),
}


class NetModule(torch.nn.Module):
    """A Net as a PyTorch module; parameters keep the Net's names (``<node>_w``, ``<node>_b``).

    Parameters
    ----------
    net : Net
        The definition; its nodes are walked in order in :meth:`forward`.
    params : mapping, optional
        Parameter values by name, in the Net or the Relax layout; zeros when omitted.
    """

    def __init__(self, net, params: Mapping | None = None):
        super().__init__()
        unknown = sorted({n.op for n in net} - set(_OPS) - {"input"})
        if unknown:
            raise ValueError(f"{net.name}: no PyTorch form for operator(s) {unknown}")
        self.net_name = net.name
        self.nodes = [n for n in net if n.op != "input"]
        self.input_name = net.input_node.name
        self.output_name = net.output_node.name
        self.weights = torch.nn.ParameterDict({
            name: torch.nn.Parameter(torch.zeros(shape), requires_grad=False)
            for name, shape in net.param_shapes().items()})
        if params is not None:
            self.load_net_params(net, params)

    def load_net_params(self, net, params: Mapping) -> None:
        """Copy ``params`` (Net or Relax layout, numpy or torch) into the module."""
        with torch.no_grad():
            for name, value in net_layout(net, params).items():
                self.weights[name].copy_(value)

    def forward(self, x):
        values = {self.input_name: x}
        weights = self.weights
        for node in self.nodes:
            values[node.name] = _OPS[node.op](node, [values[i] for i in node.inputs], weights)
        return values[self.output_name]


def to_torch(net, params: Mapping | None = None) -> NetModule:
    """The ``torch.nn.Module`` of ``net`` (in eval mode) with ``params`` loaded if given."""
    module = NetModule(net, params).eval()
    logger.debug("torch module of %s: %d nodes, %d tensors", net.name, len(module.nodes),
                 len(module.weights))
    return module
