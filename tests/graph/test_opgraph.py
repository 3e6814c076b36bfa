"""OpGraph construction, ordering, serialisation and errors."""
import pytest

from tvm_ios.graph.opgraph import OpGraph, OpNode


def test_from_edges_renumbers_topologically():
    graph = OpGraph.from_edges(3, [(2, 0), (0, 1)], names=["a", "b", "c"])
    assert [n.name for n in graph.nodes] == ["c", "a", "b"]
    assert graph.edges == [(0, 1), (1, 2)]
    assert graph.pred[2] == 0b010 and graph.succ[0] == 0b010


def test_cycle_and_bad_edges_rejected():
    with pytest.raises(ValueError, match="cycle"):
        OpGraph.from_edges(2, [(0, 1), (1, 0)])
    with pytest.raises(ValueError, match="out of range"):
        OpGraph.from_edges(2, [(0, 5)])
    with pytest.raises(ValueError, match="backwards"):
        OpGraph([OpNode("a"), OpNode("b")], [(1, 0)])
    with pytest.raises(ValueError, match="unique"):
        OpGraph([OpNode("a"), OpNode("a")], [])


def test_json_roundtrip_and_fingerprint():
    graph = OpGraph.from_edges(4, [(0, 1), (0, 2), (1, 3), (2, 3)], kind="conv2d")
    again = OpGraph.from_json(graph.to_json())
    assert again == graph and again.fingerprint() == graph.fingerprint()
    other = OpGraph.from_edges(4, [(0, 1), (0, 2), (1, 3)], kind="conv2d")
    assert other.fingerprint() != graph.fingerprint()


def test_subgraph_and_names():
    graph = OpGraph.from_edges(4, [(0, 1), (1, 2), (2, 3)])
    sub = graph.subgraph(0b0110)
    assert [n.name for n in sub.nodes] == ["op1", "op2"] and sub.edges == [(0, 1)]
    assert graph.names_of(0b1001) == ["op0", "op3"]
    assert "op3" in str(graph)
