"""YOLOv3's 52 convolution layers: the Darknet-53 backbone (Redmon & Farhadi, 2018).

Conv 3x3 (32), then five stages, each a stride-2 conv 3x3 followed by 1, 2, 8, 8 and 4
residual blocks (conv 1x1 halving the channels, conv 3x3 restoring them, residual add):
1 + (1+2) + (1+4) + (1+16) + (1+16) + (1+8) = 52 convolutions, the layers the Shisha paper
pipelines. The detection heads are left out; like the other zoo models (and Darknet-53 as
an ImageNet classifier) it ends in global average pooling and a 1024 -> 1000 classifier.
Darknet's leaky ReLU is written as ReLU (the zoo has no leaky activation; the cost is the
same elementwise epilogue). Published size 416x416; the input must be a multiple of 32.
"""
from __future__ import annotations

import logging

from .netdef import Net

logger = logging.getLogger(__name__)

__all__ = ["build", "DEFAULT_IMAGE_SIZE", "MIN_IMAGE_SIZE", "NUM_CLASSES", "PUBLISHED_PARAMS"]

DEFAULT_IMAGE_SIZE = 416
MIN_IMAGE_SIZE = 32
NUM_CLASSES = 1000
#: Our own count of the definition below (52 convolutions with BatchNorm folded into a bias,
#: 40,567,072, plus the 1,025,000 of the classifier); Darknet-53 is quoted as 41.6M.
PUBLISHED_PARAMS = 41_592_072

_STAGES = ((64, 1), (128, 2), (256, 8), (512, 8), (1024, 4))


def build(batch_size: int = 1, image_size: int | None = None,
          num_classes: int = NUM_CLASSES) -> Net:
    """The 52-convolution Darknet-53 backbone of YOLOv3. Arguments as for
    :func:`tvm_ios.models.net`."""
    size = image_size or DEFAULT_IMAGE_SIZE
    net, x = Net.image_model("yolov3", batch_size, size, num_classes, conv_layers=52)
    x = net.conv(x, 32, 3, relu=True, name="conv0")
    for stage, (channels, blocks) in enumerate(_STAGES, start=1):
        with net.scope(f"stage{stage}"):
            x = net.conv(x, channels, 3, stride=2, padding=1, relu=True, name="down")
            for block in range(blocks):
                with net.scope(f"block{block}"):
                    y = net.conv(x, channels // 2, 1, relu=True, name="conv1")
                    y = net.conv(y, channels, 3, relu=True, name="conv2")
                    x = net.add([x, y], name="add")
    net.classifier_head(x, num_classes, name="fc")
    return net
