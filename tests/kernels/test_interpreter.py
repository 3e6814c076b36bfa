"""Simulator: makespan, deadlock detection, dependency checking by happens-before."""
import pytest

from tvm_ios.kernels.rprogram import RProgram, RTask
from tvm_ios.kernels.interpreter import (DeadlockError, DependencyError, check_dependencies,
                                       simulate)


def test_makespan_hand_checked():
    p = RProgram(2)
    p.append(RTask("a", duration_us=3.0), 0)
    p.append(RTask("b", duration_us=1.0), 1)
    p.wait(1, [(0, 0)])
    p.append(RTask("c", duration_us=2.0), 1)
    result = simulate(p)
    assert result.makespan_us == pytest.approx(5.0)  # c starts when a ends at 3
    assert result.start[1][2] == pytest.approx(3.0)
    assert check_dependencies(p, [("a", "c"), ("b", "c")]) == 2


def test_deadlock_is_found():
    p = RProgram(2)
    p.append(RTask("a", duration_us=1.0), 0)
    p.append(RTask("b", duration_us=1.0), 1)
    p.prog[0].insert(0, RTask(kind="barrier", waits=((1, 2),)))
    p.prog[1].insert(0, RTask(kind="barrier", waits=((0, 2),)))
    with pytest.raises(DeadlockError, match="stuck"):
        simulate(p)
    with pytest.raises(DeadlockError, match="cycle"):
        check_dependencies(p, [])


def test_missing_barrier_is_a_dependency_error():
    p = RProgram(2)
    p.append(RTask("a", duration_us=5.0), 0)
    p.append(RTask("c", duration_us=1.0), 1)  # reads a, no barrier
    simulate(p)  # runs, but only by luck
    with pytest.raises(DependencyError, match="c@\\(1,0\\).*a@\\(0,0\\)"):
        check_dependencies(p, [("a", "c")])


def test_transitive_happens_before_counts():
    p = RProgram(3)
    p.append(RTask("a", duration_us=1.0), 0)
    p.wait(1, [(0, 0)])
    p.append(RTask("b", duration_us=1.0), 1)
    p.wait(2, [(1, 1)])
    p.append(RTask("c", duration_us=1.0), 2)
    assert check_dependencies(p, [("a", "c")]) == 1


def test_in_order_slots_counts_the_veus_that_must_run_at_once():
    from tvm_ios.kernels.interpreter import in_order_slots

    free = RProgram(4)
    for v in range(4):
        free.append(RTask("a", v), v)
    assert in_order_slots(free) == 1  # no waits: one at a time finishes
    forward = RProgram(3)
    forward.append(RTask("a", 0), 0)
    forward.wait(1, [(0, 0)])
    forward.wait(2, [(1, 0)])
    assert in_order_slots(forward) == 1  # waits only on vEUs started before
    backward = RProgram(3)
    backward.append(RTask("a", 0), 2)
    backward.wait(0, [(2, 0)])  # vEUs 0 and 1 wait for vEU 2: all three must run at once
    backward.wait(1, [(2, 0)])
    assert in_order_slots(backward) == 3
    backward.prog[1].clear()  # vEU 1 done at once: its slot goes to vEU 2
    assert in_order_slots(backward) == 2
