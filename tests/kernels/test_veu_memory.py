"""vEU scratch arenas: liveness, first-fit reuse, one vEU per tensor, views over the arena."""
import numpy as np
import pytest
import tvm
from tvm import s_tir, tirx

from tvm_ios.kernels.veu_memory import ALIGN, ScratchPlan, at_arena, cpu_views, pack


def test_dead_tensors_give_their_space_back():
    # a -> b -> c on one vEU: a is dead when c is written, so c reuses a's offset
    events = [[(["a"], []), (["b"], ["a"]), (["c"], ["b"])]]
    plan = pack(events, {"a": 16, "b": 16, "c": 16})
    assert plan.offsets == {"a": (0, 0), "b": (0, 16), "c": (0, 0)}
    assert plan.sizes == [32]


def test_live_tensors_never_overlap_and_sizes_are_aligned():
    events = [[(["a"], []), (["b"], []), (["c"], ["a", "b"])], [(["d"], [])]]
    plan = pack(events, {"a": 3, "b": 5, "c": 17, "d": 1})
    spans = {k: (o, o + n) for k, (_, o), n in
             [(k, plan.offsets[k], {"a": 3, "b": 5, "c": 17}[k]) for k in "abc"]}
    for x in "abc":
        for y in "abc":
            if x < y:
                assert spans[x][1] <= spans[y][0] or spans[y][1] <= spans[x][0]
    assert all(o % ALIGN == 0 for _, o in plan.offsets.values())
    assert plan.sizes[1] == ALIGN and plan.base(1) == plan.sizes[0]


def test_a_tensor_of_two_veus_cannot_be_local():
    with pytest.raises(ValueError, match="used by vEUs 0 and 1"):
        pack([[(["a"], [])], [([], ["a"])]], {"a": 4})


def test_views_over_the_arena_run_on_llvm():
    # two vEU regions of one arena; each vEU writes and reads its own view
    plan = ScratchPlan({"x": (0, 0), "y": (1, 0)}, [16, 16])
    a = tirx.decl_buffer((8,), "float32", "A")
    out = tirx.decl_buffer((2, 8), "float32", "B")
    bufs = {k: tirx.decl_buffer((8,), "float32", k) for k in "xy"}
    arena, views, decls = cpu_views(plan, bufs, "float32")
    i = tirx.Var("i", "int32")
    body = []  # both views written before either is read: overlapping regions would show
    for v, key in enumerate("xy"):
        body.append(tirx.For(i, 0, 8, tirx.ForKind.SERIAL, tirx.BufferStore(
            views[key], tirx.BufferLoad(a, [i]) + float(v + 1), [i])))
    for v, key in enumerate("xy"):
        body.append(tirx.For(i, 0, 8, tirx.ForKind.SERIAL, tirx.BufferStore(
            out, tirx.BufferLoad(views[key], [i]), [v, i])))
    root = s_tir.SBlock([], [], [], "root", tirx.SeqStmt(decls + body), alloc_buffers=[arena])
    func = tirx.PrimFunc([a, out], s_tir.SBlockRealize([], True, root)).with_attr(
        "global_symbol", "main")
    lib = tvm.compile(tvm.IRModule({"main": func}), target="llvm")
    x = np.arange(8, dtype="float32")
    res = tvm.runtime.tensor(np.zeros((2, 8), "float32"))
    lib["main"](tvm.runtime.tensor(x), res)
    np.testing.assert_allclose(res.numpy(), np.stack([x + 1, x + 2]))


def test_a_lowered_kernel_reads_and_writes_its_kept_views_at_their_arena_offsets():
    """After the cut TVM applies no ``elem_offset``: a lowered kernel reaches its view
    through flattened buffers over the view's data, scalar or vector-typed. Every such
    access becomes the arena's at the view's offset; the declarations go."""
    arena = tirx.decl_buffer((1024,), "float32", "rp_kept", scope="shared")
    view = tirx.decl_buffer((32,), "float32", "t_kept", elem_offset=128, scope="shared")
    flat = tirx.decl_buffer((32,), "float32", "t_flat", scope="shared")
    vec = tirx.decl_buffer((16,), "float32x2", "t_vec", scope="shared")
    other = tirx.decl_buffer((32,), "float32", "other")
    i = tirx.Var("i", "int32")
    before = tirx.SeqStmt([
        tirx.DeclBuffer(flat, data=view.data), tirx.DeclBuffer(vec, data=view.data),
        tirx.BufferStore(flat, tirx.BufferLoad(other, [i]), [i]),
        tirx.BufferStore(vec, tirx.BufferLoad(vec, [i]), [i + 1]),
        tirx.BufferStore(other, tirx.BufferLoad(view, [i]), [i])])
    two = tirx.IntImm("int32", 2)
    expected = tirx.SeqStmt([  # the declarations went (no-ops, dropped)
        tirx.BufferStore(arena, tirx.BufferLoad(other, [i]), [i + 128]),
        tirx.BufferStore(arena, tirx.BufferLoad(arena, [tirx.Ramp(i * two + 128, 1, 2)]),
                         [tirx.Ramp((i + 1) * two + 128, 1, 2)]),
        tirx.BufferStore(other, tirx.BufferLoad(arena, [i + 128]), [i])])
    tvm.ir.assert_structural_equal(at_arena(before, [view], arena), expected)
    tvm.ir.assert_structural_equal(at_arena(before, [], arena), before)  # no views: as is
