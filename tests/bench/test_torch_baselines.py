"""PyTorch baselines from an artifact: same model (net.json) and weights (recipes)."""
import json

import numpy as np
import pytest

pytestmark = pytest.mark.torch
torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed; the torch tier: pip install -e '.[test,torch]' "
    "&& TVM_IOS_REQUIRE_TORCH=1 pytest -m torch")

from tvm_ios import models
from tvm_ios.bench.artifact import build_artifact
from tvm_ios.bench.manifest import MANIFEST_NAME, sha256_file
from tvm_ios.bench.torch_baselines import bench_torch, load_torch_model
from tvm_ios.cli.bench_torch import main


@pytest.fixture(scope="module")
def squeezenet_artifact(tmp_path_factory):
    size = models.min_image_size("squeezenet")
    mod, params = models.get("squeezenet", batch_size=2, image_size=size)
    out = tmp_path_factory.mktemp("torch") / "squeezenet-default"  # run.sh: *default
    build_artifact(mod, params, out, model="squeezenet", batch=2, target="llvm",
                   net=models.net("squeezenet", image_size=size, batch_size=2))
    return out


def test_torch_model_has_the_artifact_weights(squeezenet_artifact):
    module, manifest = load_torch_model(squeezenet_artifact)
    conv = next(s for s in manifest.params if s["shape"][-1] == 3 and len(s["shape"]) == 4)
    from tvm_ios.bench.tensors import materialize
    np.testing.assert_array_equal(module.weights[conv["name"]].numpy(), materialize(conv))


def test_eager_matches_reference_and_cuda_graph_needs_a_gpu(squeezenet_artifact):
    eager, graph = bench_torch(squeezenet_artifact, ("eager", "cuda-graph"), device="cpu",
                               warmup=1, repeat=3, rotate=2)
    assert eager.status == "ok" and eager.variant == "torch-eager"
    assert eager.max_abs_err <= eager.error_bound and eager.latency_ms > 0
    assert graph.status.startswith("failed") and "CUDA" in graph.status
    assert graph.latency_ms is None


def test_mismatch_gives_no_latency(squeezenet_artifact, tmp_path, capsys):
    import shutil

    copy = shutil.copytree(squeezenet_artifact, tmp_path / "copy")
    reference = np.load(copy / "reference.npz")["arr_0"]
    np.savez(copy / "reference.npz", reference * 2 + 1)
    data = json.loads((copy / MANIFEST_NAME).read_text())
    data["files"]["reference"]["sha256"] = sha256_file(copy / "reference.npz")
    (copy / MANIFEST_NAME).write_text(json.dumps(data))
    out = tmp_path / "t.json"
    assert main([str(copy), "--modes", "eager", "--device", "cpu", "--repeat", "2",
                 "--json", str(out)]) == 2
    assert "REFERENCE MISMATCH" in capsys.readouterr().out
    (row,) = json.loads(out.read_text())
    assert row["status"] == "mismatch" and row["latency_ms"] is None


def test_artifact_without_net_is_refused(llvm_artifact):
    with pytest.raises(ValueError, match="no net.json"):
        load_torch_model(llvm_artifact)


@pytest.mark.slow
def test_torch_compile_matches_reference_on_cpu(squeezenet_artifact):
    (result,) = bench_torch(squeezenet_artifact, ("compile",), device="cpu", warmup=1,
                            repeat=3, rotate=2)
    assert result.status == "ok" and result.latency_ms > 0, result.status


@pytest.mark.slow
def test_pack_runs_torch_baselines_without_tvm_models(squeezenet_artifact, tmp_path):
    """run.sh in a pack: the zoo's plain-data definitions load without the Relax emitter."""
    import os
    import subprocess
    import sys
    import tarfile

    from tvm_ios.bench import pack

    pack.build_pack(tmp_path / "p.tar.gz", [squeezenet_artifact])
    with tarfile.open(tmp_path / "p.tar.gz") as archive:
        archive.extractall(tmp_path, filter="tar")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHON=sys.executable, TORCH_MODES="eager")
    proc = subprocess.run(["sh", str(tmp_path / "pack" / "run.sh"), "--repeat", "2"], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads((tmp_path / "pack" / "torch_results.json").read_text())
    assert row["variant"] == "torch-eager" and row["status"] == "ok"
