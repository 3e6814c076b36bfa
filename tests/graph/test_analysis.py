"""Reachability, components, endings and width on hand-checkable DAGs."""
from tvm_ios.graph.analysis import (ancestors, components, descendants, is_ending,
                                    transition_bound, width)
from tvm_ios.graph.opgraph import OpGraph

DIAMOND = OpGraph.from_edges(4, [(0, 1), (0, 2), (1, 3), (2, 3)])


def test_ancestors_descendants():
    assert ancestors(DIAMOND) == [0, 0b1, 0b1, 0b111]
    assert descendants(DIAMOND) == [0b1110, 0b1000, 0b1000, 0]


def test_components():
    assert components(DIAMOND, 0b0110) == [0b0010, 0b0100]
    assert components(DIAMOND, 0b1110) == [0b1110]


def test_is_ending():
    assert is_ending(DIAMOND, 0b1111, 0b1000)
    assert is_ending(DIAMOND, 0b1111, 0b1100)
    assert not is_ending(DIAMOND, 0b1111, 0b0100)  # 2 -> 3 leaves the ending
    assert not is_ending(DIAMOND, 0b0111, 0b1000)  # not a subset


def test_width():
    assert width(DIAMOND) == 2
    assert width(OpGraph.from_edges(5, [])) == 5
    assert width(OpGraph.from_edges(4, [(0, 1), (1, 2), (2, 3)])) == 1
    # Inception-E-like: 1x1 | 3x3_1 -> (2a, 2b) | dbl_1 -> dbl_2 -> (3a, 3b) | pool -> conv
    edges = [(1, 2), (1, 3), (4, 5), (5, 6), (5, 7), (8, 9)]
    assert width(OpGraph.from_edges(10, edges)) == 6


def test_transition_bound_matches_thesis_table():
    # Table 3.1: Inception V3 (11, 6) 2.6e4; RandWire (33, 8) 3.7e9; SqueezeNet (6, 3) 2.2e2
    assert round(transition_bound(11, 6), -3) == 26000
    assert 3.6e9 < transition_bound(33, 8) < 3.8e9
    assert round(transition_bound(6, 3)) == 216
