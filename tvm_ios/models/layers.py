"""Builder methods of :class:`~tvm_ios.models.netdef.Net` (one per operator kind).

Kept apart from the graph bookkeeping in ``netdef.py``; :class:`LayerBuilder` is a mixin whose
methods all end in :meth:`Net.add_node`. Every method takes the input node(s) first, an
optional ``name`` last, and returns the new node.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from .netdef import Node

logger = logging.getLogger(__name__)

__all__ = ["LayerBuilder", "pair"]

ACTIVATIONS = (None, "relu", "relu6")


def pair(value: int | Sequence[int], what: str = "value") -> tuple[int, int]:
    """``3`` -> ``(3, 3)``; ``(1, 7)`` stays; anything else raises ValueError."""
    if isinstance(value, int):
        return (value, value)
    out = tuple(int(v) for v in value)
    if len(out) != 2:
        raise ValueError(f"{what} must be an int or an (h, w) pair, got {value!r}")
    return out


def same_padding(kernel: tuple[int, int], dilation: tuple[int, int]) -> tuple[int, int]:
    """Padding keeping the spatial size at stride 1; defined for odd kernels only."""
    if kernel[0] % 2 == 0 or kernel[1] % 2 == 0:
        raise ValueError(f"padding=None ('same') needs an odd kernel, got {kernel}")
    return (dilation[0] * (kernel[0] - 1) // 2, dilation[1] * (kernel[1] - 1) // 2)


class LayerBuilder:
    """Mixin with the layer-building methods of :class:`~tvm_ios.models.netdef.Net`."""

    def input(self, shape: Sequence[int], name: str = "data") -> "Node":
        """The network input, an NCHW tensor of ``shape`` (batch included)."""
        shape = tuple(int(d) for d in shape)
        if len(shape) != 4 or min(shape) < 1:
            raise ValueError(f"input shape must be positive NCHW, got {shape}")
        return self.add_node("input", [], name=name, shape=shape)

    def conv(self, x: "Node", out_ch: int, kernel: int | Sequence[int], stride=1,
             padding=None, dilation=1, groups: int = 1, relu: bool = False,
             act: str | None = None, name: str | None = None) -> "Node":
        """2-d convolution with bias and an optional activation epilogue.

        The bias is always there because BatchNorm is folded into the convolution's weight and
        bias at inference: one ``conv`` node is a framework's Conv2d + BatchNorm2d pair.

        Parameters
        ----------
        x : Node
            NCHW input.
        out_ch : int
            Output channels.
        kernel, stride, dilation : int or (h, w)
            Window size, step and dilation.
        padding : None, int or (h, w)
            Zero padding on each side; None means "same" (odd kernels only).
        groups : int
            Channel groups (``in_ch`` for a depthwise convolution).
        relu : bool
            Shorthand for ``act="relu"``.
        act : {None, "relu", "relu6"}
            Activation applied to conv + bias.
        name : str, optional
            Node name (scope-prefixed).

        Returns
        -------
        Node
        """
        if relu:
            if act not in (None, "relu"):
                raise ValueError(f"relu=True conflicts with act={act!r}")
            act = "relu"
        if act not in ACTIVATIONS:
            raise ValueError(f"act must be one of {ACTIVATIONS}, got {act!r}")
        kernel, stride, dilation = pair(kernel, "kernel"), pair(stride, "stride"), pair(dilation)
        padding = same_padding(kernel, dilation) if padding is None else pair(padding, "padding")
        in_ch = x.shape[1]
        if groups < 1 or in_ch % groups:
            raise ValueError(f"groups={groups} does not divide in_channels={in_ch}")
        attrs = {"out_channels": int(out_ch), "kernel": kernel, "stride": stride,
                 "padding": padding, "dilation": dilation, "groups": int(groups), "act": act}
        return self.add_node("conv", [x], attrs, name=name)

    def sepconv(self, x: "Node", out_ch: int, kernel: int | Sequence[int], stride=1,
                name: str | None = None) -> "Node":
        """Separable convolution: depthwise ``kernel`` conv (groups = in_ch, "same" padding,
        ``stride``) then pointwise 1x1 conv to ``out_ch``; both with bias, no activation.

        Creates nodes ``<name>_dw`` and ``<name>_pw`` and returns the pointwise one.
        """
        name = name or self.fresh_name("sepconv")
        in_ch = x.shape[1]
        dw = self.conv(x, in_ch, kernel, stride=stride, groups=in_ch, name=f"{name}_dw")
        return self.conv(dw, out_ch, 1, name=f"{name}_pw")

    def relu(self, x: "Node", name: str | None = None) -> "Node":
        """Rectified linear unit."""
        return self.add_node("relu", [x], name=name)

    def relu6(self, x: "Node", name: str | None = None) -> "Node":
        """``min(max(x, 0), 6)`` (MobileNet's activation)."""
        return self.add_node("relu6", [x], name=name)

    def max_pool(self, x: "Node", k, stride, padding=0, ceil_mode: bool = False,
                 name: str | None = None) -> "Node":
        """Max pooling (padding counts as -inf); ``ceil_mode`` as in PyTorch."""
        attrs = {"kernel": pair(k, "kernel"), "stride": pair(stride, "stride"),
                 "padding": pair(padding, "padding"), "ceil_mode": bool(ceil_mode)}
        return self.add_node("max_pool", [x], attrs, name=name)

    def avg_pool(self, x: "Node", k, stride, padding=0, count_include_pad: bool = False,
                 name: str | None = None) -> "Node":
        """Average pooling; ``count_include_pad`` decides whether padding zeros are counted."""
        attrs = {"kernel": pair(k, "kernel"), "stride": pair(stride, "stride"),
                 "padding": pair(padding, "padding"),
                 "count_include_pad": bool(count_include_pad)}
        return self.add_node("avg_pool", [x], attrs, name=name)

    def global_avg_pool(self, x: "Node", name: str | None = None) -> "Node":
        """Average over H and W, keeping them as 1x1."""
        return self.add_node("global_avg_pool", [x], name=name)

    def concat(self, xs: Sequence["Node"], name: str | None = None) -> "Node":
        """Concatenation along the channel axis."""
        return self.add_node("concat", list(xs), {"axis": 1}, name=name)

    def add(self, xs: Sequence["Node"], name: str | None = None) -> "Node":
        """Elementwise sum of two or more tensors of the same shape."""
        return self.add_node("add", list(xs), name=name)

    def mean(self, xs: Sequence["Node"], name: str | None = None) -> "Node":
        """Elementwise average of two or more tensors (RandWire's output node)."""
        return self.add_node("mean", list(xs), name=name)

    def shift(self, x: "Node", dy: int = 1, dx: int = 1, name: str | None = None) -> "Node":
        """``y[..., i, j] = x[..., i + dy, j + dx]``, zero where that falls outside.

        NASNet's factorized reduction uses ``shift(x, 1, 1)`` before its second stride-2 path
        (PyTorch: ``F.pad(x, (0, 1, 0, 1))[:, :, 1:, 1:]``).
        """
        if dy < 0 or dx < 0:
            raise ValueError(f"shift supports non-negative offsets only, got ({dy}, {dx})")
        return self.add_node("shift", [x], {"dy": int(dy), "dx": int(dx)}, name=name)

    def flatten(self, x: "Node", name: str | None = None) -> "Node":
        """Reshape (N, C, H, W) to (N, C*H*W)."""
        return self.add_node("flatten", [x], name=name)

    def classifier_head(self, x: "Node", num_classes: int, name: str = "fc") -> "Node":
        """Global average pool, flatten and a linear layer named ``name``, as the output."""
        x = self.flatten(self.global_avg_pool(x, name="avgpool"), name="flatten")
        out = self.linear(x, num_classes, name=name)
        self.output(out)
        return out

    def linear(self, x: "Node", out: int, name: str | None = None) -> "Node":
        """Fully connected layer with bias on a (N, features) input."""
        if len(x.shape) != 2:
            raise ValueError(f"linear needs a flattened (N, features) input, got {x.shape}")
        return self.add_node("linear", [x], {"out_features": int(out)}, name=name)
