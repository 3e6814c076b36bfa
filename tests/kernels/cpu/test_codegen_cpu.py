"""The CPU vDevice's PrimFunc with ops cut into slices of their parallel loops, run for real."""
import numpy as np
import pytest
import tvm
from tvm.script import tirx as T

from parallel_kernels import doubled, two_nests
from tvm_ios import _tvm
from tvm_ios.kernels.cpu.codegen import build_cpu_primfunc, sliced_ops
from tvm_ios.kernels.roperator import SLICES
from tvm_ios.kernels.rprogram import RProgram, RTask
from tvm_ios.kernels.tvm_kernels import KernelStep

pytestmark = pytest.mark.usefixtures("two_workers")  # two vEUs: two pool workers



@T.prim_func(private=True, s_tir=True)
def reversed_plus_one(b: T.Buffer((8,), "float32"), c: T.Buffer((8,), "float32")):
    for i in T.parallel(8):  # slice 0 reads what slice 1 of the producer writes
        with T.sblock("c"):
            vi = T.axis.spatial(8, i)
            c[vi] = b[7 - vi] + T.float32(1)



TENSORS = {k: (k, (8,), "float32") for k in "abc"}


def _chain(second, indices=((0, 1), (0, 1))) -> RProgram:
    """``a -> b`` by ``doubled``, ``b -> c`` by ``second``, each op one slice per vEU."""
    program = RProgram(2, name="chain")
    for veu in range(2):
        program.append(RTask("double", indices[0][veu], kernel=SLICES), veu)
    for veu in range(2):
        program.wait(veu, [(1 - veu, 0)])
        program.append(RTask(second.__name__, indices[1][veu], kernel=SLICES), veu)
    return program


def _run(program, second) -> np.ndarray:
    steps = {"double": [KernelStep(doubled, ["a"], "b")],
             second.__name__: [KernelStep(second, ["b"], "c")]}
    func = build_cpu_primfunc(program, steps, TENSORS, ["a"], ["b", "c"])
    lib = tvm.compile(tvm.IRModule({"main": func.with_attr("global_symbol", "main")}),
                      target="llvm")
    dev = tvm.cpu()
    args = [_tvm.tensor(np.arange(8, dtype="float32"), dev)] + \
        [_tvm.tensor(np.full(8, -1.0, "float32"), dev) for _ in range(2)]
    lib["main"](*args)
    return args[2].numpy()


EXPECTED = (np.arange(8, dtype="float32") * 2)[::-1] + 1


@pytest.mark.parametrize("second", [reversed_plus_one, two_nests])
def test_sliced_ops_across_a_barrier_compute_the_chain(second):
    program = _chain(second)
    assert sliced_ops(program) == {"double": 2, second.__name__: 2}
    np.testing.assert_array_equal(_run(program, second), EXPECTED)  # two_nests: whole in 0


def test_a_slice_computes_only_its_share():
    program = _chain(reversed_plus_one, indices=((0, 0), (0, 1)))  # slice 1 of a never runs
    assert not np.array_equal(_run(program, reversed_plus_one), EXPECTED)
