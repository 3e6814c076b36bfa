"""The benchmark table: every column measured side by side in one run, or "not measured".

``python -m tvm_ios.cli.bench_table RESULTS.json... -o docs/benchmarks.md`` reads the JSON lists
``tvm-ios bench-run --json`` and ``python -m tvm_ios.cli.bench_torch --json`` write, or the
JSON lines of the GPU pack's ``results.jsonl`` (:mod:`tvm_ios.bench.isolated`), and
renders one Markdown table: per model and batch, the median latency of each column and the
ratio of the best baseline (PyTorch modes, TVM's default build) to the best tvm-ios column.
A cell with no valid measurement says ``not measured`` (or ``mismatch`` when the output
differed from the reference): a figure is never estimated. A grouped bar chart of the
measured cells is written beside the page.
"""
from __future__ import annotations

import datetime
import logging
from pathlib import Path

__all__ = ["COLUMNS", "BASELINES", "OURS", "MODELS", "BATCHES", "collect", "render",
           "bar_chart"]

logger = logging.getLogger(__name__)

#: (variant, heading) of each column, in order.
COLUMNS = (("torch-eager", "PyTorch eager"), ("torch-cuda-graph", "CUDA graphs"),
           ("torch-compile", "torch.compile"),
           ("torch-compile-max-autotune", "torch.compile max-autotune"),
           ("tvm-default", "TVM default"), ("tvm-cudagraph", "TVM CUDA graph"),
           ("ios-sequential", "tvm-ios stages"), ("ios-rprogram", "tvm-ios rProgram"),
           ("ios-wavefront", "tvm-ios wavefront"), ("ios-graphturbo", "tvm-ios GraphTurbo"))
BASELINES = ("torch-eager", "torch-cuda-graph", "torch-compile", "torch-compile-max-autotune",
             "tvm-default", "tvm-cudagraph")
OURS = ("ios-sequential", "ios-rprogram", "ios-wavefront", "ios-graphturbo")
#: Variant names of the GPU pack (:mod:`tvm_ios.bench.gpu_pack`) -> their column.
ALIASES = {"ios-stages": "ios-sequential"}
MODELS = ("inception_v3", "squeezenet", "nasnet_a", "randwire", "resnext29")
BATCHES = (1, 16)
NOT_MEASURED = "not measured"
_METHOD = """
## How the figures are made

Every column runs the same architecture with the same weights: the zoo's framework-neutral
definition (`tvm_ios/models/netdef.py`) is emitted to Relax and to a `torch.nn.Module`
(`tvm_ios/models/torch_emit.py`), and all columns use the weights materialised from the
artifact's recipes (`tvm_ios/bench/tensors.py`). Before it is timed, each column's output is
compared with the CPU (llvm) reference stored in the artifact; a column that differs shows
*mismatch* and no figure. Timing: warm-up, then repeats rotating over four input tensors,
median; TVM columns use TVM's time evaluator (CUDA events), PyTorch columns CUDA events.
All columns compute in float32 (PyTorch with TF32 off); CUDA kernels of the TVM builds are
compiled for sm_90a by nvcc on the build machine.

On the build machine (no GPU needed), `python benchmarks/gpu_artifacts.py -o gpu_bench
--download-ffi --with-numpy` does all of the following, one pack per model:

```
for m in inception_v3 squeezenet nasnet_a randwire resnext29; do for b in 1 16; do
  tvm-ios build --model $m --batch $b --target nvidia/nvidia-h100 -o art/$m-b$b-default
  tvm-ios build --model $m --batch $b --target nvidia/nvidia-h100 --ios -o art/$m-b$b-ios
  tvm-ios build --model $m --batch $b --target nvidia/nvidia-h100 --engine rprogram \\
      -o art/$m-b$b-rprogram
done; done
python scripts/pack_runtime.py art/* --download-ffi --with-numpy -o pack.tar.gz  # < 64 MiB
```

On the GPU host (Python 3.12, NVIDIA driver for CUDA 13, no TVM, no network):
`tar xzf pack.tar.gz && sh pack/run.sh` (writes `results.json`, and `torch_results.json` when
the host has PyTorch; `TORCH_MODES="eager cuda-graph compile compile-max-autotune"` adds
max-autotune, which may take long to compile), then here:
`python -m tvm_ios.cli.bench_table results.json torch_results.json -o docs/benchmarks.md`.
"""


