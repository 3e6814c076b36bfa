"""Deterministic random weights for a :class:`~tvm_ios.models.netdef.Net`.

Weights are drawn He-style (``N(0, 2 / fan_in)``) from ``numpy.random.default_rng(seed)`` in
node order, then *calibrated* the way folded BatchNorm would leave them: the net is run once
with NumPy (:mod:`tvm_ios.models.reference`) on a random batch, and each conv / linear layer, in
order, is rescaled so that its pre-activation output has zero per-channel mean and unit
standard deviation. Without this, the sums of multi-branch nets (RandWire, NASNet, residual
blocks) grow geometrically with depth (output std ~1e4 for NASNet and RandWire).

Calibration runs at the image size the net was built for: statistics taken at a smaller size
do not transfer, because zero padding hides a size-dependent share of every spatial kernel and
the mismatch compounds over depth (NASNet calibrated at 96 gives outputs ~1e3 at 331). So the
weights depend on ``(net, seed)``, image size included. Cost: a NumPy forward pass, about 10 s
for NASNet-A at 331x331 and 2 s for Inception V3 at 299x299, well under a second at test sizes.
The calibration batch grows on small images so that every channel of the smallest feature map
gets at least :data:`MIN_SAMPLES` values.
"""
from __future__ import annotations

import logging
import math
import time

import numpy as np

from . import reference
from .netdef import Node

logger = logging.getLogger(__name__)

__all__ = ["init_params", "calibrate"]

MIN_SAMPLES = 8
MAX_CALIB_BATCH = 8


def _he_normal(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    fan_in = math.prod(shape[1:])
    return (rng.standard_normal(shape, dtype=np.float32) * np.float32(math.sqrt(2.0 / fan_in)))


def init_params(net, seed: int = 0, calibrate_weights: bool = True) -> dict[str, np.ndarray]:
    """Deterministic parameters for ``net`` in the Net layout (float32).

    Parameters
    ----------
    net : Net
        The network.
    seed : int
        Seed of ``numpy.random.default_rng``; the same seed gives the same weights.
    calibrate_weights : bool
        Rescale layers so activations stay O(1) (see module docstring). Without it, weights
        are plain He-normal with zero biases.

    Returns
    -------
    dict of str to numpy.ndarray
        Parameter name (``<node>_w``, ``<node>_b``) to array, in node order.
    """
    weight_seq, calib_seq = np.random.SeedSequence(seed).spawn(2)
    rng = np.random.default_rng(weight_seq)
    params: dict[str, np.ndarray] = {}
    for node in net:
        for role, shape in node.params.items():
            if role == "w":
                params[node.param_name(role)] = _he_normal(rng, tuple(shape))
            else:
                params[node.param_name(role)] = np.zeros(shape, dtype=np.float32)
    if calibrate_weights:
        calibrate(net, params, np.random.default_rng(calib_seq))
    return params


def calibrate(net, params: dict[str, np.ndarray],
              rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Rescale conv / linear weights and biases in place, folding BatchNorm-like statistics.

    Parameters
    ----------
    net : Net
        The network, at the image size the weights are meant for.
    params : dict
        Parameters from :func:`init_params`, modified in place.
    rng : numpy.random.Generator
        Source of the random calibration batch.

    Returns
    -------
    dict
        ``params``, for chaining.
    """
    smallest = min(math.prod(n.shape[2:]) for n in net if len(n.shape) == 4)
    batch = min(MAX_CALIB_BATCH, max(1, math.ceil(MIN_SAMPLES / smallest)))
    small = net.resized(batch_size=batch)
    data = rng.standard_normal(small.input_node.shape, dtype=np.float32)
    start = time.perf_counter()

    def normalize(node, args):
        if node.op not in ("conv", "linear"):
            return None
        w_name, b_name = node.param_name("w"), node.param_name("b")
        params[b_name][...] = 0.0
        pre = reference.run_node(_without_act(node), args, params)
        axes = (0, 2, 3) if pre.ndim == 4 else (0,)
        mean = pre.mean(axis=axes)
        std = float(pre.std()) or 1.0
        params[w_name] /= np.float32(std)
        params[b_name][...] = -mean / np.float32(std)
        shape = (1, -1, 1, 1) if pre.ndim == 4 else (1, -1)
        out = (pre - mean.reshape(shape)) / np.float32(std)
        act = node.attrs.get("act")
        if act == "relu":
            out = np.maximum(out, 0)
        elif act == "relu6":
            out = np.clip(out, 0, 6)
        return out

    reference.run(small, params, data, hook=normalize)
    logger.debug("calibrated %s at %s, batch %d, in %.2f s", net.name, small.image_size, batch,
                 time.perf_counter() - start)
    return params


def _without_act(node: Node) -> Node:
    if node.attrs.get("act") is None:
        return node
    return Node(node.name, node.op, node.inputs, {**node.attrs, "act": None}, node.params,
                node.shape)
