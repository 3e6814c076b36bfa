"""ResNeXt-29 16x64d for CIFAR (Xie et al., CVPR 2017), the ResNeXt benchmarked by Rammer.

Conv 3x3 (64) + ReLU, three stages of three bottleneck blocks with cardinality 16 and
bottleneck width 64 per group at the first stage (grouped 3x3 convs of 1024, 2048 and 4096
channels, ``groups=16``; outputs 256, 512, 1024; stride 2 at the start of stages 2 and 3),
global average pool (8x8 at the published 32x32 input) and a 1024 -> 10 classifier. Depth 29 =
3 stages x 3 blocks x 3 convs + stem + classifier. Projection shortcuts (1x1 conv) where the
channel count changes, as in the reference CIFAR implementation.

The paper reports 68.1M parameters; the definition has 68.1M (BatchNorm folded into biases).
"""
from __future__ import annotations

import logging

from .netdef import Net
from .resnet50 import bottleneck

logger = logging.getLogger(__name__)

__all__ = ["build", "DEFAULT_IMAGE_SIZE", "MIN_IMAGE_SIZE", "NUM_CLASSES"]

DEFAULT_IMAGE_SIZE = 32
MIN_IMAGE_SIZE = 1
NUM_CLASSES = 10
#: Xie et al. 2017, Table 7 (CIFAR-10, ResNeXt-29 16x64d): 68.1M parameters.
PUBLISHED_PARAMS = 68_100_000

CARDINALITY = 16
BASE_WIDTH = 64
_STAGES = ((256, 1), (512, 2), (1024, 2))
_BLOCKS = 3


def build(batch_size: int = 1, image_size: int | None = None,
          num_classes: int = NUM_CLASSES) -> Net:
    """ResNeXt-29 16x64d definition. Arguments as for :func:`tvm_ios.models.net`."""
    size = image_size or DEFAULT_IMAGE_SIZE
    net, x = Net.image_model("resnext29", batch_size, size, num_classes)
    x = net.conv(x, 64, 3, padding=1, relu=True, name="conv1")
    for stage, (out_ch, stride) in enumerate(_STAGES, start=1):
        # width per group doubles with the output channels: 64, 128, 256 -> 1024 ... 4096
        width = CARDINALITY * BASE_WIDTH * out_ch // 256
        for block in range(_BLOCKS):
            with net.scope(f"stage{stage}_{block}"):
                x = bottleneck(net, x, width, out_ch, stride if block == 0 else 1,
                               groups=CARDINALITY)
    net.classifier_head(x, num_classes, name="fc")
    return net
