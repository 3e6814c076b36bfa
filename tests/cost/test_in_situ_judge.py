"""Each concurrent stage priced inside the model, from two builds' call traces."""
import pytest

from tvm_ios.cost.in_situ_judge import call_medians, in_situ_keep, stage_blocks

BC, EF = ["b", "c"], ["e", "f"]
STAGES = {"rp_bc": frozenset(BC), "rp_ef": frozenset(EF)}


def _trace(calls, scale=1.0):
    return [(name, us * 1e-6 * scale) for name, us in calls]


#   the build with both stages as rPrograms, and the build with their ops in turn: the same
#   kernels around them (a, d, g), 10 us each
CONCURRENT = [("a", 10), ("rp_bc", 30), ("d", 10), ("rp_ef", 50), ("g", 10)]
IN_TURN = [("a", 10), ("k_b", 20), ("k_c", 20), ("d", 10), ("k_e", 20), ("k_f", 20),
           ("g", 10)]


def test_medians_per_call_and_mismatched_traces_refused():
    names, secs = call_medians([_trace(CONCURRENT, s) for s in (1.0, 3.0, 2.0)])
    assert names == [n for n, _ in CONCURRENT]
    assert secs == pytest.approx([2 * us * 1e-6 for _, us in CONCURRENT])
    with pytest.raises(ValueError, match="different kernels"):
        call_medians([_trace(CONCURRENT), _trace(IN_TURN)])


def test_each_rprogram_against_the_in_turn_kernels_of_its_ops():
    blocks = stage_blocks([_trace(CONCURRENT)] * 3, [_trace(IN_TURN)] * 3, STAGES)
    assert [b["stages"] for b in blocks] == [[BC], [EF]]
    assert [(b["rprogram_us"], b["in_turn_us"], b["gain_us"]) for b in blocks] == \
        [(30.0, 40.0, 10.0), (50.0, 40.0, -10.0)]
    assert [b["calls"] for b in blocks] == [[1, 2], [1, 2]]
    # b/c gains in the model, e/f loses there: only b/c is kept
    assert in_situ_keep(blocks, [("e", "f"), ("b", "c")]) == {("b", "c")}


def test_neighbours_fused_otherwise_count_with_the_stage():
    # in turn, d is fused into the kernel of f (one call "k_fd"), so the in-turn side's
    # block runs from e to that kernel, and the concurrent side's from rp_ef through d
    concurrent = [("a", 10), ("rp_bc", 30), ("rp_ef", 35), ("d", 10), ("g", 10)]
    in_turn = [("a", 10), ("k_b", 20), ("k_c", 20), ("k_e", 20), ("k_fd", 25), ("g", 10)]
    blocks = stage_blocks([_trace(concurrent)], [_trace(in_turn)], STAGES)
    assert len(blocks) == 1 and blocks[0]["stages"] == [BC, EF]
    assert blocks[0]["rprogram_us"] == 75.0 and blocks[0]["in_turn_us"] == 85.0
    assert in_situ_keep(blocks, [("b", "c"), ("e", "f")]) == {("b", "c"), ("e", "f")}


def test_blocks_without_an_rprogram_are_left_out():
    # the builds differ also where no stage is (x1 against x2): not a stage's block
    concurrent = [("a", 10), ("x1", 5), ("d", 10), ("rp_bc", 30), ("g", 10)]
    in_turn = [("a", 10), ("x2", 50), ("d", 10), ("k_b", 20), ("k_c", 20), ("g", 10)]
    blocks = stage_blocks([_trace(concurrent)], [_trace(in_turn)], STAGES)
    assert [(b["stages"], b["rprogram_us"], b["in_turn_us"]) for b in blocks] == \
        [([BC], 30.0, 40.0)]


def test_an_rprogram_with_glue_ops_still_names_its_stage():
    stages = {"rp_bc": frozenset({"b", "c", "lv3_glue"}), "rp_ef": frozenset(EF)}
    blocks = stage_blocks([_trace(CONCURRENT)], [_trace(IN_TURN)], stages)
    assert blocks[0]["stages"] == [["b", "c", "lv3_glue"]]
    assert in_situ_keep(blocks, [("e", "f"), ("c", "b")]) == {("c", "b")}
