"""The kernel cache: a model's own databases under the user's cache, keyed by target and the
model's structure, found before the seeds; the seeds a wheel ships; one tuning hint."""
import json
import logging
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tvm_ios import models
from tvm_ios.cli.main import main
from tvm_ios.tuning import cache as kernel_cache
from tvm_ios.tuning.cache import cache_dir, cache_root, lookup, model_key, tune_hint
from tvm_ios.tuning.kernel_db import KernelDB, host_target, target_name

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TVM_IOS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "kernels"


def test_the_cache_is_where_tvm_ios_cache_says(cache):
    assert cache_root() == cache


def test_a_model_is_keyed_by_its_structure_not_its_weights():
    small, _ = models.get("squeezenet", image_size=32)
    again, _ = models.get("squeezenet", image_size=32)
    larger, _ = models.get("squeezenet", image_size=64)
    assert model_key("squeezenet", small) == model_key("squeezenet", again)
    assert model_key("squeezenet", small) != model_key("squeezenet", larger)
    assert model_key("my model.onnx", small).startswith("my_model.onnx-")


def test_the_models_own_database_in_the_cache_comes_before_the_seeds(cache):
    mod, _ = models.get("squeezenet", image_size=64)
    seed = lookup("squeezenet", 64, mod)  # (a committed seed: benchmarks/kernels)
    assert seed is not None and cache not in seed.parents
    own = cache_dir("squeezenet", mod)
    KernelDB(own, host_target(), create=True)
    assert lookup("squeezenet", 64, mod) == own
    assert own.parent.name == target_name(host_target())


def test_no_database_anywhere_logs_the_command_that_tunes_it_once(cache, caplog):
    mod, _ = models.get("squeezenet", image_size=40)
    with caplog.at_level(logging.WARNING):
        assert lookup("squeezenet", 40, mod) is None
        assert lookup("squeezenet", 40, mod) is None
    lines = [r.getMessage() for r in caplog.records if "no tuned kernels" in r.getMessage()]
    assert len(lines) == 1
    assert "`tvm-ios tune-kernels --model squeezenet --image-size 40`" in lines[0]
    assert str(cache) in lines[0] and " min at 500 trials" in lines[0]  # (seeds' history)
    assert "min at" not in tune_hint("never_tuned", 8)


def test_tune_kernels_writes_into_the_cache_by_default(cache, capsys):
    assert main(["tune-kernels", "--model", "squeezenet", "--image-size", "32",
                 "--retime", "4"]) == 2  # (nothing to retime yet: stops before tuning)
    (made,) = cache.glob("*/squeezenet-*/target.json")
    mod, _ = models.get("squeezenet", image_size=32)
    assert made.parent == cache_dir("squeezenet", mod)


def test_a_seed_where_the_user_cannot_write_is_copied_into_the_cache(cache, tmp_path,
                                                                     monkeypatch):
    root = tmp_path / "site" / "seeds"
    seed = root / "llvm-x86-64-2c" / "squeezenet-64"
    KernelDB(seed, {"kind": "llvm", "mcpu": "x86-64", "num-cores": 2}, create=True)
    monkeypatch.setattr(kernel_cache, "seed_roots", lambda: [root])
    monkeypatch.setattr(kernel_cache.os, "access", lambda path, mode: False)
    found = lookup("squeezenet", 64)
    assert found == cache / "seeds" / "llvm-x86-64-2c" / "squeezenet-64"
    assert json.loads((found / "target.json").read_text())["target"]["mcpu"] == "x86-64"


def test_the_wheel_ships_the_default_models_seeds_and_finds_them_installed(tmp_path):
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(ROOT),
                          "-w", str(tmp_path / "dist")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("tvm_ios-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        archive.extractall(site)
    seeds = {Path(n).parts[2] for n in names if n.startswith("tvm_ios/seeds/")}
    committed = {p.parent.parent.name for p in
                 (ROOT / "benchmarks" / "kernels").glob("*/inception_v3-75/target.json")}
    assert seeds == committed and len(seeds) >= 4
    assert not any(n.startswith("tvm_ios/seeds/") and ("squeezenet" in n or n.endswith(".gz"))
                   for n in names)
    probe = ("from tvm_ios.tuning.cache import lookup, seed_roots; "
             "print(seed_roots()); print(lookup('inception_v3', 75))")
    shown = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, text=True,
                           capture_output=True, env={"PYTHONPATH": str(site),
                                                     "PATH": "/usr/bin:/bin"})
    assert shown.returncode == 0, shown.stderr[-2000:]
    roots, found = shown.stdout.splitlines()
    assert roots == f"[PosixPath('{site / 'tvm_ios' / 'seeds'}')]"
    assert found.startswith(str(site / "tvm_ios" / "seeds"))
