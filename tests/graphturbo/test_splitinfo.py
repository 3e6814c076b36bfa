"""SplitInfo (Algorithm 1), Equation (1) and the recompute check on hand-made layers."""
from tvm_ios.graphturbo.splitinfo import SGContext, SplitEntry, best_split, partition

from gt_dags import hw, layers  # noqa: F401  (fixtures)

SHAPE = (1, 4, 16, 16)  # 4 KB in float32


def test_peak_of_one_layer_is_input_plus_output(layers, hw):
    lg = layers([("c", "conv", SHAPE, ["x"], {"k": 1})])
    assert SGContext(lg, hw(1 << 20)).peak(1) == 8192


def test_split_factor_is_the_smallest_that_fits(layers, hw):
    # 8 KB of activations, 2 KB of LB: a 1x1 conv splits H (or W) by 4; N (=1) cannot split
    lg = layers([("c", "conv", SHAPE, ["x"], {"k": 1})])
    info = SGContext(lg, hw(2048)).split_info(1)
    assert info == [SplitEntry(2, 4, 1), SplitEntry(3, 4, 1)]
    assert best_split(info) == SplitEntry(2, 4, 1)


def test_halos_raise_the_split_factor(layers, hw):
    # a 3x3 conv's instance of 4 rows reads 6 input rows: 2.5 KB > 2 KB, so 8 parts
    lg = layers([("c", "conv", SHAPE, ["x"], {"k": 3})])
    assert best_split(SGContext(lg, hw(2048)).split_info(1)) == SplitEntry(2, 8, 1)


def test_equation_1_prefers_more_ops_then_smaller_factor_then_outer_dim():
    entries = [SplitEntry(2, 4, 3), SplitEntry(0, 2, 3), SplitEntry(3, 2, 5)]
    assert best_split(entries) == SplitEntry(3, 2, 5)
    assert best_split(entries[:2]) == SplitEntry(0, 2, 3)
    assert best_split([SplitEntry(3, 2, 3), SplitEntry(2, 2, 3)]) == SplitEntry(2, 2, 3)
    assert best_split([]) is None


def test_recompute_check_refuses_when_halo_compute_costs_more_than_it_saves(layers, hw):
    spec = [("c1", "conv", SHAPE, ["x"], {"k": 3}), ("c2", "conv", SHAPE, ["c1"], {"k": 3})]
    slow = SGContext(layers(spec), hw(4096, peak_gflops=1e-3))
    assert slow.split_info(0b11) == []
    assert slow.refusals and slow.refusals[0]["recompute_flops"] > 0
    fast = SGContext(layers(spec), hw(4096, peak_gflops=1e9))
    assert best_split(fast.split_info(0b11)) == SplitEntry(2, 8, 2)


def test_partition_cuts_equal_parts():
    assert partition((2, 3, 4, 4), 0, 2) == [((0, 1), (0, 3), (0, 4), (0, 4)),
                                             ((1, 2), (0, 3), (0, 4), (0, 4))]
