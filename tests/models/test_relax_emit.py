"""Tests of the Relax emitter: signature, binding patterns, names, numerics."""
from __future__ import annotations

import numpy as np
import tvm
from tvm import relax

from tvm_ios import _tvm
from tvm_ios.models import reference
from tvm_ios.models.netdef import Net
from tvm_ios.models.relax_emit import to_relax
from tvm_ios.models.weights import init_params


def _net() -> Net:
    net = Net("emit")
    x = net.input((1, 3, 12, 12))
    with net.scope("mixed"):
        a = net.conv(x, 8, 3, relu=True, name="branch3x3")
        b = net.conv(x, 8, 1, act="relu6", name="branch1x1")
        c = net.conv(net.max_pool(x, 3, 1, 1, name="pool"), 8, 1, name="branch_pool")
        s = net.mean([a, b, c], name="avg")
        d = net.sepconv(net.relu(s, name="relu"), 8, 3, stride=2, name="sep")
        e = net.shift(net.avg_pool(s, 3, 2, 1, name="apool"), name="shift")
        y = net.concat([d, e], name="concat")
    net.linear(net.flatten(net.global_avg_pool(y)), 4, name="fc")
    return net


def _bindings(mod):
    (block,) = mod["main"].body.blocks
    return [(b.var.name, b.value) for b in block.bindings]


def _op(value):
    return _tvm.op_name(value)


def test_signature_and_params():
    net = _net()
    mod, params = to_relax(net)
    func = mod["main"]
    names = [p.name for p in func.params]
    assert names[0] == "data" and names[1:] == list(params)
    assert int(func.attrs["num_input"]) == 1
    assert params["mixed_branch3x3_b"].shape == (1, 8, 1, 1)  # bias broadcast on the host
    assert params["fc_w"].shape == (16, 4)  # linear weight stored transposed
    assert isinstance(func.body.blocks[0], relax.DataflowBlock)


def test_conv_epilogue_pattern_and_names():
    mod, _ = to_relax(_net())
    binds = _bindings(mod)
    names = [n for n, _ in binds]
    i = names.index("mixed_branch3x3")
    assert [_op(v) for _, v in binds[i:i + 3]] == ["relax.nn.conv2d", "relax.add", "relax.nn.relu"]
    assert names[i + 1:i + 3] == ["mixed_branch3x3_bias", "mixed_branch3x3_relu"]
    bias_arg = binds[i + 1][1].args[1]
    assert isinstance(bias_arg, relax.Var) and bias_arg.name == "mixed_branch3x3_b"
    j = names.index("mixed_branch1x1")
    assert [_op(v) for _, v in binds[j:j + 3]] == ["relax.nn.conv2d", "relax.add", "relax.clip"]
    assert "mixed_sep_dw" in names and "mixed_sep_pw" in names and "mixed_avg" in names
    assert _op(dict(binds)["mixed_avg"]) == "relax.multiply"


def test_matches_reference_and_batch_override():
    net = _net()
    params = init_params(net, 0)
    mod, rparams = to_relax(net, batch_size=3, params=params)
    assert tuple(int(d) for d in mod["main"].params[0].ty.shape) == (3, 3, 12, 12)
    exe = _tvm.compile_module(_tvm.bind_params(mod, rparams), "llvm")
    data = np.random.default_rng(1).standard_normal((3, 3, 12, 12)).astype(np.float32)
    got = _tvm.virtual_machine(exe)["main"](_tvm.tensor(data)).numpy()
    want = reference.run(net.resized(batch_size=3), params, data)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_unbound_params_can_be_passed_at_run_time():
    net = _net()
    mod, params = to_relax(net, seed=5)
    exe = tvm.compile(mod, target="llvm")
    data = np.ones((1, 3, 12, 12), np.float32)
    args = [_tvm.tensor(data)] + [_tvm.tensor(v) for v in params.values()]
    got = _tvm.virtual_machine(exe)["main"](*args).numpy()
    want = reference.run(net, init_params(net, 5), data)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
