"""Algorithm 2: each merge pattern, and each rule's refusal, on hand-made DAGs."""
from tvm_ios.graphturbo.grouping import group_subgraphs
from tvm_ios.graphturbo.splitinfo import SGContext

from gt_dags import hw, layers  # noqa: F401  (fixtures)

SMALL = (1, 4, 16, 16)   # 4 KB
BIG = (1, 4, 32, 32)     # 16 KB



def run(layers, hw, spec, lb, input_shape=SMALL):
    lg = layers(spec, input_shape=input_shape)
    result = group_subgraphs(SGContext(lg, hw(lb)))
    return lg, result


def test_straight_merge(layers, hw):
    spec = [("a", "map", SMALL, ["x"], {}), ("b", "map", SMALL, ["a"], {})]
    lg, result = run(layers, hw, spec, 1 << 20)
    assert result.sgs == [0b11]
    assert result.merges[0]["pattern"] == "straight"


def test_straight_refused_by_rule_i_at_a_down_sampling(layers, hw):
    # the conv needs 2 parts, the pool after it (stride 2) fits whole: f(b) < f(a)
    spec = [("a", "conv", BIG, ["x"], {"k": 3}), ("b", "pool", SMALL, ["a"], {"k": 3, "s": 2})]
    lg, result = run(layers, hw, spec, 24576, input_shape=BIG)
    assert result.sgs == [0b01, 0b10]
    assert {"pattern": "straight", "parts": [["a"], ["b"]], "reason": "rule (i)"} \
        in result.refusals


DIAMOND = [("e", "map", SMALL, ["x"], {}), ("p", "map", SMALL, ["e"], {}),
           ("q", "map", SMALL, ["e"], {}), ("j", "map", SMALL, ["p", "q"], {})]


def test_diamond_merge_then_straight_to_a_fixpoint(layers, hw):
    lg, result = run(layers, hw, DIAMOND, 1 << 20)
    assert result.merges[0] == {"pattern": "diamond", "parts": [["p"], ["q"], ["j"]],
                                "factor": 1}
    assert result.merges[1]["pattern"] == "straight"
    assert result.sgs == [0b1111] and result.rounds >= 2


def test_diamond_refused_by_rule_ii_and_branch_by_rule_i(layers, hw):
    # merged {p, q, j} holds e's output, p and q and j: 16 KB > 12 KB: factor 2 > 1
    lg, result = run(layers, hw, DIAMOND, 12288)
    assert len(result.sgs) == 4
    reasons = {(r["pattern"], r["reason"]) for r in result.refusals}
    assert ("diamond", "rule (ii)") in reasons and ("branch", "rule (i)") in reasons


def test_branch_merge(layers, hw):
    spec = [("a", "map", SMALL, ["x"], {}), ("b", "map", SMALL, ["x"], {}),
            ("c", "map", SMALL, ["a", "b"], {})]
    lg, result = run(layers, hw, spec, 1 << 20)
    assert result.merges[0]["pattern"] == "branch"
    assert result.merges[0]["parts"] == [["a"], ["c"]]
    assert result.sgs == [0b111]


def test_branch_refused_by_rule_i(layers, hw):
    # each pool reads 16 KB and needs 2 parts; their sum fits whole: f(c) < f(a)
    spec = [("a", "pool", SMALL, ["x"], {"k": 3, "s": 2}),
            ("b", "pool", SMALL, ["x"], {"k": 3, "s": 2}), ("c", "map", SMALL, ["a", "b"], {})]
    lg, result = run(layers, hw, spec, 16384, input_shape=BIG)
    assert len(result.sgs) == 3
    assert {"pattern": "branch", "parts": [["a"], ["c"]], "reason": "rule (i)"} \
        in result.refusals


def test_merge_that_would_create_a_cycle_is_invalid(layers, hw):
    # a -> b -> c and a -> c: {a, c} without b would cycle through b
    from tvm_ios.graphturbo.grouping import Grouper

    spec = [("a", "map", SMALL, ["x"], {}), ("b", "conv", SMALL, ["a"], {"k": 1}),
            ("c", "map", SMALL, ["a", "b"], {})]
    grouper = Grouper(SGContext(layers(spec), hw(1 << 20)))
    assert grouper.valid(0b101) == "cycle"
    assert grouper.valid(0b111) is None
