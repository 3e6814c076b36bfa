"""Slices of a parallel loop: the rewritten IR, which kernels qualify, and the numbers."""
import numpy as np
import pytest
import tvm
from tvm.script import tirx as T

from parallel_kernels import doubled, two_nests
from tvm_ios import _tvm
from tvm_ios.kernels.cpu.slicing import slice_kernel, slice_range, sliceable



@T.prim_func(private=True, s_tir=True)
def doubled_slice1(a: T.Buffer((8,), "float32"), b: T.Buffer((8,), "float32")):
    for i in range(4):
        if i >= 2 and i < 4:
            for j in range(2):
                with T.sblock("b"):
                    vi = T.axis.spatial(8, i * 2 + j)
                    b[vi] = a[vi] * T.float32(2)



@T.prim_func(private=True, s_tir=True)
def serial(a: T.Buffer((8,), "float32"), b: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.sblock("b"):
            vi = T.axis.spatial(8, i)
            b[vi] = a[vi]


def test_slice_ranges_cover_the_loop_once():
    assert [slice_range(14, i, 2) for i in range(2)] == [(0, 7), (7, 14)]
    assert [slice_range(5, i, 3) for i in range(3)] == [(0, 2), (2, 4), (4, 5)]
    with pytest.raises(ValueError, match="slice 2 of 2"):
        slice_range(4, 2, 2)


def test_a_slice_runs_its_range_of_the_loop_serially():
    tvm.ir.assert_structural_equal(slice_kernel(doubled, 1, 2), doubled_slice1)


def test_only_one_parallel_loop_of_enough_iterations_is_sliceable():
    assert sliceable(doubled, 2) and sliceable(doubled, 4)
    assert not sliceable(doubled, 5)  # fewer iterations than slices
    assert not sliceable(two_nests, 2)  # the second nest reads what other slices write
    assert not sliceable(serial, 2)
    with pytest.raises(ValueError, match="not one parallel loop"):
        slice_kernel(two_nests, 0, 2)


def _compiled(func):
    return tvm.compile(tvm.IRModule({"main": func.with_attr("global_symbol", "main")}),
                       target="llvm")


@pytest.mark.parametrize("count", [2, 3])
def test_slices_in_turn_compute_what_the_kernel_computes(count):
    dev = tvm.cpu()
    a = np.arange(8, dtype="float32")
    out = _tvm.tensor(np.zeros(8, "float32"), dev)
    _compiled(slice_kernel(doubled, 0, count))["main"](_tvm.tensor(a, dev), out)
    assert not np.array_equal(out.numpy(), a * 2)  # one slice is not the whole kernel
    for index in range(1, count):
        _compiled(slice_kernel(doubled, index, count))["main"](_tvm.tensor(a, dev), out)
    np.testing.assert_array_equal(out.numpy(), a * 2)
