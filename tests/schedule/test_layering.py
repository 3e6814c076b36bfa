"""Layers go one way: nothing in the op graph or the schedulers imports what sits above."""
import ast
from pathlib import Path

import pytest

import tvm_ios

ROOT = Path(tvm_ios.__file__).parent
ABOVE = ("cost", "passes", "kernels", "cli", "runtime", "pipeline", "pipelines", "bench")


def _imports(path: Path) -> list[str]:
    """Absolute module names a file imports (relative imports resolved)."""
    package = ["tvm_ios"] + list(path.relative_to(ROOT).parent.parts)
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            out += [module] + [f"{module}.{alias.name}" for alias in node.names]
    return out


@pytest.mark.parametrize("layer", ["graph", "schedule"])
def test_lower_layers_import_nothing_above_them(layer):
    files = sorted((ROOT / layer).glob("*.py"))
    assert files
    bad = {f"{path.name}: {name}" for path in files for name in _imports(path)
           if any(name == f"tvm_ios.{up}" or name.startswith(f"tvm_ios.{up}.")
                  for up in ABOVE)}
    assert not bad, f"{layer} imports from a higher layer: {sorted(bad)}"


def test_the_check_sees_relative_imports(tmp_path):
    probe = ROOT / "schedule" / "ios.py"
    assert "tvm_ios.schedule.cost_protocol" in _imports(probe)
    assert "tvm_ios.graph.opgraph.OpGraph" in _imports(probe)
