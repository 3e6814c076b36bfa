"""MobileNetV2 (Sandler et al., CVPR 2018; torchvision ``mobilenet_v2``, width 1.0).

Conv 3x3/2 (32) + ReLU6, 17 inverted residual blocks (1x1 expand + ReLU6, 3x3 depthwise +
ReLU6, 1x1 linear projection; identity shortcut when stride 1 and channels unchanged), conv 1x1
(1280) + ReLU6, global average pool and a 1280 -> 1000 classifier. A control model: a chain with
no inter-operator parallelism apart from the residual adds.

torchvision counts 3,504,872 parameters; folding its 34,112 BatchNorm scale/shift parameters
into 17,056 conv biases leaves 3,487,816. Published size 224x224.
"""
from __future__ import annotations

import logging

from .netdef import Net, Node

logger = logging.getLogger(__name__)

__all__ = ["build", "inverted_residual", "DEFAULT_IMAGE_SIZE", "MIN_IMAGE_SIZE", "NUM_CLASSES"]

DEFAULT_IMAGE_SIZE = 224
MIN_IMAGE_SIZE = 1
NUM_CLASSES = 1000
#: torchvision ``mobilenet_v2``: 3,504,872 parameters (with BatchNorm).
PUBLISHED_PARAMS = 3_504_872

#: (expansion t, output channels c, repeats n, first stride s), Table 2 of the paper.
_SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
             (6, 160, 3, 2), (6, 320, 1, 1))


def inverted_residual(net: Net, x: Node, out_ch: int, stride: int, expand: int) -> Node:
    """One inverted residual block (call inside a ``net.scope``).

    Parameters
    ----------
    net : Net
        The net under construction.
    x : Node
        Block input.
    out_ch : int
        Output channels of the linear projection.
    stride : int
        Stride of the depthwise conv.
    expand : int
        Expansion ratio t of the hidden width.

    Returns
    -------
    Node
    """
    hidden = x.channels * expand
    y = x
    if expand != 1:
        y = net.conv(y, hidden, 1, act="relu6", name="expand")
    y = net.conv(y, hidden, 3, stride=stride, groups=hidden, act="relu6", name="depthwise")
    y = net.conv(y, out_ch, 1, name="project")
    if stride == 1 and x.channels == out_ch:
        y = net.add([x, y], name="add")
    return y


def build(batch_size: int = 1, image_size: int | None = None,
          num_classes: int = NUM_CLASSES) -> Net:
    """MobileNetV2 definition. Arguments as for :func:`tvm_ios.models.net`."""
    size = image_size or DEFAULT_IMAGE_SIZE
    net, x = Net.image_model("mobilenet_v2", batch_size, size, num_classes)
    x = net.conv(x, 32, 3, stride=2, act="relu6", name="conv_stem")
    block = 0
    for expand, out_ch, repeats, stride in _SETTINGS:
        for i in range(repeats):
            block += 1
            with net.scope(f"block{block}"):
                x = inverted_residual(net, x, out_ch, stride if i == 0 else 1, expand)
    x = net.conv(x, 1280, 1, act="relu6", name="conv_head")
    net.classifier_head(x, num_classes, name="classifier")
    return net
