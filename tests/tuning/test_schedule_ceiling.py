"""The concurrency ceiling: hand-checked on two convolutions, side by side or in a chain,
with records given; then on records TVM's tuner measured."""
import pytest
from hand_records import HandRecords as _Records
from hand_records import two_convs as _two_convs

from tvm_ios.kernels import prepack
from tvm_ios.tuning.schedule_ceiling import concurrency_ceiling
from tvm_ios.tuning.kernel_db import KernelDB, host_target
from tvm_ios.tuning.search import tune_kernels


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
