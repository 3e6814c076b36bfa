"""The instances policy on hand-checkable graphs: binding, fine-grained waits, kept tensors."""
import pytest

from tvm_ios.graph.opgraph import OpGraph, OpNode
from tvm_ios.graphturbo.instances import Instance
from tvm_ios.kernels.instance_policy import chunk_order, instances_policy
from tvm_ios.kernels.roperator import estimate_roperators
from tvm_ios.kernels.interpreter import DependencyError, check_dependencies, simulate

BOX = ((0, 1), (0, 4), (0, 4), (0, 8))
SHAPE = (1, 4, 4, 8)  # 512 B of float32


def _graph(nodes, edges):
    """``nodes``: names (instance ``a0`` is sg a part 0); one op per instance, two for b."""
    ops = [OpNode(n, "conv2d", SHAPE, flops=1000, bytes=2048) for n in nodes]
    index = {n: i for i, n in enumerate(nodes)}
    return OpGraph(ops, [(index[u], index[v]) for u, v in edges], name="g")


@pytest.fixture
def halo():
    """SG a (2 parts) -> SG b (2 parts, each an op and its epilogue op): b0 reads a0 only,
    b1 reads a0 and a1 (a halo). Instances: a0=0, a1=1, b0=2, b1=3."""
    nodes = ["a0", "a1", "b0", "b0e", "b1", "b1e"]
    graph = _graph(nodes, [("a0", "b0"), ("a0", "b1"), ("a1", "b1"), ("b0", "b0e"),
                           ("b1", "b1e")])
    insts = [Instance(0, 0, 0, BOX, 512, 1024), Instance(1, 0, 1, BOX, 512, 1024),
             Instance(2, 1, 0, BOX, 512, 1024, [0]), Instance(3, 1, 1, BOX, 512, 1024, [0, 1])]
    of = {"a0": 0, "a1": 1, "b0": 2, "b0e": 2, "b1": 3, "b1e": 3}
    return graph, insts, of


def _programs(items):
    return [p for kind, p in items if kind == "program"]


def test_instances_run_in_parallel_and_wait_only_for_what_they_read(halo):
    graph, insts, of = halo
    rops = estimate_roperators(graph, "cpu")
    (program,) = _programs(instances_policy(graph, rops, insts, [0, 1, 2, 3], of, 2,
                                            external={"b0e", "b1e"}))
    assert program.num_veus == 2
    assert [t.op for t in program.prog[0] if t.kind == "compute"] == ["a0", "b0", "b0e"]
    assert [t.op for t in program.prog[1] if t.kind == "compute"] == ["a1", "b1", "b1e"]
    # b0 reads only a0 (same vEU): no barrier; b1 waits for a0's rTask alone
    barriers = [(v, t.waits) for v, ts in enumerate(program.prog) for t in ts
                if t.kind == "barrier"]
    assert barriers == [(1, ((0, 1),))]
    simulate(program)
    assert check_dependencies(program, [(graph.nodes[u].name, graph.nodes[v].name)
                                        for u, v in graph.edges]) == 5
    # a1 and b0, b1 (read by their epilogue on their vEU) stay; a0 is read by vEU 1 too
    assert program.meta["local_ops"] == {"a1": 1, "b0": 0, "b1": 1}
    assert program.meta["scopes"] == {"0": "GB", "1": "LB", "2": "GB", "3": "GB"}


def test_without_the_barrier_the_simulator_reports_the_dependency(halo):
    graph, insts, of = halo
    rops = estimate_roperators(graph, "cpu")
    (program,) = _programs(instances_policy(graph, rops, insts, [0, 1, 2, 3], of, 2))
    program.prog[1] = [t for t in program.prog[1] if t.kind != "barrier"]
    with pytest.raises(DependencyError, match="b1@"):
        check_dependencies(program, [("a0", "b1")])


def test_fast_memory_budget_spills_the_longest_lived(halo):
    graph, insts, of = halo
    rops = estimate_roperators(graph, "cpu")
    (program,) = _programs(instances_policy(graph, rops, insts, [0, 1, 2, 3], of, 2,
                                            external={"b0e", "b1e"}, fast_bytes=512))
    # vEU 1 would hold a1 and b1 at once when b1 runs: a1 lives longer and goes
    assert program.meta["local_ops"] == {"b0": 0, "b1": 1}


def test_external_outputs_are_never_kept(halo):
    graph, insts, of = halo
    rops = estimate_roperators(graph, "cpu")
    (program,) = _programs(instances_policy(graph, rops, insts, [0, 1, 2, 3], of, 2,
                                            external={"a1", "b0", "b1", "b0e", "b1e"}))
    assert program.meta["local_ops"] == {}


def test_chunks_follow_the_order_and_unschedulable_instances_run_between():
    nodes_of = {0: ["x"], 1: ["y", "z"], 2: ["w"], 3: ["v"]}
    assert chunk_order([0, 1, 2, 3], nodes_of, {2}, None) == [
        ("program", [(0, ["x"]), (1, ["y", "z"])]), ("own", 2), ("program", [(3, ["v"])])]
    # an instance that does not fit starts a new program; one too large is cut in pieces
    assert chunk_order([0, 1, 2, 3], nodes_of, set(), 2) == [
        ("program", [(0, ["x"])]), ("program", [(1, ["y", "z"])]),
        ("program", [(2, ["w"]), (3, ["v"])])]
    assert chunk_order([1, 0], nodes_of, set(), 1) == [
        ("program", [(1, ["y"])]), ("program", [(1, ["z"])]), ("program", [(0, ["x"])])]
