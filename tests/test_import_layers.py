"""Layers go one way: the import graph of ``tvm_ios`` against the layer order (one place).

Every ``import``/``from ... import`` of a ``tvm_ios`` module, at any depth of a module (lazy
imports inside functions count), is an edge between two layers; an edge must be listed in
:data:`ALLOWED`, and :data:`ALLOWED` itself must have no cycle. The package's
``__init__`` (lazy re-exports by name) is the facade above everything and is not checked.
"""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "tvm_ios"

#: Module prefix -> layer (the longest matching prefix wins).
LAYER_OF = {
    "tvm_ios._tvm": "adapter", "tvm_ios.__version__": "adapter",
    "tvm_ios.hardware": "devices",           # hardware presets, plain data
    "tvm_ios.graph": "graph",                    # the op graph
    "tvm_ios.models": "models",                  # the model zoo (Relax modules)
    "tvm_ios.schedule": "schedule",              # the schedulers decide, return plain data
    "tvm_ios.cost.pricing": "estimators",           # the cost-model protocol and the roofline:
    "tvm_ios.cost.analytical": "estimators",     # implement it, injected into the scheduler
    "tvm_ios.graphturbo": "graphturbo",          # GraphTurbo's plan (sizes, order, binding)
    "tvm_ios.kernels": "kernels",                # rPrograms and their codegen
    "tvm_ios.tuning": "tuning",                  # tuned kernels: databases, search, cache
    "tvm_ios.runtime": "runtime",                # build, run, compare
    "tvm_ios.passes": "passes",                  # apply schedules, rPrograms, plans
    "tvm_ios.cost": "measured",                  # measured cost: builds stage modules
    "tvm_ios.pipelining": "pipelines",            # Shisha pipelines over execution places
    "tvm_ios.plot": "plot", "tvm_ios.testing": "testing",
    "tvm_ios.testing.fuzz": "fuzz",              # the differential fuzzer: drives all below
    "tvm_ios.testing.faults": "faults",          # faults: the command line in subprocesses
    "tvm_ios.bench": "bench",                    # GPU benchmark artifacts, provenance
    "tvm_ios.relax_pipeline": "pipeline", "tvm_ios.relax_pipeline.steps": "pipeline",  # the "ios"
    "tvm_ios._autoload": "pipeline",             # Relax pipelines
    "tvm_ios.torch_compile": "pipeline",         # torch.compile through a pipeline
    "tvm_ios.cli": "cli",
}
_BASE = {"adapter", "devices"}
#: Layer -> the layers it may import. The one place the layer order is written down.
ALLOWED = {
    "adapter": set(),
    "devices": {"adapter"},
    "graph": {"adapter"},
    "models": {"adapter"},
    "schedule": {"graph"},
    "estimators": _BASE | {"graph", "schedule"},
    "graphturbo": _BASE | {"graph"},
    "kernels": _BASE | {"graph", "schedule", "graphturbo"},  # (graphturbo plans, as schedule)
    "tuning": _BASE | {"graph", "schedule", "graphturbo", "kernels", "runtime"},  # (runtime:
    # RPC to the devices that time tuning candidates)
    "runtime": {"adapter"},
    "passes": _BASE | {"graph", "schedule", "estimators", "graphturbo", "kernels", "tuning"},
    "measured": _BASE | {"graph", "schedule", "estimators", "passes", "kernels", "tuning",
                         "runtime"},
    "pipelines": _BASE | {"graph", "models", "estimators", "passes", "runtime"},
    "plot": {"schedule"},
    "testing": {"adapter"},
    "bench": _BASE | {"graph", "models", "schedule", "estimators", "passes", "kernels",
                      "tuning", "runtime", "measured"},
    "pipeline": _BASE | {"graph", "models", "schedule", "estimators", "graphturbo", "kernels",
                         "tuning", "runtime", "passes", "measured"},
}
ALLOWED["faults"] = _BASE | {"tuning"}  # (a kernel database to damage)
ALLOWED["fuzz"] = set(ALLOWED)
ALLOWED["cli"] = set(ALLOWED) - {"cli"}
#: Edges that break the order today, each with who removes it; listed edges must exist
#: (remove an entry when its edge is gone).
KNOWN_VIOLATIONS: dict = {}


def layer_of(module: str) -> str:
    """The layer of a dotted ``tvm_ios`` module name."""
    matches = [p for p in LAYER_OF if module == p or module.startswith(p + ".")]
    if not matches:
        raise KeyError(f"{module} is in no layer: add it to LAYER_OF in tests/test_import_layers.py")
    return LAYER_OF[max(matches, key=len)]


def _imports(path: Path, module: str):
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.split(".")[0] == "tvm_ios")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base.split(".")[0] == "tvm_ios":
                # "from .. import _tvm" names a module; "from ..x import y" a name of x
                yield from (f"{base}.{a.name}" if not node.module or base == "tvm_ios"
                            else base for a in node.names)


def import_edges() -> dict[tuple[str, str], set[str]]:
    """``(from layer, to layer) -> files`` for every import across layers."""
    edges: dict[tuple[str, str], set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        module = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        if module == "tvm_ios":
            continue
        for target in _imports(path, module):
            src, dst = layer_of(module), layer_of(target)
            if src != dst:
                edges.setdefault((src, dst), set()).add(rel.as_posix() + ".py")
    return edges


def test_every_import_follows_the_layer_order():
    wrong = {edge: sorted(files) for edge, files in import_edges().items()
             if edge[1] not in ALLOWED[edge[0]] and edge not in KNOWN_VIOLATIONS}
    assert not wrong, f"imports against the layer order (see ALLOWED): {wrong}"


def test_known_violations_are_still_real():
    edges = import_edges()
    gone = [edge for edge in KNOWN_VIOLATIONS if edge not in edges]
    assert not gone, f"fixed, remove from KNOWN_VIOLATIONS: {gone}"


def test_the_layer_order_goes_one_way():
    state: dict[str, str] = {}

    def visit(layer, path):
        if state.get(layer) == "done":
            return
        assert state.get(layer) != "open", f"cycle in ALLOWED: {' -> '.join(path + [layer])}"
        state[layer] = "open"
        for below in ALLOWED[layer]:
            visit(below, path + [layer])
        state[layer] = "done"

    for layer in ALLOWED:
        visit(layer, [])
    assert set(LAYER_OF.values()) == set(ALLOWED)


def test_an_upward_import_is_caught(tmp_path, monkeypatch):
    fake = tmp_path / "tvm_ios"
    (fake / "schedule").mkdir(parents=True)
    (fake / "schedule" / "x.py").write_text("from ..passes.ios_pass import IOSPass\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
    assert import_edges() == {("schedule", "passes"): {"tvm_ios/schedule/x.py"}}
