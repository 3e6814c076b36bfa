"""The benchmark scripts import only names that exist (they run rarely, so a rename on main
would otherwise surface in the middle of an hour-long run)."""
import ast
import importlib
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def missing_names(source: str) -> list[str]:
    """``module.name`` of every absolute ``from tvm_ios... import name`` that does not resolve
    (imports inside functions included)."""
    missing = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                and node.module.split(".")[0] == "tvm_ios"):
            continue
        try:
            module = importlib.import_module(node.module)
        except ImportError:
            missing.append(node.module)
            continue
        for alias in node.names:
            if not hasattr(module, alias.name):
                try:
                    importlib.import_module(f"{node.module}.{alias.name}")
                except ImportError:
                    missing.append(f"{node.module}.{alias.name}")
    return missing


@pytest.mark.parametrize("script", sorted(p.name for p in BENCHMARKS.glob("*.py")))
def test_benchmark_imports_resolve(script):
    assert missing_names((BENCHMARKS / script).read_text()) == []


def test_a_renamed_name_is_found():
    source = "def f():\n    from tvm_ios.runtime.compare import _flatten\n"
    assert missing_names(source) == ["tvm_ios.runtime.compare._flatten"]
