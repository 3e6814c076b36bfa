"""Stage signatures: the workload key's identity, read off the bindings without building."""
import itertools

import pytest
from cost_models import inception_like

from tvm_ios.cost.measured import StageRecorder
from tvm_ios.cost.signature import StageSigner
from tvm_ios.cost.stage_module import stage_module
from tvm_ios.graph.extract import extract
from tvm_ios.schedule.ios import ios_schedule
from tvm_ios.testing import dag_model


def _candidates(ext, **options):
    recorder = StageRecorder(ext.graph)
    ios_schedule(ext.graph, recorder, **options)
    return [([list(g) for g in groups], merge) for groups, merge in recorder.seen]


@pytest.mark.parametrize("make", [lambda: inception_like(channels=8, size=8, blocks=2)[0],
                                  lambda: dag_model(5, num_ops=9, channels=8, size=8, p=0.4)[0]])
def test_same_signature_exactly_when_same_workload_key(make):
    ext = extract(make()["main"])
    signer = StageSigner(ext)
    stages = _candidates(ext, max_group_size=2, max_num_groups=3)[:120]
    pairs = [(signer.signature(g, m), stage_module(ext, g, m, signer).key) for g, m in stages]
    by_signature, by_key = {}, {}
    for signature, key in pairs:
        by_signature.setdefault(signature, set()).add(key)
        by_key.setdefault(key, set()).add(signature)
    assert all(len(v) == 1 for v in by_signature.values())
    assert all(len(v) == 1 for v in by_key.values())
    assert len(by_key) < len(pairs)  # identical blocks share (the test is not vacuous)


def test_signatures_do_not_depend_on_weights_names_or_process_order():
    first = extract(inception_like(channels=8, size=8, blocks=2, seed=0)[0]["main"])
    second = extract(inception_like(channels=8, size=8, blocks=2, seed=1)[0]["main"])
    stages = _candidates(first, max_group_size=1, max_num_groups=2)
    forward = [StageSigner(first).signature(g, m) for g, m in stages]
    backward = StageSigner(second)
    assert [backward.signature(g, m) for g, m in reversed(stages)][::-1] == forward


def test_shapes_wiring_and_merging_tell_stages_apart():
    ext = extract(inception_like(channels=8, size=8, blocks=1)[0]["main"])
    wider = extract(inception_like(channels=16, size=8, blocks=1)[0]["main"])
    signer, other = StageSigner(ext), StageSigner(wider)
    mergeable = next((g, m) for g, m in _candidates(ext, max_group_size=1, max_num_groups=3)
                     if m)
    ops = [[i] for g in mergeable[0] for i in g]
    assert signer.signature(ops, True) != signer.signature(ops, False)
    assert signer.signature(ops, True) != other.signature(ops, True)
    singles = [signer.signature([[i]]) for i in range(len(ext.graph.nodes))]
    pairs = {signer.signature([[a], [b]]) for a, b in itertools.permutations(
        range(len(ext.graph.nodes)), 2)}
    assert not pairs & set(singles)
