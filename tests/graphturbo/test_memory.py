"""Memory allocation: reuse after the last use, longest-liveness spilling, GB then DRAM."""
from tvm_ios.graphturbo.instances import Instance
from tvm_ios.graphturbo.memory import allocate

BOX = ((0, 1),)


def chain_with_a_long_lived_tensor():
    """0 is read by 1 and by 4 (long life); 1 -> 2 -> 3 -> 4 each read their predecessor."""
    return [Instance(0, 0, 0, BOX, 10, 10), Instance(1, 1, 0, BOX, 10, 20, [0]),
            Instance(2, 2, 0, BOX, 10, 20, [1]), Instance(3, 3, 0, BOX, 10, 20, [2]),
            Instance(4, 4, 0, BOX, 10, 30, [0, 3])]


def test_space_is_reused_after_the_last_use():
    insts = chain_with_a_long_lived_tensor()
    alloc = allocate(insts, [0, 1, 2, 3, 4], {i: "LB" for i in range(5)}, 100, 100)
    assert alloc.spilled_bytes == 0
    # step 3 holds tensor 0 (still needed later) and instance 3's working set only
    assert alloc.lb_trace == [10, 20, 30, 30, 30]


def test_longest_lived_tensor_is_spilled_first_to_gb_then_dram():
    insts = chain_with_a_long_lived_tensor()
    alloc = allocate(insts, [0, 1, 2, 3, 4], {i: "LB" for i in range(5)}, 25, 100)
    assert alloc.spills[0] == (2, 0, "GB")
    alloc = allocate(insts, [0, 1, 2, 3, 4], {i: "LB" for i in range(5)}, 25, 5)
    assert alloc.spills[0] == (2, 0, "DRAM") and alloc.placement[0] == "DRAM"


def test_gb_scope_is_honoured():
    insts = chain_with_a_long_lived_tensor()
    scope = {i: "LB" for i in range(5)}
    scope[0] = "GB"
    alloc = allocate(insts, [0, 1, 2, 3, 4], scope, 100, 100)
    assert alloc.placement[0] == "GB" and alloc.gb_trace[1] == 10
