"""The kernel roofline: hand-checked on two convolutions and a concatenation with records
given, then on a matmul's rank-2 output and on bad rates."""
import numpy as np
import pytest
from hand_records import HandRecords, kernel_names, two_convs
from tvm import relax

from tvm_ios.tuning.kernel_db import host_target
from tvm_ios.tuning.roofline import NO_WEIGHTS, OTHER, kernel_roofline
from tvm_ios.kernels.tuned_build import fuse_for_tuning

# a: 1x1, 8 -> 8 on an 8x8 map; b: 3x3, 8 -> 8, padded, on the same map (float32)
A_BYTES, B_BYTES = 8 * 8 * 4, 8 * 8 * 9 * 4
A_FLOPS, B_FLOPS = 2 * 8 * 64 * 8, 2 * 8 * 64 * 8 * 9
RECORDS = {("parallel", 0): 10.0, ("parallel", 1): 20.0}


def _by_output(groups) -> dict:
    return {g.output: g for g in groups}


def test_memory_bound_rates_give_the_weights_time():
    mod = two_convs(chain=False)
    groups = _by_output(kernel_roofline(mod, HandRecords(mod, RECORDS), gbps=0.1, gflops=1e3))
    assert set(groups) == {"8x8", NO_WEIGHTS}
    convs = groups["8x8"]
    assert (convs.calls, convs.untimed, convs.weight_bytes) == (2, 0, A_BYTES + B_BYTES)
    assert convs.flops == A_FLOPS + B_FLOPS
    assert convs.record_us == 30.0
    assert convs.roofline_us == pytest.approx((A_BYTES + B_BYTES) / 100)  # 0.1 GB/s: 100 B/us
    assert convs.gap_us == pytest.approx(30.0 - 25.6)
    concat = groups[NO_WEIGHTS]
    assert (concat.calls, concat.untimed, concat.roofline_us, concat.weight_bytes) == (1, 1, 0, 0)


def test_compute_bound_rates_give_the_arithmetic_time_and_the_largest_gap_comes_first():
    mod = two_convs(chain=True)
    groups = kernel_roofline(mod, HandRecords(mod, RECORDS), gbps=1e3, gflops=10.0)
    assert groups[0].output == "8x8"
    assert groups[0].roofline_us == pytest.approx((A_FLOPS + B_FLOPS) / 1e4)  # 7.37 us
    assert groups[0].as_dict()["gap_us"] == round(30.0 - (A_FLOPS + B_FLOPS) / 1e4, 1)


def test_a_call_without_a_record_counts_as_untimed():
    mod = two_convs(chain=False)
    groups = _by_output(kernel_roofline(mod, HandRecords(mod, {("parallel", 1): 20.0}),
                                        gbps=0.1, gflops=1e3))
    assert groups["8x8"].untimed == 1 and groups["8x8"].record_us == 20.0


def test_a_matmul_is_grouped_apart_and_bad_rates_are_refused():
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 16), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(relax.op.matmul(x, relax.const(np.ones((16, 4), "float32"))))
        bb.emit_func_output(out)
    mod = fuse_for_tuning(bb.get(), host_target())
    assert len(kernel_names(mod)) == 1 and "matmul" in kernel_names(mod)[0]
    (group,) = kernel_roofline(mod, HandRecords(mod, {("parallel", 0): 1.0}), 1.0, 1.0)
    assert group.output == OTHER and group.weight_bytes == 16 * 4 * 4
    assert group.flops == 2 * 16 * 4
    with pytest.raises(ValueError, match="rates must be positive"):
        kernel_roofline(mod, HandRecords(mod, {}), 0.0, 1.0)
