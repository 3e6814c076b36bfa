"""Wavefront and IOS policies on random DAGs: no deadlock, dependencies kept, vEU sets."""
import random

import pytest

from tvm_ios.cost.analytical import AnalyticalCostModel
from tvm_ios.graph.opgraph import OpGraph
from tvm_ios.kernels.policies import ios_policy, wavefront_policy, waves
from tvm_ios.kernels.roperator import SLICE_EFFICIENCY, SLICES, RKernel, ROperator, \
    estimate_roperators
from tvm_ios.kernels.interpreter import check_dependencies, simulate
from tvm_ios.kernels.vdevice import VDEVICES, ResidencyError, cpu_vdevice
from tvm_ios.schedule.ios import ios_schedule
from tvm_ios.schedule.schedule import Schedule, Stage


def random_graph(seed, n=12, p=0.25):
    rng = random.Random(seed)
    edges = [(u, v) for v in range(n) for u in range(v) if rng.random() < p]
    graph = OpGraph.from_edges(n, edges)
    for node in graph.nodes:
        node.shape = (1, 32, 14, 14)
        node.flops = rng.randint(1, 40) * 10 ** 6
        node.bytes = 100_000
    return graph


def _edges(graph):
    return [(graph.nodes[u].name, graph.nodes[v].name) for u, v in graph.edges]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("device", ["h100", "cpu"])
def test_wavefront_programs_are_sound(seed, device):
    graph = random_graph(seed, n=10)
    vdev = VDEVICES["h100"] if device == "h100" else cpu_vdevice(4)
    programs = wavefront_policy(graph, estimate_roperators(graph, device), vdev)
    covered = [op for p in programs for op in p.ops]
    assert sorted(covered) == sorted(n.name for n in graph.nodes)
    for program in programs:
        assert simulate(program).makespan_us > 0
        check_dependencies(program, _edges(graph))


@pytest.mark.parametrize("seed", range(3))
def test_wavefront_programs_bounded_by_max_ops(seed):
    graph = random_graph(seed, n=24, p=0.1)
    rops = estimate_roperators(graph, "h100")
    widest = max(len(w) for w in waves(graph))
    programs = wavefront_policy(graph, rops, VDEVICES["h100"], max_ops=max(4, widest))
    assert len(programs) > 1
    assert all(len(p.ops) <= max(4, widest) for p in programs)
    assert sorted(op for p in programs for op in p.ops) == sorted(n.name for n in graph.nodes)
    for program in programs:
        check_dependencies(program, _edges(graph))


@pytest.mark.parametrize("seed", range(4))
def test_ios_policy_uses_disjoint_veu_sets(seed):
    graph = random_graph(seed)
    schedule = ios_schedule(graph, AnalyticalCostModel("h100"), strategy="parallel")
    rops = estimate_roperators(graph, "h100")
    pairs = ios_policy(graph, schedule, rops, VDEVICES["h100"], num_veus=64)
    assert pairs, "random graphs of this density have concurrent stages"
    for si, program in pairs:
        sets = program.meta["veu_sets"]
        flat = [v for s in sets for v in s]
        assert len(flat) == len(set(flat)) <= 64
        for group, veus in zip(schedule.stages[si].groups, sets):
            for op in group:
                assert {v for v, _ in program.positions(op)} <= set(veus)
        simulate(program)
        check_dependencies(program, _edges(graph))


def test_waves_are_bfs_fringes():
    graph = OpGraph.from_edges(4, [(0, 2), (1, 2), (2, 3), (0, 3)])
    assert waves(graph) == [[0, 1], [2], [3]]


def test_kernel_selection_fastest_when_it_fits_else_efficient():
    graph = OpGraph.from_edges(2, [])
    fast = RKernel("fast", 8, 64, task_us=1.0)
    slow = RKernel("big", 2, 64, task_us=3.0)
    rops = {n.name: ROperator(n.name, [fast, slow]) for n in graph.nodes}
    small = wavefront_policy(graph, rops, VDEVICES["h100"], num_veus=16)[0]
    assert {t.kernel for ts in small.prog for t in ts} == {"fast"}  # 16 rTasks fit 16 vEUs
    tight = wavefront_policy(graph, rops, VDEVICES["h100"], num_veus=4)[0]
    assert {t.kernel for ts in tight.prog for t in ts} == {"big"}  # 3 us vs 4 waves of 1 us
    assert simulate(tight).makespan_us == pytest.approx(3.0)


