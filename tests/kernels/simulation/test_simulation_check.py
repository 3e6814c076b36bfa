"""Simulation order: the programs cheapest to simulate run first (no simulator needed)."""
from tvm_ios.kernels.rprogram import RProgram, RTask
from tvm_ios.kernels.simulation.check import simulation_cost


def _program(veus: int, tasks: int, backward: bool) -> RProgram:
    program = RProgram(veus)
    for v in range(veus):
        for r in range(tasks):
            program.append(RTask("a", v * tasks + r), v)
    if backward:  # every vEU waits for the last one: all must run at once
        for v in range(veus - 1):
            program.wait(v, [(veus - 1, 0)])
    return program


def test_simulation_cost_counts_entries_times_resident_veus():
    free, crossed = _program(4, 2, False), _program(4, 2, True)
    assert simulation_cost(free) == 8          # 8 entries, one vEU at a time
    assert simulation_cost(crossed) == 11 * 4  # 8 rTasks + 3 barriers, 4 resident
    assert simulation_cost(RProgram(3)) == 0
