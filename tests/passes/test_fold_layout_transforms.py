"""FoldLayoutTransforms: constant weights' layout transforms folded with numpy, checked
against hand-packed arrays, against Relax's FoldConstant (Before/Expected), and by running
the folded module against the unfolded one on random inputs."""
import numpy as np
import tvm
import tvm_ffi
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T

from tvm_ios import _tvm
from tvm_ios.passes.blocked_layout import BlockedLayout
from tvm_ios.passes.fold_layout_transforms import FoldLayoutTransforms, fold_layout_transform
from tvm_ios.runtime.compare import random_inputs, run
from tvm_ios.testing import dag_model

RNG = np.random.default_rng(0)
WEIGHT = RNG.standard_normal((8, 4, 3, 3)).astype("float32")


def _transforms(mod) -> list:
    found = []

    def visit(node):
        if isinstance(node, relax.Call) and _tvm.op_name(node) == "relax.layout_transform":
            found.append(node)
    for _, func in _tvm.relax_functions(mod):
        relax.analysis.post_order_visit(func, visit)
    return found


def _blocked_weight_module(weight: np.ndarray, block: int):
    """``main(x) = conv2d(x, W)`` with ``W`` bound, its convolution asked for ``NCHW{b}c``
    (weights ``OIHW{b}i{b}o``)."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, weight.shape[1], 6, 6), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.nn.conv2d(x, relax.const(weight), padding=1))
        bb.emit_func_output(out)
    return relax.transform.ConvertLayout(
        {"relax.nn.conv2d": [f"NCHW{block}c", f"OIHW{block}i{block}o"]})(bb.get())


def test_weight_packed_as_by_hand():
    """OIHW -> OIHW2i2o: the element (o, i, h, w) lands at (o//2, i//2, h, w, i%2, o%2)."""
    mod = _blocked_weight_module(WEIGHT, 2)
    calls = [c for c in _transforms(mod) if _tvm.is_tensor_constant(c.args[0])]
    assert len(calls) == 1
    folded = fold_layout_transform(calls[0])
    by_hand = WEIGHT.reshape(4, 2, 2, 2, 3, 3).transpose(0, 2, 4, 5, 3, 1)  # o//2, i//2 blocks
    assert folded.shape == by_hand.shape == (4, 2, 3, 3, 2, 2)
    np.testing.assert_array_equal(folded, by_hand)


def test_same_module_as_fold_constant():
    """Every constant's transform folded; the module equals FoldConstant's, constants
    included (and the pass changes nothing FoldConstant then has to do)."""
    mod = _blocked_weight_module(WEIGHT, 4)
    folder = FoldLayoutTransforms()
    ours = folder(mod)
    assert folder.folded == 1
    assert not [c for c in _transforms(ours) if _tvm.is_tensor_constant(c.args[0])]
    assert _transforms(ours)  # (the data's transforms stay: not constants)
    theirs = relax.transform.FoldConstant()(mod)
    tvm.ir.assert_structural_equal(relax.transform.FoldConstant()(ours), theirs)


def test_wrong_packing_is_told_apart():
    """The comparison above sees the constants' data: a transposed block is not equal."""
    mod = _blocked_weight_module(WEIGHT, 4)
    calls = [c for c in _transforms(mod) if _tvm.is_tensor_constant(c.args[0])]
    good = fold_layout_transform(calls[0])
    bad = np.swapaxes(good, -1, -2).copy()
    assert not tvm_ffi.structural_equal(relax.const(good), relax.const(bad))
    assert tvm_ffi.structural_equal(relax.const(good), relax.const(good.copy()))


@I.ir_module
class Padded:
    @R.function
    def main(x: R.Tensor((1, 3, 2, 2), "float32")):
        with R.dataflow():
            w = R.const(np.arange(6, dtype="float32").reshape(3, 2), "float32")
            lv = R.layout_transform(w, index_map=T.index_map(lambda o, i: (o // 2, i, o % 2)),
                                    pad_value=7.0)
            R.output(lv)
        return lv


def test_padding_filled_with_pad_value():
    """3 rows into blocks of 2 (the tensor a variable bound to a constant): the missing row
    is the transform's pad value, as FoldConstant makes it."""
    folder = FoldLayoutTransforms()
    folded = folder(Padded)
    assert folder.folded == 1 and not _transforms(folded)
    values = [_tvm.constant_numpy(c) for c in _constants(folded)]
    (value,) = [v for v in values if v.shape == (2, 2, 2)]
    assert value[1, 0, 1] == 7.0 and value[1, 1, 0] == 5.0 and value[0, 1, 1] == 3.0
    fold = relax.transform.FoldConstant()
    tvm.ir.assert_structural_equal(fold(folded), fold(Padded))


def _constants(mod):
    found = []

    def visit(node):
        if _tvm.is_tensor_constant(node):
            found.append(node)
    for _, func in _tvm.relax_functions(mod):
        relax.analysis.post_order_visit(func, visit)
    return found


@I.ir_module
class NotConstant:
    @R.function
    def main(x: R.Tensor((4, 4), "float32")):
        with R.dataflow():
            lv = R.layout_transform(x, index_map=T.index_map(lambda a, b: (a // 2, b, a % 2)))
            R.output(lv)
        return lv


def test_non_constant_left_alone():
    folder = FoldLayoutTransforms()
    out = folder(NotConstant)
    assert folder.folded == 0
    tvm.ir.assert_structural_equal(out, NotConstant)


def test_blocked_model_runs_as_the_original():
    """BlockedLayout (which folds with this pass) on a multi-branch model of bound weights:
    outputs equal the unrewritten build's on random inputs."""
    mod = dag_model(seed=3, num_ops=6, channels=16, size=6)[0]
    blocked = BlockedLayout(8)(mod)
    assert not [c for c in _transforms(blocked) if _tvm.is_tensor_constant(c.args[0])]
    inputs = random_inputs(mod, seed=0)
    np.testing.assert_allclose(run(tvm.compile(blocked, "llvm"), inputs),
                               run(tvm.compile(mod, "llvm"), inputs), rtol=1e-4, atol=1e-4)
