"""Inception V3 (Szegedy et al., CVPR 2016) in the torchvision layout, without the aux head.

Stem (five convs, two max pools), 3x InceptionA (``mixed_5b..5d``), InceptionB (``mixed_6a``),
4x InceptionC (``mixed_6b..6e``, 7x7 factorized into 1x7 / 7x1), InceptionD (``mixed_7a``),
2x InceptionE (``mixed_7b``, ``mixed_7c``), global average pool and a 2048 -> 1000 classifier.
Every ``BasicConv2d`` (conv + BatchNorm + ReLU) is one ``conv(..., relu=True)``. Node names
follow torchvision's module names in lower case (``mixed_7c_branch3x3dbl_3a``).

Published size 299x299; the smallest input that keeps every feature map non-empty is 75x75.
"""
from __future__ import annotations

import logging

from .netdef import Net, Node

logger = logging.getLogger(__name__)

__all__ = ["build", "DEFAULT_IMAGE_SIZE", "MIN_IMAGE_SIZE", "NUM_CLASSES"]

DEFAULT_IMAGE_SIZE = 299
MIN_IMAGE_SIZE = 75
NUM_CLASSES = 1000
#: torchvision ``inception_v3(aux_logits=False)``: 23,834,568 parameters (with BatchNorm).
PUBLISHED_PARAMS = 23_834_568


def _conv(net: Net, x: Node, out_ch: int, kernel, name: str, stride=1, padding=0) -> Node:
    return net.conv(x, out_ch, kernel, stride=stride, padding=padding, relu=True, name=name)


def _inception_a(net: Net, x: Node, pool_features: int) -> Node:
    b1 = _conv(net, x, 64, 1, "branch1x1")
    b5 = _conv(net, x, 48, 1, "branch5x5_1")
    b5 = _conv(net, b5, 64, 5, "branch5x5_2", padding=2)
    b3 = _conv(net, x, 64, 1, "branch3x3dbl_1")
    b3 = _conv(net, b3, 96, 3, "branch3x3dbl_2", padding=1)
    b3 = _conv(net, b3, 96, 3, "branch3x3dbl_3", padding=1)
    bp = net.avg_pool(x, 3, 1, 1, count_include_pad=True, name="branch_pool_avg")
    bp = _conv(net, bp, pool_features, 1, "branch_pool")
    return net.concat([b1, b5, b3, bp], name="concat")


def _inception_b(net: Net, x: Node) -> Node:
    b3 = _conv(net, x, 384, 3, "branch3x3", stride=2)
    bd = _conv(net, x, 64, 1, "branch3x3dbl_1")
    bd = _conv(net, bd, 96, 3, "branch3x3dbl_2", padding=1)
    bd = _conv(net, bd, 96, 3, "branch3x3dbl_3", stride=2)
    bp = net.max_pool(x, 3, 2, name="branch_pool")
    return net.concat([b3, bd, bp], name="concat")


def _inception_c(net: Net, x: Node, c7: int) -> Node:
    b1 = _conv(net, x, 192, 1, "branch1x1")
    b7 = _conv(net, x, c7, 1, "branch7x7_1")
    b7 = _conv(net, b7, c7, (1, 7), "branch7x7_2", padding=(0, 3))
    b7 = _conv(net, b7, 192, (7, 1), "branch7x7_3", padding=(3, 0))
    bd = _conv(net, x, c7, 1, "branch7x7dbl_1")
    bd = _conv(net, bd, c7, (7, 1), "branch7x7dbl_2", padding=(3, 0))
    bd = _conv(net, bd, c7, (1, 7), "branch7x7dbl_3", padding=(0, 3))
    bd = _conv(net, bd, c7, (7, 1), "branch7x7dbl_4", padding=(3, 0))
    bd = _conv(net, bd, 192, (1, 7), "branch7x7dbl_5", padding=(0, 3))
    bp = net.avg_pool(x, 3, 1, 1, count_include_pad=True, name="branch_pool_avg")
    bp = _conv(net, bp, 192, 1, "branch_pool")
    return net.concat([b1, b7, bd, bp], name="concat")


def _inception_d(net: Net, x: Node) -> Node:
    b3 = _conv(net, x, 192, 1, "branch3x3_1")
    b3 = _conv(net, b3, 320, 3, "branch3x3_2", stride=2)
    b7 = _conv(net, x, 192, 1, "branch7x7x3_1")
    b7 = _conv(net, b7, 192, (1, 7), "branch7x7x3_2", padding=(0, 3))
    b7 = _conv(net, b7, 192, (7, 1), "branch7x7x3_3", padding=(3, 0))
    b7 = _conv(net, b7, 192, 3, "branch7x7x3_4", stride=2)
    bp = net.max_pool(x, 3, 2, name="branch_pool")
    return net.concat([b3, b7, bp], name="concat")


def _inception_e(net: Net, x: Node) -> Node:
    b1 = _conv(net, x, 320, 1, "branch1x1")
    b3 = _conv(net, x, 384, 1, "branch3x3_1")
    b3 = net.concat([_conv(net, b3, 384, (1, 3), "branch3x3_2a", padding=(0, 1)),
                     _conv(net, b3, 384, (3, 1), "branch3x3_2b", padding=(1, 0))],
                    name="branch3x3")
    bd = _conv(net, x, 448, 1, "branch3x3dbl_1")
    bd = _conv(net, bd, 384, 3, "branch3x3dbl_2", padding=1)
    bd = net.concat([_conv(net, bd, 384, (1, 3), "branch3x3dbl_3a", padding=(0, 1)),
                     _conv(net, bd, 384, (3, 1), "branch3x3dbl_3b", padding=(1, 0))],
                    name="branch3x3dbl")
    bp = net.avg_pool(x, 3, 1, 1, count_include_pad=True, name="branch_pool_avg")
    bp = _conv(net, bp, 192, 1, "branch_pool")
    return net.concat([b1, b3, bd, bp], name="concat")


def build(batch_size: int = 1, image_size: int | None = None,
          num_classes: int = NUM_CLASSES) -> Net:
    """Inception V3 definition. Arguments as for :func:`tvm_ios.models.net`."""
    size = image_size or DEFAULT_IMAGE_SIZE
    net, x = Net.image_model("inception_v3", batch_size, size, num_classes)
    x = _conv(net, x, 32, 3, "conv2d_1a_3x3", stride=2)
    x = _conv(net, x, 32, 3, "conv2d_2a_3x3")
    x = _conv(net, x, 64, 3, "conv2d_2b_3x3", padding=1)
    x = net.max_pool(x, 3, 2, name="maxpool1")
    x = _conv(net, x, 80, 1, "conv2d_3b_1x1")
    x = _conv(net, x, 192, 3, "conv2d_4a_3x3")
    x = net.max_pool(x, 3, 2, name="maxpool2")
    for name, pool_features in (("mixed_5b", 32), ("mixed_5c", 64), ("mixed_5d", 64)):
        with net.scope(name):
            x = _inception_a(net, x, pool_features)
    with net.scope("mixed_6a"):
        x = _inception_b(net, x)
    for name, c7 in (("mixed_6b", 128), ("mixed_6c", 160), ("mixed_6d", 160), ("mixed_6e", 192)):
        with net.scope(name):
            x = _inception_c(net, x, c7)
    with net.scope("mixed_7a"):
        x = _inception_d(net, x)
    for name in ("mixed_7b", "mixed_7c"):
        with net.scope(name):
            x = _inception_e(net, x)
    net.classifier_head(x, num_classes, name="fc")
    return net
