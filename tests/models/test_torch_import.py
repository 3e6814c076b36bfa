"""PyTorch models in: ``from_torch``, folded batch norms, ``--model file.pt2`` and
``torchvision:NAME``, torchvision's architectures through ``relax_pipeline="ios"``."""
import os
import re

import numpy as np
import pytest

pytestmark = pytest.mark.torch
torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed; the torch tier: pip install -e '.[test,torch]' "
    "&& TVM_IOS_REQUIRE_TORCH=1 pytest -m torch")

from tvm_ios import _tvm, models
from tvm_ios.cli.main import main
from tvm_ios.graph.extract import op_graph
from tvm_ios.models import torchvision_zoo


class _Branchy(torch.nn.Module):
    """Stem, then three branches of conv + bn + relu on one input, concatenated."""

    def __init__(self):
        super().__init__()
        block = lambda i, o, k: torch.nn.Sequential(  # noqa: E731
            torch.nn.Conv2d(i, o, k, padding=k // 2, bias=False), torch.nn.BatchNorm2d(o),
            torch.nn.ReLU())
        self.stem = block(3, 8, 3)
        self.left, self.mid, self.right = block(8, 8, 1), block(8, 8, 3), block(8, 8, 5)
        self.fc = torch.nn.Linear(24, 5)

    def forward(self, x):
        x = self.stem(x)
        y = torch.cat([self.left(x), self.mid(x), self.right(x)], dim=1)
        return self.fc(y.mean(dim=(2, 3)))


def _branchy():
    torch.manual_seed(0)
    module = _Branchy().eval()
    torchvision_zoo.randomize_batch_norms(module, seed=0)
    return module, torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(1))


def _run(mod, params, x, pipeline="default"):
    ex = _tvm.compile_module(_tvm.bind_params(mod, params), "llvm", pipeline=pipeline)
    return _tvm.virtual_machine(ex)["main"](_tvm.tensor(x)).numpy()


def _rel(a, b):
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-12))


def test_from_torch_matches_eager_and_default_build():
    module, x = _branchy()
    mod, params = models.from_torch(module, (x,))
    assert int(mod["main"].attrs["num_input"]) == 1
    assert [_tvm.var_name(v) for v in mod["main"].params[1:]] == list(params)
    with torch.no_grad():
        eager = module(x).numpy()
    out = _run(mod, params, x.numpy())
    assert _rel(out, eager) < 1e-5
    unfolded = _run(*models.from_torch(module, (x,), fold=False), x.numpy())
    assert _rel(out, unfolded) < 1e-5


def test_batch_norms_folded_into_whole_conv_units():
    module, x = _branchy()
    mod, params = models.from_torch(module, (x,))
    assert "batch_norm" not in str(mod)
    graph = op_graph(_tvm.bind_params(mod, params))
    kinds = {node.name: node.kind for node in graph.nodes}
    assert all(node.schedulable for node in graph.nodes), kinds
    assert {"stem_0_relu", "left_0_relu", "mid_0_relu", "right_0_relu"} <= set(kinds)
    assert all(n.attrs.get("epilogue", [None])[:2] == ["add:c", "relu"]
               for n in graph.nodes if n.kind == "conv2d")
    from tvm_ios import AnalyticalCostModel, ios_schedule

    schedule = ios_schedule(graph, AnalyticalCostModel("cpu"), max_group_size=3,
                            max_num_groups=8)
    wide = [s for s in schedule.stages if len(s.groups) > 1]
    assert wide, str(schedule)
    assert {op for stage in wide for op in stage.ops} & {"left_0_relu", "mid_0_relu",
                                                         "right_0_relu"}, str(schedule)


def test_cli_model_pt2(tmp_path, capsys):
    module, x = _branchy()
    path = tmp_path / "branchy.pt2"
    torch.export.save(torch.export.export(module, (x,)), str(path))
    assert main(["stats", "--model", str(path)]) == 0
    out = capsys.readouterr().out
    assert "batch_norm" not in out and "ops" in out, out


class _Bessel(torch.nn.Module):
    def forward(self, x):
        return torch.special.bessel_j0(x)


class _DataDependent(torch.nn.Module):
    def forward(self, x):
        return x if x.sum() > 0 else -x


@pytest.mark.parametrize("module, says", [(_Bessel(), "special_bessel_j0"),
                                          (_DataDependent(), "torch.export rejected")])
