"""BFS and DFS (Algorithm 3) orders, and the memory use that picks between them."""
from tvm_ios.graphturbo.instances import Instance
from tvm_ios.graphturbo.memory import allocate
from tvm_ios.graphturbo.ordering import bfs_order, dfs_order

BOX = ((0, 1),)


def two_chains():
    """a0 -> b0 and a1 -> b1 (ids 0, 1, 2, 3), each output 10 bytes."""
    return [Instance(0, 0, 0, BOX, 10, 10), Instance(1, 0, 1, BOX, 10, 10),
            Instance(2, 1, 0, BOX, 10, 10, [0]), Instance(3, 1, 1, BOX, 10, 10, [1])]


def test_bfs_runs_level_by_level():
    assert bfs_order(two_chains()) == [0, 1, 2, 3]


def test_dfs_follows_the_last_readied_instance():
    assert dfs_order(two_chains()) == [1, 3, 0, 2]


def test_dfs_uses_less_local_buffer_here():
    insts = two_chains()
    scope = {i.id: "LB" for i in insts}
    bfs = allocate(insts, bfs_order(insts), scope, 15, 100)
    dfs = allocate(insts, dfs_order(insts), scope, 15, 100)
    assert bfs.spilled_bytes == 20 and bfs.spills == [(1, 0, "GB"), (2, 1, "GB")]
    assert dfs.spilled_bytes == 0 and dfs.peak_lb == 10


def test_orders_respect_dependencies():
    insts = [Instance(0, 0, 0, BOX, 1, 1), Instance(1, 1, 0, BOX, 1, 1, [0]),
             Instance(2, 1, 1, BOX, 1, 1, [0]), Instance(3, 2, 0, BOX, 1, 1, [1, 2])]
    for order in (bfs_order(insts), dfs_order(insts)):
        pos = {i: t for t, i in enumerate(order)}
        assert all(pos[p] < pos[i.id] for i in insts for p in i.preds)
