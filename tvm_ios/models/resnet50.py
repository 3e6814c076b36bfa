"""ResNet-50 (He et al., CVPR 2016; torchvision ``resnet50``, v1.5 with the stride in the 3x3).

Stem conv 7x7/2 (64) + max pool 3/2, four stages of 3, 4, 6, 3 bottleneck blocks (1x1, 3x3,
1x1 with 4x expansion; a 1x1 projection shortcut in the first block of each stage), global
average pool and a 2048 -> 1000 classifier. A control model: almost no inter-operator
parallelism (only the projection shortcuts run beside the main branch).

torchvision counts 25,557,032 parameters; folding its 53,120 BatchNorm scale/shift parameters
into 26,560 conv biases leaves 25,530,472. Published size 224x224; every feature map stays
non-empty down to 1x1 inputs (padding keeps the windows valid), 32x32 is the smallest sensible.
"""
from __future__ import annotations

import logging

from .netdef import Net, Node

logger = logging.getLogger(__name__)

__all__ = ["build", "bottleneck", "DEFAULT_IMAGE_SIZE", "MIN_IMAGE_SIZE", "NUM_CLASSES"]

DEFAULT_IMAGE_SIZE = 224
MIN_IMAGE_SIZE = 1
NUM_CLASSES = 1000
#: torchvision ``resnet50``: 25,557,032 parameters (with BatchNorm).
PUBLISHED_PARAMS = 25_557_032

_STAGES = ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2))


def bottleneck(net: Net, x: Node, width: int, out_ch: int, stride: int, groups: int = 1) -> Node:
    """Bottleneck residual block (call inside a ``net.scope``); also used by ResNeXt.

    Parameters
    ----------
    net : Net
        The net under construction.
    x : Node
        Block input.
    width : int
        Channels of the 1x1 reduce and grouped 3x3 convs.
    out_ch : int
        Output channels.
    stride : int
        Stride of the 3x3 conv and of the projection shortcut.
    groups : int
        Groups of the 3x3 conv (cardinality).

    Returns
    -------
    Node
        ``relu(branch + shortcut)``.
    """
    y = net.conv(x, width, 1, relu=True, name="conv1")
    y = net.conv(y, width, 3, stride=stride, groups=groups, relu=True, name="conv2")
    y = net.conv(y, out_ch, 1, name="conv3")
    shortcut = x
    if stride != 1 or x.channels != out_ch:
        shortcut = net.conv(x, out_ch, 1, stride=stride, padding=0, name="downsample")
    return net.relu(net.add([y, shortcut], name="add"), name="relu")


def build(batch_size: int = 1, image_size: int | None = None,
          num_classes: int = NUM_CLASSES) -> Net:
    """ResNet-50 definition. Arguments as for :func:`tvm_ios.models.net`."""
    size = image_size or DEFAULT_IMAGE_SIZE
    net, x = Net.image_model("resnet50", batch_size, size, num_classes)
    x = net.conv(x, 64, 7, stride=2, padding=3, relu=True, name="conv1")
    x = net.max_pool(x, 3, 2, padding=1, name="maxpool")
    for stage, (width, blocks, stride) in enumerate(_STAGES, start=1):
        for block in range(blocks):
            with net.scope(f"layer{stage}_{block}"):
                x = bottleneck(net, x, width, width * 4, stride if block == 0 else 1)
    net.classifier_head(x, num_classes, name="fc")
    return net
