"""random_cnn: deterministic per seed, every listed op kind and shape, every sub-spec builds."""
import numpy as np
import pytest

from tvm_ios import _tvm
from tvm_ios.testing import dag_model, random_cnn  # noqa: F401  (the package keeps its names)
from tvm_ios.testing.cnn_spec import KINDS, drop_ops, infer_shapes, resolve, sinks
from tvm_ios.testing.random_cnn import build_cnn, random_spec

SEEDS = range(40)


def test_deterministic_per_seed():
    mod_a, params_a = random_cnn(7)
    mod_b, params_b = random_cnn(7)
    assert mod_a.script() == mod_b.script()
    assert params_a.keys() == params_b.keys()
    assert all(np.array_equal(params_a[k], params_b[k]) for k in params_a)
    assert random_spec(7) != random_spec(8)


def _resolved(spec):
    """(kind, attrs, input shapes) of every op as built."""
    shapes = infer_shapes(spec)
    inp = (spec["channels"], spec["size"], spec["size"])
    for op in spec["ops"]:
        ins = [inp if r < 0 else shapes[r] for r in op["in"]]
        yield op["op"], resolve(op, ins)[0], ins


def test_covers_the_op_kinds_and_shapes():
    seen = set()
    for seed in SEEDS:
        spec = random_spec(seed)
        for kind, attrs, ins in _resolved(spec):
            if attrs.get("alias"):
                continue
            seen.add(kind)
            conv = attrs if kind == "conv" else attrs.get("dw") if kind == "sepconv" else None
            if conv:
                seen.add(f"stride{conv['stride']}")
                seen.add(f"dilation{conv['dilation']}")
                seen.add("depthwise" if conv["groups"] == ins[0][0] > 1 else
                         "grouped" if conv["groups"] > 1 else "dense")
                seen.add("padded" if any(conv["padding"]) else "valid")
                if len(set(conv["padding"])) > 1:
                    seen.add("asymmetric padding")
                if conv["kernel"][0] != conv["kernel"][1]:
                    seen.add("1xk kernel")
            if ins[0][1] == ins[0][2] == 1:
                seen.add("1x1 map")
        if spec["size"] % 2:
            seen.add("odd size")
        if len(sinks(spec)) > 1:
            seen.add("several outputs")
    wanted = set(KINDS) | {"stride1", "stride2", "dilation2", "depthwise", "grouped",
                           "dense", "valid", "asymmetric padding", "1xk kernel", "1x1 map",
                           "odd size", "several outputs"}
    assert wanted <= seen, wanted - seen


@pytest.mark.parametrize("seed", [0, 3, 11])
def test_every_sub_spec_builds_with_the_shapes_it_infers(seed):
    spec = random_spec(seed)
    for drop in ([], [0], list(range(0, len(spec["ops"]), 2)), list(range(1, len(spec["ops"])))):
        small = drop_ops(spec, drop)
        mod, params = build_cnn(small)
        assert len(small["ops"]) == len(spec["ops"]) - len(drop)
        outs = [(1, *infer_shapes(small)[i]) for i in sinks(small)]
        ret = mod["main"].body.body.ty
        types = list(ret.fields) if hasattr(ret, "fields") else [ret]
        assert [tuple(int(d) for d in t.shape) for t in types] == outs
        assert all(name in params for name in (_tvm.var_name(v) for v in mod["main"].params[1:]))


def test_small_enough_to_run_many():
    sizes = [random_spec(seed)["size"] for seed in SEEDS]
    assert 8 <= min(sizes) and max(sizes) <= 24
    widths = [op.get("out", 0) for seed in SEEDS for op in random_spec(seed)["ops"]]
    assert max(widths) <= 32
