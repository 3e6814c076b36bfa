"""Self-contained reproducer directory of one fuzzer finding.

``write_reproducer(out_dir, spec, record)`` writes ``DIR/<pipeline>-seed<seed>/``:

- ``mod.py``: the module as TVMScript (``mod.script()``), weights as parameters;
- ``params.npz``: the weights (bound by name);
- ``spec.json``: the op spec, the seed, the pipeline, the record (status, difference, error);
- ``run.py``: ``python run.py`` parses ``mod.py``, builds it with TVM's default pipeline and
  with the pipeline, runs both on the seed's random input and exits 1 if they still differ
  (or the build crashes), 0 once fixed.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from ..random_cnn import build_cnn

__all__ = ["write_reproducer", "RUN_PY"]

RUN_PY = '''"""Re-check a tvm-ios fuzzer finding: exit 1 while it reproduces, 0 once fixed."""
import json
import re
import sys
from pathlib import Path

import numpy as np
import tvm
from tvm.script import from_source

from tvm_ios import _tvm
from tvm_ios._autoload import autoload
from tvm_ios.runtime.compare import build, compare_executables, random_inputs
from tvm_ios.testing.fuzz.check import resolve_pipeline

HERE = Path(__file__).resolve().parent


def main() -> int:
    info = json.loads((HERE / "spec.json").read_text())
    mod = from_source((HERE / "mod.py").read_text())
    params = dict(np.load(HERE / "params.npz"))
    autoload()
    target = tvm.target.Target("llvm")
    inputs = random_inputs(_tvm.bind_params(mod, params), seed=info["seed"])
    reference = build(mod, target, params)
    try:
        exe = build(mod, target, params, pipeline=resolve_pipeline(info["pipeline"]))
        cmp = compare_executables(reference, exe, inputs)
    except Exception as err:  # noqa: BLE001
        print(f"{info['pipeline']}: crash: {type(err).__name__}: {str(err).strip()[-300:]}")
        return 1
    rel = cmp.max_abs_diff / max(cmp.max_abs_value, 1e-6)
    print(f"{info['pipeline']}: max |diff| {cmp.max_abs_diff:.3g} (relative {rel:.3g})")
    return 0 if rel <= info["tolerance"] else 1


if __name__ == "__main__":
    sys.exit(main())
'''


def write_reproducer(out_dir, spec: dict, record: dict, tolerance: float) -> Path:
    """Write the reproducer of ``record`` (found on ``spec``); returns its directory."""
    mod, params = build_cnn(spec)
    path = Path(out_dir) / (re.sub(r"[^A-Za-z0-9_.-]", "_", record["pipeline"])
                            + f"-seed{record['seed']}")
    path.mkdir(parents=True, exist_ok=True)
    (path / "mod.py").write_text(mod.script())
    np.savez(path / "params.npz", **params)
    info = {"seed": record["seed"], "pipeline": record["pipeline"], "tolerance": tolerance,
            "record": record, "spec": spec}
    (path / "spec.json").write_text(json.dumps(info, indent=1, default=list) + "\n")
    (path / "run.py").write_text(RUN_PY)
    return path
