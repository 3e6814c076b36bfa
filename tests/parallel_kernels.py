"""Hand-written parallel kernels shared by the slicing and CPU codegen tests."""
from tvm.script import tirx as T


@T.prim_func(private=True, s_tir=True)
def doubled(a: T.Buffer((8,), "float32"), b: T.Buffer((8,), "float32")):
    for i in T.parallel(4):
        for j in range(2):
            with T.sblock("b"):
                vi = T.axis.spatial(8, i * 2 + j)
                b[vi] = a[vi] * T.float32(2)


@T.prim_func(private=True, s_tir=True)
def two_nests(b: T.Buffer((8,), "float32"), c: T.Buffer((8,), "float32")):
    t = T.sblock_alloc_buffer((8,))
    for i in T.parallel(8):
        with T.sblock("t"):
            vi = T.axis.spatial(8, i)
            t[vi] = b[vi] + T.float32(1)
    for i in T.parallel(8):  # reads what other iterations of the first nest write
        with T.sblock("c"):
            vi = T.axis.spatial(8, i)
            c[vi] = t[7 - vi]
