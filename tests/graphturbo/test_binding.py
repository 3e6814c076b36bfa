"""Algorithm 4: plain binding, inference, a mismatch forcing GB and a redistribution."""
from tvm_ios.graphturbo.binding import (bind_and_scope, bind_veus, infer_binding, movement_ops,
                                         plain_binding)
from tvm_ios.graphturbo.instances import Instance

BOX = ((0, 1), (0, 8), (0, 4), (0, 4))


def test_plain_binding_fills_cores_from_the_outermost_dimension():
    assert plain_binding((16, 64, 8, 8), 8) == (8, 1, 1, 1)
    assert plain_binding((1, 64, 8, 8), 8) == (1, 8, 1, 1)
    assert plain_binding((2, 6, 8, 8), 8) == (2, 2, 2, 1)


def test_infer_binding_drops_channels_through_a_convolution():
    assert infer_binding((1, 8, 1, 1), (1, 8, 4, 4), channel_matches=True) == (1, 8, 1, 1)
    assert infer_binding((1, 8, 1, 1), (1, 8, 4, 4), channel_matches=False) == (1, 1, 1, 1)
    assert infer_binding((1, 1, 8, 1), (1, 8, 4, 4), channel_matches=True) is None


def test_binding_mismatch_puts_the_producer_in_gb_with_copy_and_redistribution():
    producer = Instance(0, 0, 0, BOX, 512, 1024)
    add = Instance(1, 1, 0, BOX, 512, 1024, [0])    # elementwise: channels match
    conv = Instance(2, 2, 0, BOX, 512, 1024, [0])   # convolution: channels reduced
    insts = [producer, add, conv]

    def matches(consumer, _producer):
        return consumer == 1
    bind, scope = bind_and_scope(insts, [0, 1, 2], 8, matches)
    assert scope == {0: "GB", 1: "LB", 2: "LB"}
    assert bind[0] == (1, 8, 1, 1)
    ops = movement_ops(insts, bind, scope, 8, matches)
    kinds = {(op["kind"], op["consumer"]) for op in ops}
    assert kinds == {("copy", 1), ("copy", 2), ("redistribute", 2)}
    redistribute = next(op for op in ops if op["kind"] == "redistribute")
    assert redistribute["to_binding"] == [1, 1, 1, 1]


def test_consumers_of_several_parts_get_a_concatenation():
    parts = [Instance(0, 0, 0, BOX, 8, 8), Instance(1, 0, 1, BOX, 8, 8)]
    reader = Instance(2, 1, 0, BOX, 8, 8, [0, 1])
    bind, scope = bind_and_scope(parts + [reader], [0, 1, 2], 8, lambda c, p: True)
    ops = movement_ops(parts + [reader], bind, scope, 8, lambda c, p: True)
    assert [op for op in ops if op["kind"] == "concat"][0]["producers"] == [0, 1]


def _inst(i, sg, k, preds=(), out_bytes=64):
    return Instance(i, sg, k, BOX, out_bytes, 2 * out_bytes, list(preds))


def test_veu_binding_parts_split_alike_line_up_and_stay_local():
    # two SGs split in two, part k reading part k only: each chain on its own vEU, LB
    insts = [_inst(0, 0, 0), _inst(1, 0, 1), _inst(2, 1, 0, [0]), _inst(3, 1, 1, [1])]
    veu, scope = bind_veus(insts, [0, 1, 2, 3], 2)
    assert veu == {0: 0, 1: 1, 2: 0, 3: 1}
    assert scope == {0: "LB", 1: "LB", 2: "GB", 3: "GB"}  # 2, 3: nothing reads them


def test_veu_binding_halo_reads_force_gb_but_keep_the_parts_parallel():
    # both consumer parts read both producer parts (a halo): inheriting one consumer's vEU
    # would put both producer parts on it; the plain binding keeps them apart, scope GB
    insts = [_inst(0, 0, 0), _inst(1, 0, 1), _inst(2, 1, 0, [0, 1]), _inst(3, 1, 1, [0, 1])]
    veu, scope = bind_veus(insts, [0, 1, 2, 3], 2)
    assert veu == {0: 0, 1: 1, 2: 0, 3: 1}
    assert scope[0] == scope[1] == "GB"


def test_veu_binding_chain_of_unsplit_sgs_stays_on_one_veu():
    insts = [_inst(0, 0, 0), _inst(1, 1, 0, [0]), _inst(2, 2, 0, [1])]
    veu, scope = bind_veus(insts, [0, 1, 2], 4)
    assert len(set(veu.values())) == 1
    assert scope == {0: "LB", 1: "LB", 2: "GB"}


def test_veu_binding_join_sends_the_smaller_branch_to_another_veu():
    # 0 and 1 are independent unsplit SGs read by 2: the larger (1) follows 2, the other
    # gets the least loaded vEU, so the branches run in parallel; its output goes to GB
    insts = [_inst(0, 0, 0, out_bytes=32), _inst(1, 1, 0, out_bytes=64),
             _inst(2, 2, 0, [0, 1])]
    veu, scope = bind_veus(insts, [0, 1, 2], 2)
    assert veu[1] == veu[2] != veu[0]
    assert scope == {0: "GB", 1: "LB", 2: "GB"}
