"""Two small convolution models and kernel records given by hand, for the tests of what is
computed from a kernel database's records (the concurrency ceiling, the kernel roofline)."""
import numpy as np
from tvm import relax

from tvm_ios import _tvm
from tvm_ios.kernels import prepack
from tvm_ios.tuning.kernel_db import host_target
from tvm_ios.kernels.tuned_build import fuse_for_tuning


def two_convs(chain: bool, fused: bool = True):
    """A 1x1 convolution ``a`` and a 3x3 one ``b`` of the input (of ``a`` with ``chain``),
    concatenated; ``fused``: three kernels."""
    rng = np.random.default_rng(0)
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 8, 8, 8), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit(relax.op.nn.conv2d(x, relax.const(
                rng.standard_normal((8, 8, 1, 1)).astype("float32"))))
            b = bb.emit(relax.op.nn.conv2d(a if chain else x, relax.const(
                rng.standard_normal((8, 8, 3, 3)).astype("float32")), padding=[1, 1]))
            out = bb.emit_output(relax.op.concat([a, b], axis=1))
        bb.emit_func_output(out)
    return fuse_for_tuning(bb.get(), host_target()) if fused else bb.get()


def kernel_names(mod) -> list[str]:
    """The kernels ``main`` calls, in order, as the ceiling names them (weights marked)."""
    main = prepack.mark_layout_free(mod)["main"]
    return [b.value.args[0].name_hint for blk in main.body.blocks for b in blk.bindings]


class HandRecords:
    """Records given by hand: ``{(variant, call index): us}`` (what a KernelDB answers)."""

    def __init__(self, mod, times: dict):
        names = kernel_names(mod)
        self.times = {(variant, names[k]): us for (variant, k), us in times.items()}
        self.target = _tvm.make_target(host_target(2))

    def best_us(self, variant, func, name="main"):  # noqa: ARG002  (KernelDB's signature)
        return self.times.get((variant, name))
