"""NASNet-A Large, 6@4032 (Zoph et al., CVPR 2018), the NASNet benchmarked by IOS.

Layout of the TF-slim / ``pretrainedmodels`` ``nasnetalarge``: stem conv 3x3/2 (96, no
activation), two reduction-like stem cells, then 3 stages of 6 cells (a *first* cell whose
previous-previous input is at twice the resolution, then 5 normal cells) separated by 2
reduction cells; ReLU, global average pool and a 4032 -> 1000 classifier (no aux head).

Every cell takes two inputs, the previous cell ``x`` and the one before ``x_prev``, adjusted by
ReLU + 1x1 conv, or by a *factorized reduction* when ``x_prev`` is at twice the resolution
(ReLU, then two stride-2 1x1 convs, the second on the input shifted by one pixel, concatenated).
Cells combine pairs of operations by addition ("comb_iter" k) and concatenate the results:
separable branches are two "relu-sepconv" units (ReLU, depthwise kxk + pointwise 1x1), pools are
3x3 max / average (padding excluded from the average).

Differences from the TF graph, none of which change shapes or operator counts: symmetric
"same" padding instead of TF's asymmetric SAME for stride-2 windows; the 1x1 average pool of
the factorized-reduction paths is folded into the stride of their 1x1 conv; folded BatchNorm.
IOS's own definition simplifies the cells (it drops ``x_left`` from the normal-cell concat and
uses no pixel shift); this one follows the published architecture.

Published size 331x331 (88.9M parameters; 88.74M here); every feature map stays non-empty
down to 3x3 inputs.
"""
from __future__ import annotations

import logging

from .netdef import Net, Node

logger = logging.getLogger(__name__)

__all__ = ["build", "DEFAULT_IMAGE_SIZE", "MIN_IMAGE_SIZE", "NUM_CLASSES"]

DEFAULT_IMAGE_SIZE = 331
MIN_IMAGE_SIZE = 3
NUM_CLASSES = 1000
#: Zoph et al. 2018, Table 2 (NASNet-A (6 @ 4032)): 88.9M parameters.
PUBLISHED_PARAMS = 88_900_000
CELLS_PER_STAGE = 6


def _branch_sep(net: Net, x: Node, out_ch: int, k: int, stride: int, name: str,
                stem: bool = False) -> Node:
    """Two relu-sepconv units; the first has the stride (and, in stem cells, changes width)."""
    mid = out_ch if stem else x.channels
    y = net.sepconv(net.relu(x, name=f"{name}_relu1"), mid, k, stride, name=f"{name}_sep1")
    return net.sepconv(net.relu(y, name=f"{name}_relu2"), out_ch, k, 1, name=f"{name}_sep2")


def _relu_conv(net: Net, x: Node, out_ch: int, name: str) -> Node:
    return net.conv(net.relu(x, name=f"{name}_relu"), out_ch, 1, name=name)


