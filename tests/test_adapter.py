"""The adapter rule: only ``tvm_ios/_tvm.py`` imports TVM's moving parts.

Moving parts are the modules TVM renamed or moved in recent releases (:data:`MOVING`); the
stable core (``tvm``, ``tvm.relax``, ``tvm.ir``, ``tvm.transform``) may be imported anywhere.
Every module under ``tvm_ios/`` is parsed; an ``import`` of a moving part, or an attribute
path such as ``tvm.runtime.tensor`` on the ``tvm`` module, breaks the rule.
"""
import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "tvm_ios"
MOVING = ("tvm.tirx", "tvm.tir", "tvm.s_tir", "tvm.meta_schedule", "tvm.dlight", "tvm_ffi",
          "tvm.runtime", "tvm.target", "tvm.support", "tvm.contrib", "tvm.rpc", "tvm.script",
          "tvm.base", "tvm.te", "tvm.topi")
#: Modules that run where only TVM's runtime is installed (the GPU host of a benchmark
#: pack): ``_tvm`` imports the compiler (``tvm.relax``), so they import the runtime directly
#: and must never import ``_tvm``.
RUNTIME_ONLY = {"bench/run.py", "runtime/vm_checks.py"}


def _moving(name: str) -> bool:
    return any(name == m or name.startswith(m + ".") for m in MOVING)


def _dotted(node) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None


def violations(source: str) -> list[str]:
    """``line: name`` of each use of a moving part in a module's source."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if _moving(a.name)]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [f"{node.module}.{a.name}" for a in node.names]
            if _moving(node.module) or any(_moving(n) for n in names):
                found.append(f"{node.lineno}: from {node.module} import "
                             f"{', '.join(a.name for a in node.names)}")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == "tvm" and _moving(f"tvm.{node.attr}"):
            found.append(f"{node.lineno}: {_dotted(node)}")
    return found


def _modules():
    return sorted(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("module", [m for m in _modules() if m != "_tvm.py"])
def test_only_the_adapter_imports_moving_parts(module):
    found = violations((PACKAGE / module).read_text())
    if module in RUNTIME_ONLY:
        assert "_tvm" not in {a.name for n in ast.walk(ast.parse((PACKAGE / module).read_text()))
                              if isinstance(n, ast.ImportFrom) for a in n.names}, \
            f"{module} runs with TVM's runtime only and cannot import _tvm"
        return
    assert not found, (f"tvm_ios/{module} imports TVM's moving parts directly; reach them "
                       f"through tvm_ios/_tvm.py: {found}")


def test_the_check_sees_each_form():
    source = ("import tvm_ffi\nfrom tvm import tirx, relax\nfrom tvm.script import tirx as T\n"
              "import tvm\nx = tvm.runtime.tensor\ny = tvm.relax.Var\nz = tvm.ir.Op\n"
              "from tvm.relax import op\nfrom .._tvm import tvm_ffi\n")
    assert [v.split(":")[0] for v in violations(source)] == ["1", "2", "3", "5"]


def test_the_adapter_provides_what_the_modules_use():
    from tvm_ios import _tvm

    for name in ("tirx", "s_tir", "s_tir_pipeline", "dlight", "ms", "T", "nvcc", "tvm_ffi",
                 "DataType", "Target"):
        assert getattr(_tvm, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _tvm.nothing  # noqa: B018
