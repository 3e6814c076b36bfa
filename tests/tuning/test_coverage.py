"""A build meets a kernel its database lacks: named in a warning, or tuned there (cover).

Real tuning, tiny: two convolutions (1x1 and 3x3), a database that holds one of them.
"""
import logging
import shutil

import numpy as np
import pytest
import tvm

from tvm_ios import pipeline
from tvm_ios.tuning.coverage import apply_covered, untuned_anchors
from tvm_ios.tuning.kernel_db import KernelDB, host_target
from tvm_ios.kernels.tuned_build import apply_kernels
from tvm_ios.tuning.search import tune_kernels
from tvm_ios.tuning.tasks import kernel_tasks, untuned_tasks
from tvm_ios.runtime.compare import random_inputs, run
from tvm_ios.testing import dag_model


@pytest.fixture(scope="module")
def _tuned_once(tmp_path_factory):
    two = dag_model(seed=0, num_ops=2, channels=8, size=8, p=0.0)[0]
    kernels = KernelDB(tmp_path_factory.mktemp("kdb"), host_target(), create=True)
    # meta_schedule's warm-up round spends a budget of 2 on the first task only
    tune_kernels(two, kernels, variants=("parallel",), trials=2, cover=0, min_repeat_ms=1)
    return two, kernels.path


@pytest.fixture
def half_tuned(_tuned_once, tmp_path):
    """The model and (a copy of) a database with a record of one of its two convolutions."""
    two, path = _tuned_once
    shutil.copytree(path, tmp_path / "kdb")
    kernels = KernelDB(tmp_path / "kdb")
    assert len(untuned_tasks(kernel_tasks(two, kernels, "parallel"), kernels, "parallel")) == 1
    return two, kernels


def test_untuned_anchors_names_the_convolutions_without_a_schedule(half_tuned):
    two, kernels = half_tuned
    untuned = untuned_anchors(apply_kernels(two, None, kernels.target))
    assert len(untuned) == 2 and all("conv2d" in name for name in untuned)
    left = untuned_anchors(apply_kernels(two, kernels))
    assert len(left) == 1 and left[0] in untuned


def test_without_cover_the_kernel_is_named_and_built_untuned(half_tuned, caplog):
    two, kernels = half_tuned
    records = kernels.num_records("parallel")
    with caplog.at_level(logging.WARNING, logger="tvm_ios.tuning.coverage"):
        out = apply_covered(two, kernels, cover=0)
    [name] = untuned_anchors(out)
    assert name in caplog.text and "cover" in caplog.text
    assert kernels.num_records("parallel") == records  # nothing tuned


def test_cover_tunes_the_missing_kernel_into_the_database(half_tuned, caplog):
    two, kernels = half_tuned
    missing = untuned_anchors(apply_kernels(two, kernels))
    report: dict = {}
    with caplog.at_level(logging.WARNING, logger="tvm_ios.tuning.coverage"):
        out = apply_covered(two, kernels, cover=2, report=report)
    assert untuned_anchors(out) == [] and "untuned" not in caplog.text
    assert report["kernels"] == missing and report["trials"] >= 2
    assert untuned_tasks(kernel_tasks(two, kernels, "parallel"), kernels, "parallel") == []
    assert (kernels.path / "parallel" / "database_tuning_record.json.xz").is_file()
    x = random_inputs(two)
    ref = run(tvm.compile(apply_kernels(two, None, kernels.target), kernels.target), x)
    np.testing.assert_allclose(run(tvm.compile(out, kernels.target), x), ref,
                               rtol=1e-4, atol=1e-4)


def test_the_ios_pipeline_covers_what_its_build_lacks(half_tuned):
    two, kernels = half_tuned
    ios = pipeline(engine="stages", kernels=kernels, cover=2)
    tvm.compile(two, kernels.target, relax_pipeline=ios)
    tuned = ios.report["tuned_kernels"]
    assert tuned["tuned"] >= 2  # both convolutions
    with pytest.raises(ValueError, match="cover"):
        pipeline(kernels=kernels, cover=-1)
