"""Instance splitting and redundant-edge elimination."""
from tvm_ios.graphturbo.instances import split_instances
from tvm_ios.graphturbo.tensor_regions import intersect
from tvm_ios.graphturbo.splitinfo import SGContext

from gt_dags import hw, layers  # noqa: F401  (fixtures)

SHAPE = (1, 4, 16, 16)
TALL = (1, 1, 64, 16)  # one channel: elementwise layers split H, not C


def test_elementwise_consumer_keeps_one_edge_per_instance(layers, hw):
    lg = layers([("a", "map", SHAPE, ["x"], {}), ("b", "map", SHAPE, ["a"], {})])
    split = split_instances(SGContext(lg, hw(2048)), [0b01, 0b10])
    assert [(s["dim"], s["factor"]) for s in split.splits] == [(1, 4), (1, 4)]  # Eq. 1: C
    assert split.inherited_edges == 16 and split.kept_edges == 4
    for inst in split.of_sg(1):
        assert inst.preds == [split.of_sg(0)[inst.k].id]


def test_conv_consumer_keeps_exactly_the_overlapping_parts(layers, hw):
    lg = layers([("a", "map", TALL, ["x"], {}), ("b", "conv", TALL, ["a"], {"k": 3})],
                input_shape=TALL)
    ctx = SGContext(lg, hw(2048))
    split = split_instances(ctx, [0b01, 0b10])
    assert split.kept_edges < split.inherited_edges
    widths = []
    for inst in split.of_sg(1):
        _, ext = ctx.regions(0b10, inst.box)
        need = ext["%0"]
        expected = [p.id for p in split.of_sg(0) if intersect(p.box, need)]
        assert inst.preds == expected
        widths.append(len(expected))
    assert max(widths) == 2  # the halo reaches a neighbouring part


def test_instance_boxes_tile_the_output(layers, hw):
    lg = layers([("a", "map", TALL, ["x"], {})], input_shape=TALL)
    split = split_instances(SGContext(lg, hw(2048)), [0b1])
    rows = [inst.box[2] for inst in split.instances]
    assert rows == [(0, 16), (16, 32), (32, 48), (48, 64)]
    assert all(inst.peak_bytes <= 2048 for inst in split.instances)
