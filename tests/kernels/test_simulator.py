"""Simulator: makespan, deadlock detection, dependency checking by happens-before."""
import pytest

from tvm_ios.kernels.rprogram import RProgram, RTask
from tvm_ios.kernels.simulator import (DeadlockError, DependencyError, check_dependencies,
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
