"""rProgram data structure: append/wait semantics and plain data."""
import pytest

from tvm_ios.kernels.rprogram import RProgram, RProgramError, RTask


def _program():
    p = RProgram(3, name="p")
    p.append(RTask("a", 0, duration_us=1.0), 0)
    p.append(RTask("a", 1, duration_us=1.0), 0)
    p.append(RTask("b", 0, duration_us=2.0), 1)
    return p


def test_wait_keeps_last_task_per_veu_and_drops_own():
    p = _program()
    pos = p.wait(2, [(0, 0), (0, 1), (1, 0)])
    assert pos == (2, 0)
    assert p.prog[2][0].waits == ((0, 2), (1, 1))
    assert p.wait(0, [(0, 0)]) is None  # program order already covers it
    assert p.num_barriers == 1 and p.num_tasks == 3
    assert p.positions("a") == [(0, 0), (0, 1)]


def test_bad_positions_are_refused():
    p = _program()
    with pytest.raises(RProgramError, match="no rTask at"):
        p.wait(2, [(1, 5)])
    with pytest.raises(RProgramError, match="out of range"):
        p.append(RTask("c"), 3)
    with pytest.raises(RProgramError, match="barriers"):
        p.append(RTask(kind="barrier"), 0)


def test_json_roundtrip_and_str():
    p = _program()
    p.wait(2, [(1, 0)])
    q = RProgram.from_json(p.to_json())
    assert q == p
    text = str(p)
    assert "3 vEUs, 3 rTasks, 1 barriers" in text and "wait(1>=1)" in text


def test_from_json_names_bad_field():
    with pytest.raises(RProgramError, match="prog\\[0\\]\\[0\\].kind"):
        RProgram.from_json({"schema": "tvm-ios/rprogram", "num_veus": 1,
                            "prog": [[{"op": "a", "kind": "sleep"}]]})
