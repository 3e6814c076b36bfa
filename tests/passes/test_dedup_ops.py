"""DedupOps: a repeated operator call computed once; checked as IR, by count and by running."""
import numpy as np
import tvm
from tvm.script import ir as I
from tvm.script import relax as R

from tvm_ios import _tvm, models
from tvm_ios.tuning.kernel_db import KernelDB, host_target
from tvm_ios.tuning.search import tune_kernels
from tvm_ios.passes.dedup_ops import DedupOps, dedup_for_kernels, op_calls
from tvm_ios.runtime.compare import compare_modules
from tvm_ios.testing import dead_taps_model, repeated_calls_model


@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor((1, 4, 6, 6), "float32"), w: R.Tensor((4, 4, 3, 3), "float32")):
        with R.dataflow():
            a = R.nn.relu(x)
            b = R.nn.relu(x)  # the same call as a: a NASNet-A branch's own ReLU of its input
            p = R.nn.avg_pool2d(x, pool_size=[3, 3], padding=[1, 1, 1, 1])
            q = R.nn.avg_pool2d(x, pool_size=[3, 3], padding=[1, 1, 1, 1])
            m = R.nn.max_pool2d(x, pool_size=[3, 3], padding=[1, 1, 1, 1])  # not a repeat
            c = R.nn.conv2d(a, w, padding=[1, 1, 1, 1])
            d = R.nn.conv2d(b, w, padding=[0, 0, 0, 0])  # its own padding: kept
            y = R.concat([c, R.add(p, q), m], axis=1)
            R.output(y, d)
        return (y, d)


@I.ir_module
class Expected:
    @R.function
    def main(x: R.Tensor((1, 4, 6, 6), "float32"), w: R.Tensor((4, 4, 3, 3), "float32")):
        with R.dataflow():
            a = R.nn.relu(x)
            p = R.nn.avg_pool2d(x, pool_size=[3, 3], padding=[1, 1, 1, 1])
            m = R.nn.max_pool2d(x, pool_size=[3, 3], padding=[1, 1, 1, 1])
            c = R.nn.conv2d(a, w, padding=[1, 1, 1, 1])
            d = R.nn.conv2d(a, w, padding=[0, 0, 0, 0])
            y = R.concat([c, R.add(p, p), m], axis=1)
            R.output(y, d)
        return (y, d)


def _normalized(mod):
    return tvm.relax.transform.Normalize()(mod)


def test_before_expected():
    dedup = DedupOps()
    tvm.ir.assert_structural_equal(dedup(_normalized(Before)), _normalized(Expected))
    assert dedup.removed == {"relax.nn.avg_pool2d": 1, "relax.nn.relu": 1}
    assert dedup.total == 2


def test_nothing_repeated_is_left_as_it_is():
    dedup = DedupOps()
    expected = _normalized(Expected)
    assert dedup(expected).same_as(expected)
    assert dedup.removed == {} and dedup.total == 0


def test_op_calls_counts_by_operator():
    counts = op_calls(_normalized(Before))
    assert counts["relax.nn.relu"] == 2 and counts["relax.nn.conv2d"] == 2
    assert counts["relax.nn.max_pool2d"] == 1


def test_deduplicated_module_computes_the_same():
    rng = np.random.default_rng(0)
    params = {"w": rng.standard_normal((4, 4, 3, 3)).astype("float32")}
    result = compare_modules(_normalized(Before), DedupOps()(_normalized(Before)), params)
    assert result.max_abs_diff == 0.0  # the same arithmetic, once


def test_nasnet_a_repeats_relus_and_pools_and_runs_the_same():
    mod, params = models.get("nasnet_a", image_size=8, calibrate=False, stem_filters=8,
                             penultimate_filters=96)
    bound = _tvm.bind_params(mod, params)
    dedup = DedupOps()
    deduped = dedup(bound)
    # per normal cell: `left` relu'd by 3 branches, `right` by 2, `left` averaged twice; a
    # cell's output relu'd by the next two cells
    assert dedup.removed["relax.nn.relu"] > 60
    assert dedup.removed["relax.nn.avg_pool2d"] >= 12
    assert sum(op_calls(deduped).values()) == sum(op_calls(bound).values()) - dedup.total
    result = compare_modules(bound, deduped)
    assert result.max_abs_diff <= 1e-6 * max(1.0, result.max_abs_value)


def test_a_database_without_the_deduplicated_kernels_keeps_the_repeats(tmp_path, caplog):
    bound = repeated_calls_model()
    assert isinstance(dedup_for_kernels(bound), DedupOps)  # no database: computed once
    kernels = KernelDB(tmp_path, host_target(), create=True)
    tune_kernels(bound, kernels, variants=("parallel",), trials=2, cover=2, min_repeat_ms=1)
    # computed once, the one ReLU is the 1x1 convolution's only reader: fused into its
    # kernel, a convolution with a ReLU epilogue the database has no record of
    assert dedup_for_kernels(bound, kernels) is None
    assert "lacks tuned kernels for the kernels fused once repeated calls" in caplog.text
    assert isinstance(dedup_for_kernels(bound, kernels, cover=2), DedupOps)  # tuned then
    tune_kernels(DedupOps()(bound), kernels, variants=("parallel",), trials=0, cover=2,
                 min_repeat_ms=1)
    assert isinstance(dedup_for_kernels(bound, kernels), DedupOps)


def test_nothing_repeated_needs_no_pass():
    assert dedup_for_kernels(dead_taps_model()) is None
