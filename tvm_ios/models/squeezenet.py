"""SqueezeNet 1.1 (Iandola et al. 2016; the torchvision ``squeezenet1_1`` layout).

Conv 3x3/2 (64) + ReLU, max pool 3/2 (ceil mode), two Fire modules, max pool, two Fire modules,
max pool, four Fire modules, then the convolutional classifier (1x1 conv to the classes + ReLU),
global average pool and flatten. A Fire module is a 1x1 "squeeze" conv followed by parallel
1x1 and 3x3 "expand" convs whose outputs are concatenated, all with ReLU.

SqueezeNet has no BatchNorm, so the parameter count is exactly torchvision's 1,235,496.
Published size 224x224; the smallest usable input is 17x17.
"""
from __future__ import annotations

import logging

from .netdef import Net, Node

logger = logging.getLogger(__name__)

__all__ = ["build", "DEFAULT_IMAGE_SIZE", "MIN_IMAGE_SIZE", "NUM_CLASSES"]

DEFAULT_IMAGE_SIZE = 224
MIN_IMAGE_SIZE = 17
NUM_CLASSES = 1000
#: torchvision ``squeezenet1_1``: 1,235,496 parameters.
PUBLISHED_PARAMS = 1_235_496

#: (name, squeeze, expand1x1, expand3x3) of the Fire modules, with max pools between groups.
_LAYOUT = (
    ("pool", None, None, None),
    ("fire2", 16, 64, 64),
    ("fire3", 16, 64, 64),
    ("pool", None, None, None),
    ("fire4", 32, 128, 128),
    ("fire5", 32, 128, 128),
    ("pool", None, None, None),
    ("fire6", 48, 192, 192),
    ("fire7", 48, 192, 192),
    ("fire8", 64, 256, 256),
    ("fire9", 64, 256, 256),
)


def fire(net: Net, x: Node, squeeze: int, expand1x1: int, expand3x3: int) -> Node:
    """One Fire module (call inside a ``net.scope``).

    Parameters
    ----------
    net : Net
        The net under construction.
    x : Node
        Input.
    squeeze, expand1x1, expand3x3 : int
        Output channels of the squeeze conv and of the two expand convs.

    Returns
    -------
    Node
        The concatenation of the two expand branches.
    """
    s = net.conv(x, squeeze, 1, relu=True, name="squeeze")
    e1 = net.conv(s, expand1x1, 1, relu=True, name="expand1x1")
    e3 = net.conv(s, expand3x3, 3, padding=1, relu=True, name="expand3x3")
    return net.concat([e1, e3], name="concat")


def build(batch_size: int = 1, image_size: int | None = None,
          num_classes: int = NUM_CLASSES) -> Net:
    """SqueezeNet 1.1 definition. Arguments as for :func:`tvm_ios.models.net`."""
    size = image_size or DEFAULT_IMAGE_SIZE
    net, x = Net.image_model("squeezenet", batch_size, size, num_classes)
    x = net.conv(x, 64, 3, stride=2, padding=0, relu=True, name="conv1")
    pools = 0
    for name, squeeze, e1, e3 in _LAYOUT:
        if name == "pool":
            pools += 1
            x = net.max_pool(x, 3, 2, ceil_mode=True, name=f"maxpool{pools}")
            continue
        with net.scope(name):
            x = fire(net, x, squeeze, e1, e3)
    x = net.conv(x, num_classes, 1, relu=True, name="classifier_conv")
    x = net.global_avg_pool(x, name="avgpool")
    net.output(net.flatten(x, name="flatten"))
    return net
