"""``tvm-ios build`` then ``tvm-ios bench-run`` on a zoo model (reduced size, llvm)."""
import json

import pytest

from tvm_ios import models
from tvm_ios.cli.main import main


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


def test_build_rprogram_engine_then_bench_run(tmp_path, capsys):
    """The rProgram engine's artifact (CPU vDevice on llvm) runs and matches its reference."""
    out = tmp_path / "rp"
    size = str(models.min_image_size("squeezenet"))
    assert main(["build", "--model", "squeezenet", "--image-size", size, "--target", "llvm",
                 "--engine", "rprogram", "-o", str(out)]) == 0
    assert "[ios-rprogram]" in capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["variant"] == "ios-rprogram" and manifest["schedule"]["stages"]
    assert main(["bench-run", str(out), "--repeat", "2", "--warmup", "1",
                 "--json", str(tmp_path / "r.json")]) == 0
    (row,) = json.loads((tmp_path / "r.json").read_text())
    assert row["status"] == "ok"


def test_build_ios_and_another_engine_contradict(tmp_path):
    with pytest.raises(SystemExit, match="contradict"):
        main(["build", "--model", "squeezenet", "--target", "llvm", "--ios",
              "--engine", "rprogram", "-o", str(tmp_path)])


def test_kernels_for_a_gpu_target_is_bad_input(tmp_path, capsys):
    """CPU kernel databases cannot apply to a CUDA build: an error, not a silent untuned one."""
    assert main(["build", "--model", "squeezenet", "--target", "nvidia/nvidia-h100",
                 "--kernels", "auto", "-o", str(tmp_path)]) == 2
    assert "nvidia/nvidia-h100 is not llvm" in capsys.readouterr().err


def test_build_rprogram_with_kernels_for_another_cpu_builds_untuned(tmp_path, capsys, caplog):
    """--kernels with a database for a CPU whose code cannot run here: warned naming both,
    built untuned."""
    from tvm_ios.tuning.kernel_db import KernelDB

    db = tmp_path / "db"
    KernelDB(db, {"kind": "llvm", "mtriple": "aarch64-linux-gnu", "mcpu": "cortex-a72",
                  "num-cores": 2}, create=True)
    size = str(models.min_image_size("squeezenet"))
    assert main(["build", "--model", "squeezenet", "--image-size", size, "--target", "llvm",
                 "--engine", "rprogram", "--kernels", str(db), "-o", str(tmp_path / "a")]) == 0
    assert "cortex-a72" in caplog.text and "building untuned" in caplog.text
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["target"]["kind"] == "llvm" and "mcpu" not in manifest["target"]


def test_build_rprogram_with_committed_kernels_runs(tmp_path, capsys):
    """--kernels with the committed SqueezeNet database this CPU runs (its own, or one of an
    older CPU of its line): a tuned artifact, built for the database's CPU, that runs."""
    from tvm_ios.tuning.kernel_db import KernelDB, find_kernels, runs_here

    db = find_kernels("squeezenet", 64)
    if db is None or not runs_here(db):
        pytest.skip("no committed SqueezeNet (64 px) kernel database this CPU runs")
    out = tmp_path / "tuned"
    assert main(["build", "--model", "squeezenet", "--image-size", "64", "--target", "llvm",
                 "--engine", "rprogram", "--kernels", str(db), "-o", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["target"]["mcpu"] == KernelDB(db).target.attrs["mcpu"]
    assert main(["bench-run", str(out), "--repeat", "2", "--warmup", "1",
                 "--json", str(tmp_path / "r.json")]) == 0
    (row,) = json.loads((tmp_path / "r.json").read_text())
    assert row["status"] == "ok"
