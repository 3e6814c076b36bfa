"""SynthNet (Shisha paper, Section 7.1): AlexNet's convolutions repeated to 18 layers.

AlexNet's five convolutions as in torchvision (11x11/4 -> 64, max pool 3/2, 5x5 -> 192,
max pool 3/2, 3x3 -> 384, 3x3 -> 256, 3x3 -> 256) on a 224x224 input, then the same five
kernel sizes and widths again, stride 1 with 'same' padding on the 13x13 map, until there
are 18 convolutions (5 + 5 + 5 + 3), then, like the other zoo models, global average pooling
and a classifier. Every convolution's work matches one of AlexNet's, which is what the paper
wants from it: a net with the compute of a real CNN that runs on many EPs.
"""
from __future__ import annotations

import logging

from .netdef import Net

logger = logging.getLogger(__name__)

__all__ = ["build", "DEFAULT_IMAGE_SIZE", "MIN_IMAGE_SIZE", "NUM_CLASSES", "PUBLISHED_PARAMS",
           "NUM_CONVS"]

DEFAULT_IMAGE_SIZE = 224
MIN_IMAGE_SIZE = 63
NUM_CLASSES = 1000
NUM_CONVS = 18
#: Our own count of the definition below (no reference implementation exists).
PUBLISHED_PARAMS = 14_666_408

#: (output channels, kernel) of AlexNet's convolutions.
_ALEXNET = ((64, 11), (192, 5), (384, 3), (256, 3), (256, 3))


def build(batch_size: int = 1, image_size: int | None = None,
          num_classes: int = NUM_CLASSES) -> Net:
    """SynthNet definition (18 convolutions, two max pools, a classifier). Arguments as for
    :func:`tvm_ios.models.net`."""
    size = image_size or DEFAULT_IMAGE_SIZE
    net, x = Net.image_model("synthnet", batch_size, size, num_classes, conv_layers=NUM_CONVS)
    x = net.conv(x, 64, 11, stride=4, padding=2, relu=True, name="conv1")
    x = net.max_pool(x, 3, 2, name="pool1")
    x = net.conv(x, 192, 5, padding=2, relu=True, name="conv2")
    x = net.max_pool(x, 3, 2, name="pool2")
    for i in range(2, NUM_CONVS):
        channels, kernel = _ALEXNET[i % len(_ALEXNET)]
        x = net.conv(x, channels, kernel, relu=True, name=f"conv{i + 1}")
    net.classifier_head(x, num_classes, name="fc")
    return net
