"""Prepacked weights (the ``packed`` variant), tuned for real on one small model.

The build packs a kernel's weights only where its packed record is the faster one; the
packed weights are folded at compile time (constants, no rewrite left to run); the outputs
equal the untuned build's.
"""
import shutil

import numpy as np
import pytest
import tvm
from tvm import relax

from tvm_ios import _tvm
from tvm_ios.kernels import prepack
from tvm_ios.tuning.kernel_db import KernelDB, host_target
from tvm_ios.kernels.tuned_build import apply_kernels, fuse_for_tuning, tuned_functions
from tvm_ios.tuning.search import tune_kernels
from tvm_ios.runtime.compare import random_inputs, run
from tvm_ios.passes.rprogram_pass import RProgramPass
from tvm_ios.testing import Concurrent, dag_model

ms = _tvm.ms


@pytest.fixture(scope="module")
def model():
    """A 1x1 and a 3x3 convolution of one input, then their sum."""
    return dag_model(seed=0, num_ops=2, channels=8, size=8, p=0.0)[0]


@pytest.fixture(scope="module")
def tuned(model, tmp_path_factory):
    path = tmp_path_factory.mktemp("kdb")
    kernels = KernelDB(path, host_target(), create=True)
    tune_kernels(model, kernels, variants=("parallel", "packed"), trials=4, min_repeat_ms=1)
    return path


def _choices(model, kernels) -> dict:
    """kernel name -> (packed chosen, packed us, parallel us)."""
    fused = fuse_for_tuning(model, kernels.target)
    marked, count = prepack.mark_packed(fused, kernels)
    out = {}
    for gv, func in prepack.kernels_of(prepack.mark_layout_free(fused)):
        if func.attrs is None or prepack.LAYOUT_FREE not in func.attrs:
            continue
        chosen = prepack.is_marked(marked[gv.name_hint])
        out[gv.name_hint] = (chosen, kernels.best_us("packed", func),
                             kernels.best_us("parallel", func.without_attr(prepack.LAYOUT_FREE)))
    assert count == sum(c for c, _, _ in out.values())
    return out


def test_a_kernel_is_packed_where_its_packed_record_is_faster(model, tuned):
    choices = _choices(model, KernelDB(tuned))
    assert len(choices) == 2  # both convolutions have weights
    for name, (chosen, packed, plain) in choices.items():
        assert packed is not None and plain is not None, name
        assert chosen == (packed < plain), name


def _skew(path, variant: str, seconds: float) -> None:
    """Append to ``variant`` a copy of each workload's best record, timed ``seconds``."""
    kernels = KernelDB(path)
    db = kernels.database(variant, writable=True)
    for record in list(db.get_all_tuning_records()):
        db.commit_tuning_record(ms.database.TuningRecord(
            record.trace, record.workload, [seconds], record.target, record.args_info))


def _packed_copy(tuned, tmp_path):
    """A copy of the tuned database in which every packed record is the faster one."""
    skewed = tmp_path / "kdb"
    shutil.copytree(tuned, skewed)
    _skew(skewed, "packed", 1e-9)
    return skewed


def test_the_faster_record_decides_both_ways(model, tuned, tmp_path):
    skewed = _packed_copy(tuned, tmp_path)
    assert all(c for c, _, _ in _choices(model, KernelDB(skewed)).values())
    _skew(skewed, "parallel", 1e-10)
    assert not any(c for c, _, _ in _choices(model, KernelDB(skewed)).values())
    untuned_packed = KernelDB(skewed)
    (skewed / "parallel" / "database_tuning_record.json").write_text("")
    assert all(c for c, _, _ in _choices(model, untuned_packed).values())  # packed only


def _calls(mod):
    """(callee name, args) of every ``call_tir`` of ``main``, a variable bound to a
    constant (or to an item of a tuple of constants, as folding leaves them) given as that
    constant."""
    call_tir = tvm.ir.Op.get("relax.call_tir")
    bound, out = {}, []
    for block in mod["main"].body.blocks:
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, relax.TupleGetItem) and value.tuple_value in bound:
                value = bound[value.tuple_value].fields[value.index]  # folded in a tuple
            if _tvm.is_tensor_constant(value) or isinstance(value, relax.Tuple):
                bound[binding.var] = value
            if isinstance(value, relax.Call) and value.op == call_tir:
                out.append((value.args[0].name_hint,
                            [bound.get(a, a) for a in value.args[1].fields]))
    return out


def _weights(mod, callees=None) -> list:
    """The constant tensors (rank > 1) ``main`` passes to its kernels (those named in
    ``callees`` only, if given)."""
    return [a.value.numpy() for name, args in _calls(mod)
            if callees is None or name in callees for a in args
            if _tvm.is_tensor_constant(a) and a.value.numpy().ndim > 1]


