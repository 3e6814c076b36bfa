"""The concurrency ceiling: hand-checked on two convolutions, side by side or in a chain,
with records given; then on records TVM's tuner measured."""
import numpy as np
import pytest
from tvm import relax

from tvm_ios import _tvm
from tvm_ios.kernels import prepack
from tvm_ios.kernels.ceiling import concurrency_ceiling
from tvm_ios.kernels.kernel_db import KernelDB, host_target
from tvm_ios.kernels.tuned_build import fuse_for_tuning
from tvm_ios.kernels.tuning import tune_kernels


def _two_convs(chain: bool, fused: bool = True):
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


def _kernel_names(mod) -> list[str]:
    """The kernels ``main`` calls, in order, as the ceiling names them (weights marked)."""
    main = prepack.mark_layout_free(mod)["main"]
    return [b.value.args[0].name_hint for blk in main.body.blocks for b in blk.bindings]


class _Records:
    """Records given by hand: ``{(variant, call index): us}`` (what a KernelDB answers)."""

    def __init__(self, mod, times: dict):
        names = _kernel_names(mod)
        self.times = {(variant, names[k]): us for (variant, k), us in times.items()}
        self.target = _tvm.make_target(host_target(2))

    def best_us(self, variant, func, name="main"):  # noqa: ARG002  (KernelDB's signature)
        return self.times.get((variant, name))


A_PAR, A_SER, B_PAR, B_SER = 10.0, 25.0, 20.0, 30.0  # a gains nothing alone, b does
BOTH = {("parallel", 0): A_PAR, ("serial", 0): A_SER, ("parallel", 1): B_PAR,
        ("serial", 1): B_SER}


def test_side_by_side_the_work_bounds_it():
    mod = _two_convs(chain=False)
    ceiling = concurrency_ceiling(mod, _Records(mod, BOTH))
    assert ceiling.cores == 2 and ceiling.calls == 3 and ceiling.untimed == 1  # the concat
    assert ceiling.sequential_us == A_PAR + B_PAR
    assert ceiling.work_us == (min(2 * A_PAR, A_SER) + min(2 * B_PAR, B_SER)) / 2  # 25
    assert ceiling.critical_path_us == max(A_PAR, B_PAR)  # 20
    assert ceiling.ratio == pytest.approx(30 / 25)
    assert "ceiling 1.20x" in str(ceiling) and ceiling.as_dict()["bound_us"] == 25


def test_in_a_chain_nothing_is_won():
    mod = _two_convs(chain=True)
    ceiling = concurrency_ceiling(mod, _Records(mod, BOTH))
    assert ceiling.critical_path_us == A_PAR + B_PAR
    assert ceiling.ratio == 1.0


def test_a_packed_record_counts_where_faster_and_a_missing_serial_one_gains_nothing():
    mod = _two_convs(chain=False)
    packed = concurrency_ceiling(mod, _Records(mod, {**BOTH, ("serial-packed", 0): 12.0,
                                                     ("packed", 1): 18.0}))
    assert packed.sequential_us == A_PAR + 18.0
    assert packed.work_us == (12.0 + B_SER) / 2
    alone = concurrency_ceiling(mod, _Records(mod, {k: v for k, v in BOTH.items()
                                                    if k != ("serial", 1)}))
    assert alone.no_serial == 1 and alone.work_us == (2 * A_PAR + 2 * B_PAR) / 2


def test_more_cores_lower_the_work_bound():
    mod = _two_convs(chain=False)
    ceiling = concurrency_ceiling(mod, _Records(mod, BOTH), cores=4)
    assert ceiling.work_us == (min(4 * A_PAR, A_SER) + min(4 * B_PAR, B_SER)) / 4
    assert ceiling.bound_us == ceiling.critical_path_us == B_PAR


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    kernels = KernelDB(tmp_path_factory.mktemp("kdb"), host_target(), create=True)
    tune_kernels(_two_convs(chain=False, fused=False), kernels, variants=("parallel", "serial"), trials=4,
                 min_repeat_ms=1)
    return kernels


def test_real_records_are_read_under_the_names_the_build_uses(tuned):
    mod = _two_convs(chain=False)
    ceiling = concurrency_ceiling(mod, tuned)
    convs = [(gv, f) for gv, f in prepack.kernels_of(mod) if "conv" in gv.name_hint]
    assert len(convs) == 2 and ceiling.untimed == 1 and ceiling.no_serial == 0
    assert ceiling.sequential_us == pytest.approx(sum(
        tuned.best_us("parallel", f, gv.name_hint) for gv, f in convs))
    assert 0 < ceiling.bound_us <= ceiling.sequential_us * 2
