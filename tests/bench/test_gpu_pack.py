"""tvm-ios gpu-pack: the plan, the pack of llvm artifacts (kept on a second call), the limit."""
import json
import tarfile

import pytest

from tvm_ios.bench import gpu_pack
from tvm_ios.bench.manifest import Manifest
from tvm_ios.bench.pack import PackTooLarge
from tvm_ios.cli.gpu_pack import _models, load_model
from tvm_ios.cli.main import main


def test_plan_covers_every_variant_of_the_quick_models():
    specs = gpu_pack.plan(gpu_pack.QUICK_MODELS)
    assert len(specs) == len(gpu_pack.QUICK_MODELS) * len(gpu_pack.VARIANTS)
    assert {s.variant for s in specs} == set(gpu_pack.VARIANTS)
    assert "squeezenet-64px-b1-ios-graphturbo" in {s.name for s in specs}
    full = {s.name for s in gpu_pack.plan(gpu_pack.FULL_MODELS)}
    assert "inception_v3-299px-b1-ios-rprogram" in full
    assert "inception_v3-299px-b1-ios-graphturbo" in full
    assert "randwire-b1-ios-graphturbo" not in full  # opt-in for that model
    assert not any(name.endswith("ios-graphturbo-checked") for name in full)  # opt-in
    assert "inception_v3-299px-b1-ios-graphturbo-checked" in {s.name for s in gpu_pack.plan(
        gpu_pack.FULL_MODELS, ["ios-graphturbo-checked"])}
    assert gpu_pack.VARIANTS["ios-graphturbo"][2] is False  # a timing build
    with pytest.raises(ValueError, match="unknown variants"):
        gpu_pack.plan({"dag": None}, ["ios-nothing"])


def test_full_and_quick_keep_squeezenet_at_both_sizes():
    pairs = _models(["full", "quick", "squeezenet@64"])
    assert pairs.count(("squeezenet", None)) == 1 and pairs.count(("squeezenet", 64)) == 1
    assert len(pairs) == len(gpu_pack.FULL_MODELS) + len(gpu_pack.QUICK_MODELS)


def test_gpu_pack_of_llvm_artifacts(tmp_path, capsys):
    argv = ["gpu-pack", "-o", str(tmp_path), "--models", "dag", "--target", "llvm",
            "--variants", "tvm-default", "ios-rprogram", "ios-rprogram-checked"]
    assert main(argv) == 0
    assert "3 artifacts built" in capsys.readouterr().out
    rprogram = Manifest.load(tmp_path / "artifacts" / "dag-b1-ios-rprogram")
    assert rprogram.variant == "ios-rprogram" and rprogram.flags["checks"] is False
    checked = Manifest.load(tmp_path / "artifacts" / "dag-b1-ios-rprogram-checked")
    assert checked.flags["checks"] is True
    with tarfile.open(tmp_path / "pack.tar.xz", "r:xz") as archive:
        info = json.load(archive.extractfile("pack/pack.json"))
        assert "pack/run.sh" in archive.getnames()
    assert set(info["build_s"]) == {"dag-b1-tvm-default", "dag-b1-ios-rprogram",
                                    "dag-b1-ios-rprogram-checked"}
    summary = json.loads((tmp_path / "gpu_pack.json").read_text())
    assert summary["archive_bytes"] < gpu_pack.PACK_LIMIT
    assert main(argv) == 0  # a second call keeps the artifacts: only packs
    assert json.loads((tmp_path / "gpu_pack.json").read_text())["build_s"] == dict.fromkeys(
        info["build_s"], 0.0)


def test_pack_over_the_limit_is_refused(tmp_path):
    specs = gpu_pack.plan({"dag": None}, ["tvm-default"])
    with pytest.raises(PackTooLarge):
        gpu_pack.build_gpu_pack(tmp_path, specs, target="llvm", limit=1000,
                                load=load_model)
    assert not (tmp_path / gpu_pack.PACK_NAME).exists()

