"""EP specs: presets of the paper's Table 3, files, inline items, errors naming the part."""
import json

import pytest

from tvm_ios.pipelining.eps import PRESETS, parse_eps


def test_presets_match_table3():
    def counts(name):
        eps = parse_eps(name)
        return ([e.units for e in eps if e.is_fast], [e.units for e in eps if not e.is_fast])
    assert counts("c1") == ([8], [8])
    assert counts("c2") == ([8, 8], [8, 8])
    assert counts("c3") == ([4] * 4, [8, 8])
    assert counts("c4") == ([8, 8], [4] * 4)
    assert counts("c5") == ([4] * 4, [4] * 4)
    assert all(e.bandwidth_gbs == 40 for e in PRESETS["c2"] if e.is_fast)
    assert len(parse_eps("cpu2")) == 2


def test_inline_and_file(tmp_path):
    eps = parse_eps("cpu:8:fep:40:8,cpu:4:SEP:20")
    assert [e.speed_class for e in eps] == ["FEP", "SEP"] and eps[1].units == 4
    path = tmp_path / "eps.json"
    path.write_text(json.dumps({"eps": [{"name": "a", "kind": "cpu", "units": 2,
                                         "speed_class": "FEP", "bandwidth_gbs": 10}]}))
    assert parse_eps(str(path))[0].name == "a"


@pytest.mark.parametrize("spec,message", [
    ("c9", "neither a preset"),
    ("cpu:8:FEP", "item 0 'cpu:8:FEP'"),
    ("cpu:8:FEP:40,cpu:x:SEP:20", "item 1 'cpu:x:SEP:20'"),
    ("cpu:8:MEDIUM:40", "class must be FEP or SEP"),
    ("tpu:8:FEP:40", "kind must be"),
    ("", "give a preset"),
])
def test_bad_specs_are_named(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_eps(spec)


def test_bad_file(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="is not JSON"):
        parse_eps(str(path))
    path.write_text(json.dumps([{"name": "a", "kind": "cpu"}]))
    with pytest.raises(ValueError, match="entry 0"):
        parse_eps(str(path))
