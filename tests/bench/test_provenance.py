"""Every results file is written by the script that measured it, with its provenance."""
import json
import os
import re
import subprocess

import pytest

from tvm_ios.bench.provenance import (MEASURED_ENV, REPO_ROOT, REQUIRED, REQUIRED_VERSIONS,
                                      check_results_file, provenance, write_model_rows,
                                      write_results)

RESULTS = sorted((REPO_ROOT / "benchmarks" / "results").glob("*"))
#: Data files of the tests that a script measured (same format, same check).
TEST_DATA = sorted((REPO_ROOT / "tests").glob("*/data/*.json"))


@pytest.mark.parametrize("path", RESULTS + TEST_DATA, ids=lambda p: p.name)
def test_results_file_has_provenance_and_its_script_exists(path):
    assert path.suffix == ".json", f"{path}: results files are JSON written by write_results"
    assert check_results_file(path) == []
    record = json.loads(path.read_text())["provenance"]
    assert re.fullmatch(r"[0-9a-f]{40}", record["commit"])
    assert record["command"].startswith(f"python {record['script']}")


def test_every_results_file_is_checked():
    assert RESULTS, "benchmarks/results/ holds no results file"
    assert TEST_DATA, "the tests' measured data file is missing"


def test_written_file_passes_and_records_this_checkout(tmp_path):
    argv = ["benchmarks/tune_cost.py", "--models", "squeezenet", "-r", "2"]
    path = write_results(tmp_path / "r.json", {"rows": [{"ms": 1.5}]}, provenance(argv))
    assert check_results_file(path) == []
    record = json.loads(path.read_text())["provenance"]
    assert set(REQUIRED) <= set(record) and set(REQUIRED_VERSIONS) <= set(record["versions"])
    head = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert record["commit"] == head and isinstance(record["dirty"], bool)
    assert record["command"] == "python benchmarks/tune_cost.py --models squeezenet -r 2"
    assert record["cpu"] and record["cores"] >= 1 and record["date"] <= record["finished"]


def test_the_environment_a_run_measured_under_is_recorded(tmp_path, monkeypatch):
    for name in [*MEASURED_ENV, *(k for k in os.environ if k.startswith("MALLOC_"))]:
        monkeypatch.delenv(name, raising=False)  # whatever the shell running the tests set
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1")
    monkeypatch.setenv("MALLOC_ARENA_MAX", "2")
    monkeypatch.setenv("HOME_UNRELATED_TO_TIMING", "x")
    record = json.loads(write_results(tmp_path / "r.json", {}, provenance(
        ["benchmarks/tune_cost.py"])).read_text())["provenance"]
    assert record["environment"] == {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1",
                                     "MALLOC_ARENA_MAX": "2"}


def test_model_rows_are_measured_reported_and_written_in_order(tmp_path):
    reported = []
    path = write_model_rows(tmp_path / "r.json", ["a:1", "b:2"],
                            lambda spec: {"model": spec.split(":")[0], "ms": len(spec)},
                            reported.append, provenance(["benchmarks/kernels_in_model.py"]))
    assert check_results_file(path) == []
    results = json.loads(path.read_text())["results"]
    assert results["models"] == reported == [{"model": "a", "ms": 3}, {"model": "b", "ms": 3}]
    assert len(results["load_before"]) == len(results["load_after"]) == 3


def _write(tmp_path, argv=("benchmarks/tune_cost.py",)):
    path = write_results(tmp_path / "r.json", {"rows": [{"ms": 1.5}]}, provenance(list(argv)))
    return path, json.loads(path.read_text())


def test_a_hand_edit_is_caught(tmp_path):
    path, data = _write(tmp_path)
    data["results"]["rows"][0]["ms"] = 1.4                   # a figure "corrected" by hand
    path.write_text(json.dumps(data))
    assert any("digest mismatch" in p for p in check_results_file(path))
    path, data = _write(tmp_path)
    data["note"] = "measured logs were reused"               # a key the script never writes
    path.write_text(json.dumps(data))
    assert any("exactly 'provenance' and 'results'" in p for p in check_results_file(path))


def test_missing_fields_and_scripts_are_named(tmp_path):
    path, data = _write(tmp_path, ["benchmarks/no_such_script.py"])
    assert any("no_such_script.py" in p for p in check_results_file(path))
    path, data = _write(tmp_path)
    del data["provenance"]["cpu"], data["provenance"]["versions"]["tvm"]
    path.write_text(json.dumps(data))
    problems = check_results_file(path)
    assert any("lacks 'cpu'" in p for p in problems)
    assert any("versions lacks 'tvm'" in p for p in problems)


def test_numeric_keys_are_digested_as_they_read_back(tmp_path):
    """``{10: .., 2: ..}`` is written with string keys, which sort another way: the digest
    is of what the file holds."""
    path = write_results(tmp_path / "r.json", {"figures": {10: 1.0, 2: 2.0}},
                         provenance(["benchmarks/cpu_latency.py"]))
    assert check_results_file(path) == []
    assert json.loads(path.read_text())["results"] == {"figures": {"10": 1.0, "2": 2.0}}
