"""Regions: halos of convolutions and pools, broadcasts of elementwise ops."""
from tvm_ios.graphturbo.tensor_regions import BindInfo, input_box, supports, window_range


def test_window_range_interior_and_borders():
    # 3x3, stride 1, pad 1 on 8 rows: rows [2, 4) need input [1, 5), no padding
    assert window_range(2, 4, 3, 1, 1, 1, 8) == (1, 5, 0, 0)
    # first rows: the clipped row becomes padding
    assert window_range(0, 2, 3, 1, 1, 1, 8) == (0, 3, 1, 0)
    # last rows of a stride-2 7x7 conv, pad 3, 16 -> 8 rows: row 7 reads input rows 11..17,
    # so two of the three bottom padding rows are used
    assert window_range(6, 8, 7, 2, 3, 1, 16) == (9, 16, 0, 2)


def test_conv_input_box_keeps_channels_whole():
    info = BindInfo(0, "window", (1, 8, 8, 8), [((0, -1), "param:x", (1, 4, 16, 16))],
                    {"kernel": [3, 3], "strides": [2, 2], "padding": [1, 1, 1, 1],
                     "dilation": [1, 1]})
    box = input_box(info, (1, 4, 16, 16), ((0, 1), (0, 8), (0, 4), (0, 8)))
    assert box == ((0, 1), (0, 4), (0, 8), (0, 16))
    assert supports(info, 2) and not supports(info, 1)


def test_map_broadcast_operand_stays_whole():
    info = BindInfo(0, "map", (2, 8, 4, 4), [((0, -1), "%1", (2, 8, 4, 4)),
                                             ((1, -1), "%2", (1, 8, 1, 1))])
    out = ((0, 1), (0, 8), (2, 4), (0, 4))
    assert input_box(info, (2, 8, 4, 4), out) == out
    assert input_box(info, (1, 8, 1, 1), out) == ((0, 1), (0, 8), (0, 1), (0, 1))
    assert supports(info, 0) and supports(info, 1)
