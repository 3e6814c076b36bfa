"""The PyTorch form of every zoo model computes what its Relax form computes (CPU)."""
import numpy as np
import pytest

pytestmark = pytest.mark.torch
torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed; the torch tier: pip install -e '.[test,torch]' "
    "&& TVM_IOS_REQUIRE_TORCH=1 pytest -m torch")

from tvm_ios import models
from tvm_ios.models import reference
from tvm_ios.models.netdef import Net
from tvm_ios.models.torch_emit import net_layout, to_torch
from tvm_ios.runtime import compare

FAST = {"squeezenet"}  # the others (grouped, separable, shifted convs) are slow tests


def _tiny_net():
    net = Net("tiny")
    x = net.input((2, 3, 9, 9))
    a = net.conv(x, 4, 3, relu=True, name="a")
    b = net.sepconv(x, 4, 5, name="b")
    s = net.shift(net.relu6(b), 1, 1, name="s")
    m = net.max_pool(net.add([a, s]), 3, 2, padding=1, ceil_mode=True, name="mp")
    v = net.avg_pool(a, 3, 2, padding=1, name="ap")
    c = net.concat([m, v], name="cat")
    return net, net.linear(net.flatten(net.global_avg_pool(c)), 5, name="fc")


def _torch_out(net, params, x):
    with torch.no_grad():
        return to_torch(net, params)(torch.from_numpy(x)).numpy()


def test_tiny_net_matches_numpy_reference():
    net, _ = _tiny_net()
    params = models.init_params(net, seed=3)
    x = np.random.default_rng(0).standard_normal((2, 3, 9, 9)).astype("float32")
    np.testing.assert_allclose(_torch_out(net, params, x), reference.run(net, params, x),
                               rtol=1e-4, atol=1e-4)


def test_relax_layout_params_load_and_shapes_are_checked():
    net, _ = _tiny_net()
    params = models.init_params(net, seed=3)
    relax_params = models.relax_emit.relax_layout(net, params)
    assert relax_params["a_b"].shape == (1, 4, 1, 1) and relax_params["fc_w"].shape == (8, 5)
    back = net_layout(net, relax_params)
    for name, value in params.items():
        np.testing.assert_array_equal(back[name].numpy(), value)
    with pytest.raises(ValueError, match="'a_w' has shape"):
        net_layout(net, dict(params, a_w=np.zeros((4, 3, 2, 2), "float32")))


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n in FAST else pytest.mark.slow)
                                  for n in models.names()])
def test_zoo_model_torch_equals_relax(name):
    size, batch = models.min_image_size(name), 2 if name == "squeezenet" else 1
    net = models.net(name, image_size=size, batch_size=batch)
    mod, params = models.get(name, batch_size=batch, image_size=size)
    x = np.random.default_rng(1).standard_normal(net.input_node.shape).astype("float32")
    expected = compare.run(compare.build(mod, "llvm", params), [x])
    got = _torch_out(net, params, x)
    assert got.shape == expected.shape
    scale = max(1.0, float(np.abs(expected).max()))
    assert float(np.abs(got - expected).max()) <= 1e-4 * scale * 10
