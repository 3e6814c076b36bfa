"""Libraries carry their schedule; what cannot run here is refused with the reason."""
import json

import numpy as np
import pytest
import tvm

from tvm_ios import _tvm
from tvm_ios.runtime import library
from tvm_ios.runtime.compare import build
from tvm_ios.testing import dag_model

META = {"target": {"kind": "llvm"}, "target_kind": "llvm", "tvm": _tvm.TVM_VERSION,
        "inputs": [{"name": "x", "shape": [1, 4, 8, 8], "dtype": "float32"}],
        "weights": "abc", "num_veus": 2, "model": "m"}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A small model built through the pipeline and exported, with its module."""
    mod = dag_model(1, num_ops=4)[0]
    path = tmp_path_factory.mktemp("lib") / "m.so"
    tvm.compile(mod, "llvm", relax_pipeline="ios").export_library(str(path))
    return mod, path


def test_exported_library_carries_its_report(exported):
    mod, path = exported
    meta = library.read_metadata(library.load_library(path))
    assert meta["tvm"] == _tvm.TVM_VERSION and meta["target_kind"] == "llvm"
    assert meta["passes"][-1] == "default build (llvm)" and "IOSSchedule" in meta["passes"]
    assert meta["inputs"] == library.function_inputs(mod)
    assert meta["stages"] == len(meta["schedule"]["stages"]) > 0
    library.check_library(meta, library.function_inputs(mod), workers=max(1, meta["num_veus"]))


def test_attach_metadata_roundtrip():
    mod = library.attach_metadata(dag_model(0, num_ops=2)[0], {"answer": [1, 2]})
    vm = _tvm.virtual_machine(build(mod))
    assert json.loads(str(vm[library.METADATA_FUNC]()))["answer"] == [1, 2]


def test_library_without_metadata(tmp_path):
    path = tmp_path / "plain.so"
    build(dag_model(0, num_ops=2)[0]).export_library(str(path))
    with pytest.raises(library.LibraryError, match="carries no tvm-ios metadata"):
        library.read_metadata(library.load_library(path), where=str(path))


def test_unloadable_and_missing_files(tmp_path):
    bad = tmp_path / "bad.so"
    bad.write_text("not a library")
    with pytest.raises(library.LibraryError, match="cannot be loaded by TVM"):
        library.load_library(bad)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        library.load_library(tmp_path / "absent.so")


@pytest.mark.parametrize("change,check,message", [
    ({"tvm": "0.26.0"}, {}, "built with TVM 0.26.0"),
    ({"target": {"kind": "cuda", "arch": "sm_90"}, "target_kind": "cuda"}, {},
     "no CUDA device is present"),
    ({}, {"inputs": [{"name": "x", "shape": [1, 4, 9, 9], "dtype": "float32"}]},
     r"takes inputs x\(1, 4, 8, 8\) float32 but the model gives x\(1, 4, 9, 9\)"),
    ({}, {"weights": "other"}, "built from other weights"),
    ({}, {"workers": 1}, "2 vEUs, one per worker .* pool has 1 workers here: set "
                         "TVM_NUM_THREADS=2"),
])
def test_check_refuses_with_the_reason(change, check, message):
    if "cuda" in json.dumps(change) and _tvm.device_exists(_tvm.make_target("cuda")):
        pytest.skip("a CUDA device is present")
    with pytest.raises(library.LibraryError, match=message):
        library.check_library({**META, **change}, **check)


def test_check_accepts_what_fits():
    library.check_library(META, inputs=META["inputs"], weights="abc", workers=2)


def test_weights_digest_sees_values_names_and_shapes():
    a = {"w": np.zeros((2, 2), "float32")}
    assert library.weights_digest(a) == library.weights_digest({"w": np.zeros((2, 2),
                                                                              "float32")})
    assert library.weights_digest(a) != library.weights_digest({"w": np.ones((2, 2),
                                                                             "float32")})
    assert library.weights_digest(a) != library.weights_digest({"v": a["w"]})
    assert library.weights_digest(a) != library.weights_digest({"w": np.zeros(4, "float32")})
