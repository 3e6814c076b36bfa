"""Fixtures of the cost tests: tiny Inception-like models, one measurer per session."""
import pytest
from cost_models import inception_like

from tvm_ios.cost.stage_timing import MeasureSettings, Measurer

FAST = MeasureSettings(number=1, repeat=2, warmup=1, timeout_s=60, build_workers=2,
                       batch_size=64)


@pytest.fixture(scope="session")
def measurer():  # the runner pool starts once per session
    """A LocalRunner measurer on llvm (number=1, repeat=2)."""
    m = Measurer("llvm", settings=FAST)
    yield m
    m.close()


@pytest.fixture(scope="session")
def tiny():
    """Two identical Inception-like blocks, 8 channels, 8x8, constant weights."""
    return inception_like(channels=8, size=8, blocks=2)[0]


@pytest.fixture(scope="session")
def make_model():
    """The builder of the Inception-like test models (see :func:`inception_like`)."""
    return inception_like
