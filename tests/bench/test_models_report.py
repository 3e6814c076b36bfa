"""docs/models.md's renderer (``benchmarks/models_report.py``): ratios paired by round, a
sentence of why wherever the tvm-ios build loses, none where it wins."""
import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _report(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location("models_report", BENCH / "models_report.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "models_report", module)
    spec.loader.exec_module(module)
    return module


def _entry(ours: list, default: list, ort: list, kernels=None) -> dict:
    def col(ms):
        return {"median_ms": sorted(ms)[len(ms) // 2], "round_ms": ms, "max_abs_diff": 0.0,
                "max_abs_reference": 1.0}
    info = {"image_size": 64, "units": 30, "batch_norms": 0, "concurrent": 4, "stages": 16,
            "units_in_concurrent": 8, "rprograms": 4, "kernels": kernels, "kernels_tuned": 3,
            "kernels_total": 18}
    return {"info": info, "columns": {"tvm-ios rProgram": col(ours), "TVM default": col(default),
                                      "ONNX Runtime": col(ort),
                                      "TVM tuned sequential": {"error": "not run (none)"}}}


def _doc(archs: dict) -> dict:
    return {"provenance": {"command": "x", "commit": "abcdef0", "cpu": "c", "cores": 2,
                           "date": "2026-12-03", "versions": {}},
            "results": {"threads": 2, "tune_seconds": 0, "archs": archs}}


def test_a_loss_is_explained_and_ratios_are_paired_by_round(monkeypatch):
    report = _report(monkeypatch)
    page = report.render(_doc({"slow": _entry([4.0, 8.0, 4.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]),
                               "fast": _entry([1.0, 1.0, 1.0], [2.0, 2.0, 2.0], [3.0, 3.0, 3.0],
                                              kernels="db")}), "models.json")
    rows = {line.split(" | ")[0][2:]: line for line in page.splitlines() if line.startswith("| ")}
    assert rows["slow"].endswith("| 0.50x | 0.25x |")  # each round's ratio, not the medians'
    assert rows["fast"].endswith("| 2.00x | 2.00x |") and "| 3/18 |" in rows["fast"]
    assert "| - |" in rows["slow"]  # a column not built is a dash, not a failure
    why = page.split("## Where we lose, and why")[1]
    assert "**slow**: 4.00 ms against ONNX Runtime 1.00 ms (0.25x)" in why
    assert "No kernel has a tuned record here" in why and "**fast**" not in why


def test_a_run_that_wins_everywhere_says_so(monkeypatch):
    report = _report(monkeypatch)
    page = report.render(_doc({"fast": _entry([1.0], [2.0], [3.0])}), "models.json")
    assert "Nowhere in this run" in page


def test_the_tuning_behind_each_database_is_stated(monkeypatch):
    report = _report(monkeypatch)
    tuned = _entry([1.0], [2.0], [3.0], kernels="db")
    tuned["info"]["database_tuning"] = {"runs": 8, "seconds": 399.4, "trials": 300}
    page = report.render(_doc({"tuned": tuned, "untuned": _entry([1.0], [2.0], [3.0])}),
                         "models.json")
    line = next(x for x in page.splitlines() if x.startswith("Tuning behind"))
    assert "tuned 399 s (300 trials)" in line and "untuned" not in line


def test_a_tuned_loss_says_whether_the_kernels_or_the_schedule_lose(monkeypatch):
    report = _report(monkeypatch)
    entry = _entry([6.0], [12.0], [2.0], kernels="db")
    entry["info"]["database_tuning"] = {"runs": 1, "seconds": 300.0, "trials": 200}
    entry["columns"]["TVM tuned sequential"] = {"median_ms": 8.0, "round_ms": [8.0],
                                                "max_abs_diff": 0.0, "max_abs_reference": 1.0}
    why = report.render(_doc({"m": entry}), "models.json").split("## Where we lose")[1]
    assert "3 of 18 kernels have a tuned record (200 trials in 300 s)" in why
    assert "takes 8.00 ms: the kernels are 4.0x slower than ONNX Runtime's" in why
    assert "the schedule gives 1.33x over it" in why
    entry["columns"]["tvm-ios rProgram"]["median_ms"] = 10.0
    why = report.render(_doc({"m": entry}), "models.json").split("## Where we lose")[1]
    assert "the concurrent stages cost more than they save (0.80x)" in why
