"""Shared pytest configuration: markers, device detection and small Relax fixtures.

Markers: ``slow`` (full-size models, long builds; deselect with ``-m "not slow"``),
``gpu`` (needs a CUDA device; skipped where none is present, failed instead where
``TVM_IOS_REQUIRE_GPU=1``) and ``torch`` (needs PyTorch,
which the ``test`` extra does not install: its modules skip, naming the install, unless
``TVM_IOS_REQUIRE_TORCH=1`` says this is the torch tier, where a missing torch stops the run).
"""
import importlib.util
import os

import numpy as np
import pytest
from tvm import relax

#: Set to 1 on a GPU host: tests marked ``gpu`` fail, not skip, when no GPU is found.
REQUIRE_GPU_ENV = "TVM_IOS_REQUIRE_GPU"


def _has_cuda() -> bool:
    try:
        import tvm

        return bool(tvm.cuda(0).exist)
    except Exception:  # noqa: BLE001  (no CUDA runtime at all)
        return False


def pytest_configure(config):
    # TVM's thread pool is sized when first used, and by default pins the process to core 0
    # with one worker; the CPU vDevice tests need two (programs of 2 vEUs that wait on each
    # other). Set here for every test, before any creates the pool (tests/passes/
    # the ``two_workers`` fixture selects and checks it).
    os.environ.setdefault("TVM_NUM_THREADS", "2")
    config.addinivalue_line("markers", "slow: full-size models or long builds")
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped without one")
    config.addinivalue_line("markers", "torch: needs PyTorch (pip install -e '.[test,torch]')")
    if os.environ.get("TVM_IOS_REQUIRE_TORCH") == "1" and importlib.util.find_spec("torch") is None:
        pytest.exit("TVM_IOS_REQUIRE_TORCH=1 (the torch tier) but PyTorch is not installed: "
                    "pip install -e '.[test,torch]'", returncode=2)


def pytest_collection_modifyitems(config, items):
    """Tests marked ``gpu`` skip without a CUDA GPU, or fail where ``TVM_IOS_REQUIRE_GPU=1``
    says this run is on a GPU host (so that a GPU run cannot pass having run nothing). The
    marker is read with ``get_closest_marker``: ``item.keywords`` also holds the names of
    the directories above the test (a checkout named ``gpu`` would match)."""
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu_items or _has_cuda():
        return
    if os.environ.get(REQUIRE_GPU_ENV) == "1":
        return  # pytest_runtest_setup fails them
    for item in gpu_items:
        item.add_marker(pytest.mark.skip(reason="no CUDA GPU on this machine"))


def pytest_runtest_setup(item):
    """A test marked ``gpu`` fails in its setup where TVM_IOS_REQUIRE_GPU=1 and no GPU is
    found."""
    if (item.get_closest_marker("gpu") is not None
            and os.environ.get(REQUIRE_GPU_ENV) == "1" and not _has_cuda()):
        pytest.fail(f"{REQUIRE_GPU_ENV}=1 but no CUDA GPU is found (tvm.cuda(0) does not "
                    "exist; check nvidia-smi and that TVM's CUDA runtime loads)")


@pytest.fixture(autouse=True)
def _pool_restored():
    """TVM's thread pool as each test found it: a test (or the code it runs, e.g. a
    benchmark column timed at one thread) may resize the pool of the main thread, and the
    next test in the same worker would see that size."""
    from tvm_ios import _tvm
    from tvm_ios.kernels.vdevice import pool_threads

    before = pool_threads()
    yield
    if pool_threads() != before:
        _tvm.config_threads(before)


@pytest.fixture
def two_workers():
    """Two workers in TVM's thread pool for the test (programs of 2 vEUs and step waits,
    the whole-model judge), as many as the pool allows (its size at creation: the cores or
    TVM_NUM_THREADS); restored after by ``_pool_restored``."""
    from tvm_ios import _tvm
    from tvm_ios.kernels.vdevice import pool_threads

    _tvm.config_threads(2)
    assert pool_threads() == 2


@pytest.fixture
def oclgrind():
    """Skip, with the reason, where the Oclgrind OpenCL simulator (or pyopencl) is missing;
    fail instead where ``TVM_IOS_REQUIRE_OCLGRIND=1`` (CI sets it), so that the simulator
    tests never vanish silently."""
    from tvm_ios.kernels.simulation.oclgrind import REQUIRE_ENV, oclgrind_missing

    missing = oclgrind_missing()
    if missing and os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1 but {missing}")
    if missing:
        pytest.skip(missing)


def conv_block(bb, inp, out_ch, kernel, padding, name, rng, relu=True):
    """conv2d + per-channel bias add (+ relu), the zoo's unit pattern."""
    in_ch = int(inp.ty.shape[1].value)
    w = relax.const(rng.standard_normal((out_ch, in_ch, *kernel)).astype("float32"))
    b = relax.const(rng.standard_normal((1, out_ch, 1, 1)).astype("float32"))
    y = bb.emit(relax.op.nn.conv2d(inp, w, padding=padding), name_hint=name)
    y = bb.emit(relax.op.add(y, b), name_hint=name + "_bias")
    return bb.emit(relax.op.nn.relu(y), name_hint=name + "_relu") if relu else y


@pytest.fixture
def inception_like():
    """stem -> {1x1, 1x3, 3x1, maxpool} -> concat -> 1x1, with a 3x3 after the 1x3 branch."""
    rng = np.random.default_rng(0)
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 8, 12, 12), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            s = conv_block(bb, x, 8, (3, 3), (1, 1), "stem", rng)
            a = conv_block(bb, s, 4, (1, 1), (0, 0), "a", rng)
            b = conv_block(bb, s, 4, (1, 3), (0, 1, 0, 1), "b", rng)
            c = conv_block(bb, s, 6, (3, 1), (1, 0, 1, 0), "c", rng)
            p = bb.emit(relax.op.nn.max_pool2d(s, (3, 3), padding=(1, 1)), name_hint="pool")
            d = conv_block(bb, b, 4, (3, 3), (1, 1), "d", rng)
            cat = bb.emit(relax.op.concat([a, d, c, p], axis=1), name_hint="cat")
            e = conv_block(bb, cat, 8, (1, 1), (0, 0), "e", rng)
            gv = bb.emit_output(e)
        bb.emit_func_output(gv)
    return bb.get()
