"""``tvm-ios build`` then ``tvm-ios bench-run`` on a zoo model (reduced size, llvm)."""
import json

import pytest

from tvm_ios.cli.main import main

pytest.importorskip("tvm_ios.models.netdef", reason="the model zoo is not on this branch")
from tvm_ios import models  # noqa: E402


def test_build_then_bench_run(tmp_path, capsys):
    out = tmp_path / "sq"
    size = str(models.min_image_size("squeezenet"))
    assert main(["build", "--model", "squeezenet", "--image-size", size, "--target", "llvm",
                 "-o", str(out), "--json", str(tmp_path / "m.json")]) == 0
    assert "squeezenet batch 1 [tvm-default] for llvm" in capsys.readouterr().out
    manifest = json.loads((tmp_path / "m.json").read_text())
    assert manifest["files"]["net"]["name"] == "net.json" and manifest["versions"]["tvm"]
    assert main(["bench-run", str(out), "--repeat", "3", "--warmup", "1",
                 "--json", str(tmp_path / "r.json")]) == 0
    (row,) = json.loads((tmp_path / "r.json").read_text())
    assert row["status"] == "ok" and row["latency_ms"] > 0


def test_build_unknown_model_is_bad_input(tmp_path, capsys):
    assert main(["build", "--model", "alexnet", "--target", "llvm", "-o", str(tmp_path)]) == 2
    assert "unknown model 'alexnet'" in capsys.readouterr().err
