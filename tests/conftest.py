"""Shared pytest configuration: markers and device detection.

Markers: ``slow`` (full-size models, long builds; deselect with ``-m "not slow"``) and
``gpu`` (needs a CUDA device; skipped where none is present).
"""
import pytest


def _has_cuda() -> bool:
    try:
        import tvm

        return bool(tvm.cuda(0).exist)
    except Exception:  # noqa: BLE001  (no CUDA runtime at all)
        return False


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: full-size models or long builds")
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped without one")


def pytest_collection_modifyitems(config, items):
    if _has_cuda():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU on this machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