def collect(rows: list[dict]) -> tuple[dict, dict]:
    """``(figures, meta)`` from result rows.

    ``figures[(model, batch, variant)]`` is a latency in ms, or the string ``"mismatch"``;
    ``meta`` holds the devices and versions seen in valid rows.
    """
    figures, meta = {}, {"devices": set(), "versions": set()}
    for row in rows:
        if "provenance" in row:  # the first line of a bench_all results file
            continue
        variant = ALIASES.get(row.get("variant"), row.get("variant"))
        key = (row.get("model"), row.get("batch"), variant)
        if row.get("status") in ("mismatch", "timeout", "error", "crashed"):
            figures.setdefault(key, row["status"])
        elif row.get("status") == "ok" and row.get("latency_ms") is not None:
            figures[key] = float(row["latency_ms"])
            meta["devices"].add(row["device"])
            versions = row.get("versions", {})
            meta["versions"].update(f"{k} {versions[k]}" for k in ("tvm", "torch", "cuda")
                                    if versions.get(k))
    return figures, meta


def _cell(value) -> str:
    if value is None:
        return NOT_MEASURED
    return value if isinstance(value, str) else f"{value:.3f}"


def _ratio(figures: dict, model: str, batch: int) -> str:
    base = [figures.get((model, batch, v)) for v in BASELINES]
    ours = [figures.get((model, batch, v)) for v in OURS]
    base = [v for v in base if isinstance(v, float)]
    ours = [v for v in ours if isinstance(v, float)]
    if not base or not ours:
        return NOT_MEASURED
    return f"{min(base) / min(ours):.2f}x"


def render(figures: dict, meta: dict, date: str | None = None,
           chart: str | None = None) -> str:
    """The Markdown page: header with device, versions and date, the table, the chart."""
    date = date or datetime.date.today().isoformat()
    devices = ", ".join(sorted(meta.get("devices", ()))) or NOT_MEASURED
    versions = ", ".join(sorted(meta.get("versions", ()))) or NOT_MEASURED
    lines = ["# Benchmarks: tvm-ios against TVM's default build and PyTorch", "",
             f"- Device and driver: {devices}", f"- Versions: {versions}",
             f"- Generated: {date}", "",
             "Median latency in milliseconds (lower is better); the last column is the best "
             "baseline (PyTorch modes, TVM default) divided by the best tvm-ios column.", "",
             "| model | batch | " + " | ".join(h for _, h in COLUMNS) + " | best baseline / "
             "tvm-ios |", "|" + " --- |" * (len(COLUMNS) + 3)]
    extra = sorted({(m, b) for m, b, _ in figures if m not in MODELS or b not in BATCHES},
                   key=str)
    for model, batches in [(m, BATCHES) for m in MODELS] + [(m, (b,)) for m, b in extra]:
        for batch in batches:
            cells = [_cell(figures.get((model, batch, v))) for v, _ in COLUMNS]
            lines.append(f"| {model} | {batch} | " + " | ".join(cells) + " | "
                         + _ratio(figures, model, batch) + " |")
    lines.append("")
    if chart:
        lines += [f"![median latency per model and batch]({chart})", ""]
    if not any(isinstance(v, float) for v in figures.values()):
        lines += ["No GPU was available when this page was generated, so every cell says "
                  "*not measured* and there is no chart: no figure here is estimated.", ""]
    return "\n".join(lines) + _METHOD


def bar_chart(figures: dict, path: str | Path) -> Path | None:
    """A grouped bar chart of the measured cells; None (nothing written) when none is."""
    keys = [(m, b) for m in MODELS for b in BATCHES] + sorted(
        {(m, b) for m, b, _ in figures if m not in MODELS or b not in BATCHES}, key=str)
    measured = [(m, b) for m, b in keys
                if any(isinstance(figures.get((m, b, v)), float) for v, _ in COLUMNS)]
    if not measured:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    width = 0.8 / len(COLUMNS)
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(measured)), 4))
    for i, (variant, heading) in enumerate(COLUMNS):
        values = [figures.get((m, b, variant)) for m, b in measured]
        xs = [k + (i - len(COLUMNS) / 2) * width for k in range(len(measured))]
        ax.bar(xs, [v if isinstance(v, float) else 0.0 for v in values], width, label=heading)
    ax.set_xticks(range(len(measured)), [f"{m}\nbatch {b}" for m, b in measured], fontsize=8)
    ax.set_ylabel("median latency (ms)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)