def test_requested_veus_checked_against_residency():
    graph = random_graph(0, n=4)
    with pytest.raises(ResidencyError, match="resident vEUs"):
        wavefront_policy(graph, estimate_roperators(graph, "h100"), VDEVICES["h100"],
                         num_veus=10 ** 5)


def _cpu_rops(graph, serial_us: dict, sliced: bool = True) -> dict:
    rops = {}
    for name, us in serial_us.items():
        kernels = [RKernel("whole", 1, 1, us)]
        if sliced:
            kernels.append(RKernel(SLICES, 2, 1, us / 2 / SLICE_EFFICIENCY))
        rops[name] = ROperator(name, kernels)
    return rops


def test_ios_policy_cuts_the_op_that_dominates_a_cpu_stage_into_slices():
    graph = OpGraph.from_edges(3, [(0, 1)], names=["a", "b", "c"])  # a -> b, and c
    schedule = Schedule([Stage([["a", "b"], ["c"]])])
    rops = _cpu_rops(graph, {"a": 100.0, "b": 100.0, "c": 20.0})
    ((_, program),) = ios_policy(graph, schedule, rops, cpu_vdevice(2), num_veus=2,
                                 balance=True)
    # groups on their own vEUs take 200 us; every op cut in two: 3 x (share / 0.9) = 122 us
    assert program.meta["placement"] == "balanced"
    assert str(program).splitlines()[1:] == ["  vEU   0: a[0] wait(1>=1) b[0] c[0]",
                                             "  vEU   1: a[1] wait(0>=1) b[1] c[1]"]
    assert simulate(program).makespan_us == pytest.approx(220.0 / 2 / SLICE_EFFICIENCY)
    check_dependencies(program, [("a", "b")])


def test_ios_policy_keeps_groups_whole_when_they_balance():
    graph = OpGraph.from_edges(2, [], names=["a", "b"])
    schedule = Schedule([Stage([["a"], ["b"]])])
    rops = _cpu_rops(graph, {"a": 100.0, "b": 100.0})
    ((_, program),) = ios_policy(graph, schedule, rops, cpu_vdevice(2), num_veus=2,
                                 balance=True)
    assert program.meta["placement"] == "groups"
    assert {t.kernel for ts in program.prog for t in ts} == {"whole"}
    unsliced = _cpu_rops(graph, {"a": 300.0, "b": 20.0}, sliced=False)
    ((_, program),) = ios_policy(graph, schedule, unsliced, cpu_vdevice(2), num_veus=2,
                                 balance=True)
    assert {t.kernel for ts in program.prog for t in ts} == {"whole"}  # nothing to cut


def test_ios_policy_balances_only_on_request():
    graph = OpGraph.from_edges(3, [(0, 1)], names=["a", "b", "c"])
    schedule = Schedule([Stage([["a", "b"], ["c"]])])
    rops = _cpu_rops(graph, {"a": 100.0, "b": 100.0, "c": 20.0})
    ((_, program),) = ios_policy(graph, schedule, rops, cpu_vdevice(2), num_veus=2)
    assert program.meta["placement"] == "groups"


def test_ios_policy_on_a_gpu_places_groups_on_their_own_veus():
    graph = OpGraph.from_edges(3, [(0, 1)], names=["a", "b", "c"])
    schedule = Schedule([Stage([["a", "b"], ["c"]])])
    rops = _cpu_rops(graph, {"a": 100.0, "b": 100.0, "c": 20.0})
    ((_, program),) = ios_policy(graph, schedule, rops, VDEVICES["h100"], num_veus=2,
                                 balance=True)
    assert program.meta["placement"] == "groups"


@pytest.mark.parametrize("seed", range(6))
def test_builders_keep_the_simulators_makespan(seed, monkeypatch):
    """The policies time a plan by the builder's own finish times, not by simulating it
    again each wave: the same makespan as the simulator, so the same plans."""
    from tvm_ios.kernels import policies

    graph = random_graph(seed, n=14, p=0.3)
    rops = estimate_roperators(graph, "h100")
    fast = wavefront_policy(graph, rops, VDEVICES["h100"])
    simulated = []

    def by_simulation(builder, launch_us):
        if builder is None or not builder.program.num_tasks:
            return 0.0
        simulated.append(simulate(builder.program).makespan_us)
        assert builder.makespan_us == pytest.approx(simulated[-1])
        return simulated[-1] + launch_us
    monkeypatch.setattr(policies, "_time", by_simulation)
    slow = wavefront_policy(graph, rops, VDEVICES["h100"])
    assert simulated and [p.to_dict() for p in fast] == [p.to_dict() for p in slow]
