"""Names of the ops of PyTorch imports (issue 62): after their weights, their torch module
(``nn_module_stack``) or their producer, never TVM's ``lvNN``; unique, stable, identifiers."""
import re

import numpy as np
import pytest

pytestmark = pytest.mark.torch
torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed; the torch tier: pip install -e '.[test,torch]' "
    "&& TVM_IOS_REQUIRE_TORCH=1 pytest -m torch")

import tvm
from tvm import relax
from tvm.relax.frontend.torch import from_exported_program

from tvm_ios import _tvm, models
from tvm_ios.graph.extract import op_graph
from tvm_ios.models import torchvision_zoo

_AUTO = re.compile(r"^lv\d*$")


class _Small(torch.nn.Module):
    """Stem (conv, bn, relu), a pool, two convs, a residual add, a concat, a functional
    pool, a flatten and a linear layer: every kind of op an import names."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1, bias=False),
                                        torch.nn.BatchNorm2d(8), torch.nn.ReLU())
        self.pool = torch.nn.MaxPool2d(2)
        self.a, self.b = torch.nn.Conv2d(8, 8, 1), torch.nn.Conv2d(8, 8, 3, padding=1)
        self.relu = torch.nn.ReLU()
        self.fc = torch.nn.Linear(16, 4)

    def forward(self, x):
        x = self.pool(self.stem(x))
        y = torch.cat([self.a(x), self.relu(self.b(x) + x)], dim=1)
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(y, 1), 1))


def _small():
    torch.manual_seed(0)
    module = _Small().eval()
    torchvision_zoo.randomize_batch_norms(module, seed=0)
    return module, torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(1))


def _binding_names(mod) -> list[str]:
    return [_tvm.var_name(b.var) for block in mod["main"].body.blocks for b in block.bindings
            if isinstance(b.var, relax.DataflowVar)]


def _check_names(mod):
    names = _binding_names(mod)
    params = [_tvm.var_name(v) for v in mod["main"].params]
    assert not [n for n in names if _AUTO.match(n)], names
    assert all(n.isidentifier() for n in names), names
    assert len(set(names + params)) == len(names + params), names


@pytest.mark.parametrize("fold", [True, False])
def test_small_model_names(fold):
    module, x = _small()
    mod, params = models.from_torch(module, (x,), fold=fold)
    _check_names(mod)
    assert {"pool", "cat", "add", "relu", "flatten", "fc"} <= set(_binding_names(mod))
    if not fold:  # only the names differ from TVM's own import
        ref = from_exported_program(torch.export.export(module, (x,)),
                                    keep_params_as_input=True, unwrap_unit_return_tuple=True)
        tvm.ir.assert_structural_equal(mod["main"], relax.frontend.detach_params(ref)[0]["main"])
    else:
        graph = op_graph(_tvm.bind_params(mod, params))
        assert [n.name for n in graph.nodes] == [
            "stem_0_relu", "pool", "a_add", "b_add", "adaptive_avg_pool2d", "fc_add"]
    again, _ = models.from_torch(module, (x,), fold=fold)
    assert _binding_names(again) == _binding_names(mod)  # stable across runs
    ex = _tvm.compile_module(_tvm.bind_params(mod, params), "llvm")
    out = _tvm.virtual_machine(ex)["main"](_tvm.tensor(x.numpy())).numpy()
    with torch.no_grad():
        np.testing.assert_allclose(out, module(x).numpy(), rtol=1e-5, atol=1e-5)


def test_googlenet_op_graph_names():
    try:
        torchvision_zoo.torchvision_models()
    except ModuleNotFoundError:
        pytest.skip(f"torchvision is not installed: {torchvision_zoo.INSTALL}")
    mod, params = torchvision_zoo.get("googlenet")
    _check_names(mod)
    names = [n.name for n in op_graph(_tvm.bind_params(mod, params)).nodes]
    assert not [n for n in names if _AUTO.match(n)], names
    assert {"maxpool1", "inception3a_branch1_conv_relu", "inception3a_branch4_0", "maxpool4",
            "avgpool", "fc_add"} <= set(names), names
    assert "inception3a_cat" in _binding_names(mod)