def test_a_kernel_scheduled_packed_stays_marked_when_a_later_variant_marks(model, tuned,
                                                                          tmp_path):
    """The one-core fallback of a build marks kernels again (serial-packed): the kernels the
    packed variant scheduled keep their mark, so their weights are still folded."""
    kernels = KernelDB(_packed_copy(tuned, tmp_path))  # both kernels packed
    marked, count = prepack.mark_packed(fuse_for_tuning(model, kernels.target), kernels)
    with kernels.target, kernels.database("packed"):
        applied = relax.transform.MetaScheduleApplyDatabase(enable_warning=False)(marked)
    again, _ = prepack.mark_packed(applied, kernels, "serial-packed")
    for mod in (applied, again):
        kept = [f for _, f in prepack.kernels_of(mod)
                if prepack.is_marked(f) and f.attrs.get(prepack.TUNED_ATTR, False)]
        assert len(kept) == count == 2


def test_packed_weights_are_folded_at_compile_time_and_outputs_match(model, tuned, tmp_path):
    kernels = KernelDB(_packed_copy(tuned, tmp_path))  # both kernels packed
    built = apply_kernels(model, kernels)
    calls = _calls(built)
    # the rewrite of the weights (a call on constants only) was folded away, and its
    # function dropped: what is left to run is the kernels main calls
    assert not [name for name, args in calls
                if all(_tvm.is_tensor_constant(a) for a in args)]
    assert {name for name, _ in calls} == {gv.name_hint for gv, _ in prepack.kernels_of(built)}
    assert tuned_functions(built) == (2, 2)
    # the kernels read other constants than the untuned build's: their weights, packed
    original = _weights(apply_kernels(model, None, kernels.target))
    repacked = [w for w in _weights(built)
                if not any(w.shape == o.shape and np.array_equal(w, o) for o in original)]
    # (a few trials may pick, for the 1x1 kernel, tiles whose layout is its own: CI saw one)
    assert len(repacked) >= 1
    for w in repacked:  # each one an original constant rearranged
        assert any(w.size == o.size and np.array_equal(np.sort(w, axis=None),
                                                       np.sort(o, axis=None)) for o in original)
    x = random_inputs(model)
    ref = run(tvm.compile(apply_kernels(model, None, kernels.target), kernels.target), x)
    out = run(tvm.compile(built, kernels.target), x)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_a_kernel_beside_an_rprogram_is_packed_and_the_rprogram_left_alone(tmp_path):
    """op0 runs alone, op1 and op2 (both reading it) together as an rProgram."""
    fork = dag_model(seed=2, num_ops=3, channels=8, size=8, p=0.6)[0]
    kernels = KernelDB(tmp_path, host_target(), create=True)
    tune_kernels(fork, kernels, variants=("packed",), trials=2, min_repeat_ms=1)
    scheduled = RProgramPass("ios", cost_model=Concurrent())(fork)
    built = apply_kernels(scheduled, kernels)
    programs = [f for _, f in built.functions.items() if f.attrs is not None
                and "tvm_ios.rprogram" in f.attrs]
    assert len(programs) == 1 and not prepack.is_marked(programs[0])
    original = _weights(apply_kernels(scheduled, None, kernels.target))
    assert any(not any(w.shape == o.shape and np.array_equal(w, o) for o in original)
               for w in _weights(built))  # op0's weights, packed
    x = random_inputs(fork)
    ref = run(tvm.compile(fork, "llvm"), x)
    np.testing.assert_allclose(run(tvm.compile(built, kernels.target), x), ref,
                               rtol=1e-4, atol=1e-4)


def _conv_weights(mod) -> list:
    """The weights of the convolutions of ``main`` (a model as built, not yet lowered)."""
    return [b.value.args[1].value.numpy() for block in mod["main"].body.blocks
            for b in block.bindings if isinstance(b.value, relax.Call)
            and _tvm.op_name(b.value) == "relax.nn.conv2d"]


@pytest.mark.parametrize("packed_faster", [True, False])
def test_an_rprogram_is_called_with_its_veu_kernels_weights_packed(tmp_path, packed_faster):
    """op1 and op2 run as an rProgram whose vEU kernels read packed weights where the
    ``serial-packed`` records are the faster, the model's own otherwise."""
    fork = dag_model(seed=2, num_ops=3, channels=8, size=8, p=0.6)[0]
    kernels = KernelDB(tmp_path, host_target(), create=True)
    tune_kernels(fork, kernels, variants=("serial", "serial-packed"), trials=4,
                 min_repeat_ms=1)
    _skew(tmp_path, "serial-packed" if packed_faster else "serial", 1e-9)
    rprogram = RProgramPass("ios", cost_model=Concurrent(), kernels=KernelDB(tmp_path),
                            target=kernels.target)
    built = rprogram(fork)
    assert len(rprogram.programs) == 1
    original = _conv_weights(fork)
    programs = [p.name for p in rprogram.programs]
    weights = [w for w in _weights(built, programs) if w.size > 8]  # (not the biases)
    assert len(weights) == 2  # op1's and op2's
    repacked = [w for w in weights
                if not any(w.shape == o.shape and np.array_equal(w, o) for o in original)]
    assert len(repacked) == (2 if packed_faster else 0)
    for w in repacked:  # each one an original weight rearranged
        assert any(w.size == o.size and np.array_equal(np.sort(w, axis=None),
                                                       np.sort(o, axis=None)) for o in original)
    x = random_inputs(fork)
    np.testing.assert_allclose(run(tvm.compile(built, kernels.target), x),
                               run(tvm.compile(fork, "llvm"), x), rtol=1e-4, atol=1e-4)