def _factorized_reduce(net: Net, x: Node, out_ch: int, name: str) -> Node:
    r = net.relu(x, name=f"{name}_relu")
    p1 = net.conv(r, out_ch // 2, 1, stride=2, name=f"{name}_path1")
    p2 = net.conv(net.shift(r, 1, 1, name=f"{name}_shift"), out_ch // 2, 1, stride=2,
                  name=f"{name}_path2")
    return net.concat([p1, p2], name=name)


def _max(net: Net, x: Node, stride: int, name: str) -> Node:
    return net.max_pool(x, 3, stride, 1, name=name)


def _avg(net: Net, x: Node, stride: int, name: str) -> Node:
    return net.avg_pool(x, 3, stride, 1, count_include_pad=False, name=name)


def _reduction(net: Net, left: Node, right: Node, stem_in: Node | None, ch: int) -> Node:
    """Reduction-cell body on adjusted inputs; ``stem_in`` replaces ``left`` in stem cell 0."""
    wide = stem_in if stem_in is not None else left
    stem = stem_in is not None
    c0 = net.add([_branch_sep(net, right, ch, 5, 2, "comb_iter_0_left"),
                  _branch_sep(net, wide, ch, 7, 2, "comb_iter_0_right", stem)], name="comb_iter_0")
    c1 = net.add([_max(net, right, 2, "comb_iter_1_left"),
                  _branch_sep(net, wide, ch, 7, 2, "comb_iter_1_right", stem)], name="comb_iter_1")
    c2 = net.add([_avg(net, right, 2, "comb_iter_2_left"),
                  _branch_sep(net, wide, ch, 5, 2, "comb_iter_2_right", stem)], name="comb_iter_2")
    c3 = net.add([_avg(net, c0, 1, "comb_iter_3_right"), c1], name="comb_iter_3")
    c4 = net.add([_branch_sep(net, c0, ch, 3, 1, "comb_iter_4_left"),
                  _max(net, right, 2, "comb_iter_4_right")], name="comb_iter_4")
    return net.concat([c1, c2, c3, c4], name="concat")


def _normal(net: Net, left: Node, right: Node, ch_left: int, ch_right: int) -> Node:
    """Normal-cell body on adjusted inputs (``left`` from x_prev, ``right`` from x)."""
    c0 = net.add([_branch_sep(net, right, ch_right, 5, 1, "comb_iter_0_left"),
                  _branch_sep(net, left, ch_left, 3, 1, "comb_iter_0_right")], name="comb_iter_0")
    c1 = net.add([_branch_sep(net, left, ch_left, 5, 1, "comb_iter_1_left"),
                  _branch_sep(net, left, ch_left, 3, 1, "comb_iter_1_right")], name="comb_iter_1")
    c2 = net.add([_avg(net, right, 1, "comb_iter_2_left"), left], name="comb_iter_2")
    c3 = net.add([_avg(net, left, 1, "comb_iter_3_left"),
                  _avg(net, left, 1, "comb_iter_3_right")], name="comb_iter_3")
    c4 = net.add([_branch_sep(net, right, ch_right, 3, 1, "comb_iter_4_left"), right],
                 name="comb_iter_4")
    return net.concat([left, c0, c1, c2, c3, c4], name="concat")


def build(batch_size: int = 1, image_size: int | None = None, num_classes: int = NUM_CLASSES,
          stem_filters: int = 96, penultimate_filters: int = 4032) -> Net:
    """NASNet-A Large definition (``N @ penultimate_filters`` with N = 6). Arguments as for
    :func:`tvm_ios.models.net`."""
    size = image_size or DEFAULT_IMAGE_SIZE
    f = penultimate_filters // 24
    net, x = Net.image_model("nasnet_a", batch_size, size, num_classes)
    conv0 = net.conv(x, stem_filters, 3, stride=2, padding=0, name="conv0")
    with net.scope("cell_stem_0"):
        x1 = _relu_conv(net, conv0, f // 4, "conv_1x1")
        stem0 = _reduction(net, x1, x1, conv0, f // 4)
    with net.scope("cell_stem_1"):
        left = _relu_conv(net, stem0, f // 2, "conv_1x1")
        right = _factorized_reduce(net, conv0, f // 2, "path")
        stem1 = _reduction(net, right, left, None, f // 2)
    outputs, cur, cell = [stem0, stem1], stem1, 0
    for stage, mult in enumerate((1, 2, 4)):
        skip = outputs[-2]
        if stage:
            with net.scope(f"reduction_cell_{stage - 1}"):
                cur = _reduction(net, _relu_conv(net, outputs[-2], mult * f, "conv_prev_1x1"),
                                 _relu_conv(net, cur, mult * f, "conv_1x1"), None, mult * f)
            outputs.append(cur)
        for i in range(CELLS_PER_STAGE):
            with net.scope(f"cell_{cell}"):
                right = _relu_conv(net, cur, mult * f, "conv_1x1")
                if i == 0:  # x_prev is at twice the resolution of x
                    left = _factorized_reduce(net, skip, mult * f, "path")
                    cur = _normal(net, left, right, mult * f, mult * f)
                else:
                    left = _relu_conv(net, outputs[-2], mult * f, "conv_prev_1x1")
                    cur = _normal(net, left, right, mult * f, mult * f)
            outputs.append(cur)
            cell += 1
    x = net.relu(cur, name="relu")
    net.classifier_head(x, num_classes, name="last_linear")
    return net
