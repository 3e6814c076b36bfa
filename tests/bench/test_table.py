"""The table: figures placed by column, ratios, mismatches, "not measured", the chart."""
from tvm_ios.bench.table import NOT_MEASURED, bar_chart, collect, render
from tvm_ios.cli.bench_table import main


def _row(variant, latency, status="ok", model="squeezenet", batch=1):
    return {"model": model, "batch": batch, "variant": variant, "status": status,
            "latency_ms": latency, "device": "cpu", "versions": {"tvm": "0.27.0.post1"}}


def _line(page, model, batch):
    return next(l for l in page.splitlines() if l.startswith(f"| {model} | {batch} |"))


def test_ratio_is_best_baseline_over_best_ours():
    rows = [_row("torch-eager", 3.0), _row("tvm-default", 2.0), _row("ios-sequential", 1.0),
            _row("torch-compile", None, status="failed: RuntimeError")]
    figures, meta = collect(rows)
    cells = [c.strip() for c in _line(render(figures, meta), "squeezenet", 1).split("|")[1:-1]]
    assert cells[2] == "3.000" and cells[6] == "2.000" and cells[8] == "1.000"
    assert cells[4] == NOT_MEASURED and cells[-1] == "2.00x"
    assert meta["devices"] == {"cpu"} and "tvm 0.27.0.post1" in meta["versions"]


def test_mismatch_is_shown_and_never_counted():
    figures, meta = collect([_row("tvm-default", None, status="mismatch"),
                             _row("ios-sequential", 1.0)])
    line = _line(render(figures, meta), "squeezenet", 1)
    assert "mismatch" in line and line.rstrip(" |").endswith(NOT_MEASURED)


def test_nothing_measured_says_so_and_draws_no_chart(tmp_path):
    page = render({}, {})
    assert _line(page, "nasnet_a", 16).count(NOT_MEASURED) == 11
    assert "no figure here is estimated" in page
    assert bar_chart({}, tmp_path / "c.png") is None


def test_chart_and_cli(tmp_path, capsys):
    import json

    results = tmp_path / "r.json"
    results.write_text(json.dumps([_row("tvm-default", 2.0), _row("ios-sequential", 1.5)]))
    out = tmp_path / "docs" / "benchmarks.md"
    assert main([str(results), "-o", str(out)]) == 0
    assert (tmp_path / "docs" / "benchmarks.png").stat().st_size > 1000
    assert "![median latency" in out.read_text() and "1.33x" in out.read_text()


def test_gpu_pack_results_lines_make_the_table(tmp_path):
    """results.jsonl of the GPU pack: provenance line, check records (no latency), time
    records; pack variant names map to the table's columns; faults show by name."""
    import json

    lines = [{"provenance": {"commit": "abc"}},
             dict(_row("ios-stages", None), phase="check"),
             dict(_row("tvm-default", None, status="timeout"), phase="check"),
             dict(_row("ios-stages", 1.5), phase="time"),
             dict(_row("ios-wavefront", 1.25, model="dag"), phase="time")]
    results = tmp_path / "results.jsonl"
    results.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    out = tmp_path / "gpu.md"
    assert main([str(results), "-o", str(out)]) == 0
    page = out.read_text()
    cells = [c.strip() for c in _line(page, "squeezenet", 1).split("|")[1:-1]]
    assert cells[8] == "1.500" and cells[6] == "timeout"
    assert "1.250" in _line(page, "dag", 1)
