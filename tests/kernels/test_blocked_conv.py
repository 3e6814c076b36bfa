"""Legalization of blocked-layout convolutions: only those, and numerically right."""
import numpy as np
import pytest
import tvm
from tvm import relax

from tvm_ios.kernels.blocked_conv import is_blocked, register_blocked_conv2d


def _conv(layout: str, kernel_layout: str, data_shape, weight_shape, groups: int = 1):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType(data_shape, "float32"))
    w = relax.Var("w", relax.TensorType(weight_shape, "float32"))
    with bb.function("main", [x, w]):
        with bb.dataflow():
            y = bb.emit_output(relax.op.nn.conv2d(x, w, padding=[1, 1], groups=groups,
                                                  data_layout=layout,
                                                  kernel_layout=kernel_layout))
        bb.emit_func_output(y)
    return bb.get()


def _primfuncs(mod) -> list[str]:
    return [gv.name_hint for gv, f in mod.functions.items() if isinstance(f, tvm.tirx.PrimFunc)]


def test_layout_names():
    assert is_blocked("NCHW16c") and is_blocked("OIHW8i8o")
    assert not is_blocked("NCHW") and not is_blocked("OIHW")


def test_nchw_convolutions_are_left_to_tvm():
    register_blocked_conv2d()
    register_blocked_conv2d()  # (once per process: a second call changes nothing)
    out = relax.transform.LegalizeOps()(_conv("NCHW", "OIHW", (1, 8, 6, 6), (8, 8, 3, 3)))
    assert _primfuncs(out) == ["conv2d"]


@pytest.mark.parametrize("groups", [1, 2])
def test_blocked_convolutions_lower_and_compute_the_nchw_result(groups):
    register_blocked_conv2d()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 16, 6, 6)).astype("float32")
    w = rng.standard_normal((16, 16 // groups, 3, 3)).astype("float32")
    blocked = relax.transform.LegalizeOps()(
        _conv("NCHW8c", "OIHW8i8o", (1, 2, 6, 6, 8), (2, 2 // groups, 3, 3, 8, 8), groups))
    assert _primfuncs(blocked) == ["conv2d_NCHWc"]
    xb = np.ascontiguousarray(x.reshape(1, 2, 8, 6, 6).transpose(0, 1, 3, 4, 2))
    wb = np.ascontiguousarray(w.reshape(2, 8, 2 // groups, 8, 3, 3).transpose(0, 2, 4, 5, 3, 1))
    vm = relax.VirtualMachine(tvm.compile(blocked, "llvm"), tvm.cpu())
    out = vm["main"](tvm.runtime.tensor(xb), tvm.runtime.tensor(wb)).numpy()
    ref_vm = relax.VirtualMachine(tvm.compile(_conv("NCHW", "OIHW", x.shape, w.shape, groups),
                                              "llvm"), tvm.cpu())
    ref = ref_vm["main"](tvm.runtime.tensor(x), tvm.runtime.tensor(w)).numpy()
    np.testing.assert_allclose(out.transpose(0, 1, 4, 2, 3).reshape(ref.shape), ref,
                               rtol=1e-4, atol=1e-4)