def test_bad_torch_model_one_line_exit_2(tmp_path, capsys, module, says):
    x = torch.randn(1, 3, 8, 8)
    if says == "torch.export rejected":
        with pytest.raises(ValueError, match=says):
            models.from_torch(module, (x,))
        return
    path = tmp_path / "bad.pt2"
    torch.export.save(torch.export.export(module, (x,)), str(path))
    assert main(["stats", "--model", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0] and "Traceback" not in err[0], err


# -- torchvision --------------------------------------------------------------------------
def _zoo():
    try:
        return torchvision_zoo.torchvision_models()
    except ModuleNotFoundError:
        if os.environ.get("TVM_IOS_REQUIRE_TORCH") == "1":  # the torch tier installs it
            pytest.fail("TVM_IOS_REQUIRE_TORCH=1 but torchvision is missing: "
                        "pip install -e '.[test,torch]'")
        pytest.skip(f"torchvision is not installed: {torchvision_zoo.INSTALL} "
                    f"(or pip install -e '.[test,torch]')")


FAST = ("squeezenet1_1", "googlenet", "shufflenet_v2_x1_0")
SLOW = tuple(a for a in torchvision_zoo.ARCHS if a not in FAST)


def _check_arch(arch):
    _zoo()
    mod, params = torchvision_zoo.get(arch)
    graph = op_graph(_tvm.bind_params(mod, params))
    assert not [n.name for n in graph.nodes if "batch_norm" in n.kind]
    assert not [n.name for n in graph.nodes if re.match(r"lv\d*$", n.name)]  # issue 62
    size = torchvision_zoo.ARCHS[arch][1]
    x = np.random.default_rng(0).standard_normal((1, 3, size, size)).astype("float32")
    rel = _rel(_run(mod, params, x, pipeline="ios"), _run(mod, params, x))
    assert rel < 1e-3, (arch, rel)


@pytest.mark.parametrize("arch", FAST)
def test_torchvision_fast(arch):
    _check_arch(arch)


@pytest.mark.slow
@pytest.mark.parametrize("arch", SLOW)
def test_torchvision_slow(arch):
    _check_arch(arch)


def test_cli_torchvision_model(capsys):
    _zoo()
    assert main(["stats", "--model", "torchvision:squeezenet1_1", "--image-size", "64"]) == 0
    assert main(["stats", "--model", "torchvision:no_such_net"]) == 2
    assert "no_such_net" in capsys.readouterr().err


# -- torch.compile ------------------------------------------------------------------------
def test_torch_compile_backend_matches_eager(caplog):
    import tvm_ios

    module, x = _branchy()
    torch._dynamo.reset()
    fast = torch.compile(module, backend=tvm_ios.torch_backend(pipeline="ios", target="llvm"))
    with torch.no_grad(), caplog.at_level("INFO", logger="tvm_ios"):
        assert _rel(fast(x).numpy(), module(x).numpy()) < 1e-5
    assert "compiled a graph" in caplog.text and "runs eagerly" not in caplog.text, caplog.text
    assert "FoldBatchNorm: 4 batch norms folded" in caplog.text, caplog.text


def test_torch_compile_backend_falls_back_to_eager(caplog):
    import tvm_ios

    torch._dynamo.reset()
    fast = torch.compile(_Bessel(), backend=tvm_ios.torch_backend(pipeline="ios"))
    x = torch.randn(1, 3, 8, 8)
    with caplog.at_level("WARNING", logger="tvm_ios.torch_compile"):
        np.testing.assert_allclose(fast(x).numpy(), _Bessel()(x).numpy())
    assert any("runs eagerly" in r.message for r in caplog.records), caplog.text


@pytest.mark.slow
def test_torch_compile_googlenet_matches_eager(caplog):
    import tvm_ios

    _zoo()
    module = torchvision_zoo.build("googlenet")
    x = torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(0))
    torch._dynamo.reset()
    fast = torch.compile(module, backend=tvm_ios.torch_backend(pipeline="ios", target="llvm"))
    with torch.no_grad(), caplog.at_level("INFO", logger="tvm_ios"):
        assert _rel(fast(x).numpy(), module(x).numpy()) < 1e-4
    assert "compiled a graph" in caplog.text and "runs eagerly" not in caplog.text, caplog.text
