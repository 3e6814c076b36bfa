"""docs/models.md from ``benchmarks/results/models.json`` (written by ``benchmarks/models.py``).

One row per torchvision architecture: what the import and the schedule made of it, every
column's median latency, and the tvm-ios build's ratios (paired round by round) over TVM's
default build and over the best of the baselines; then, per architecture, where we lose and
why, in sentences derived from the figures themselves.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_latency_report import paired

__all__ = ["COLUMNS", "BASELINES", "render"]

OURS = "tvm-ios rProgram"
#: Timed columns, in the table's order.
COLUMNS = ("TVM default", "TVM tuned sequential", OURS, "ONNX Runtime", "PyTorch eager")
#: What "the best baseline" is the best of.
BASELINES = ("TVM default", "TVM tuned sequential", "ONNX Runtime", "PyTorch eager")


def _ms(col: dict | None) -> str:
    if not col or col.get("error", "").startswith("not run"):
        return "-"
    if "median_ms" in col:
        return f"{col['median_ms']:.2f}"
    return "differs" if "differs" in col.get("error", "") else "failed"


def _ratio(cols: dict, b) -> str:
    r = paired(cols, OURS, b)
    return "-" if r is None else f"{r[0]:.2f}x"


def _diff(cols: dict) -> str:
    mine = cols.get(OURS, {})
    if "max_abs_diff" not in mine:
        return "-"
    return f"{mine['max_abs_diff'] / mine['max_abs_reference']:.1e}"


def _row(name: str, entry: dict) -> str:
    if "error" in entry:
        return f"| {name} | failed: {entry['error'][:80]} |" + " |" * 13
    info, cols = entry["info"], entry["columns"]
    tuned = (f"{info['kernels_tuned']}/{info['kernels_total']}" if info.get("kernels")
             else "none")
    return (f"| {name} | {info['image_size']} | yes | yes | {_diff(cols)} | {info['units']} "
            f"({info['batch_norms']}) | {info['concurrent']}/{info['stages']} "
            f"({info['units_in_concurrent']}) | {info['rprograms']} | {tuned} | "
            + " | ".join(_ms(cols.get(c)) for c in COLUMNS)
            + f" | {_ratio(cols, 'TVM default')} | {_ratio(cols, BASELINES)} |")


def _best_baseline(cols: dict) -> tuple[str, float] | None:
    timed = [(c, cols[c]["median_ms"]) for c in BASELINES if "median_ms" in cols.get(c, {})]
    return min(timed, key=lambda t: t[1]) if timed else None


def _why(name: str, entry: dict) -> str | None:
    """A sentence on where this architecture loses, from its own figures (None: it wins)."""
    if "error" in entry:
        return f"- **{name}**: not measured ({entry['error'][:120]})."
    info, cols = entry["info"], entry["columns"]
    best = _best_baseline(cols)
    ours = cols.get(OURS, {}).get("median_ms")
    if best is None or ours is None or ours <= best[1]:
        return None
    parts = [f"- **{name}**: {ours:.2f} ms against {best[0]} {best[1]:.2f} ms "
             f"({best[1] / ours:.2f}x)."]
    default = cols.get("TVM default", {}).get("median_ms")
    if default:
        parts.append(f"Its schedule ({info['concurrent']} concurrent stages of "
                     f"{info['stages']}, {info['rprograms']} rPrograms) and kernels give "
                     f"{default / ours:.2f}x over TVM's default build.")
    if not info.get("kernels"):
        parts.append("No kernel has a tuned record here (no database for this model and "
                     "CPU): the kernels are TVM's untuned defaults, which "
                     f"{best[0]}'s own kernels beat; `tvm-ios run --tune SECONDS` tunes them.")
    else:
        parts.append(f"{info['kernels_tuned']} of {info['kernels_total']} kernels have a "
                     "tuned record" + _tuning(info) + ".")
        parts += _tuned_split(cols, ours, best)
    return " ".join(parts)


def _tuning(info: dict) -> str:
    t = info.get("database_tuning") or {}
    return f" ({t['trials']} trials in {t['seconds']:.0f} s)" if t.get("trials") else ""


def _tuned_split(cols: dict, ours: float, best: tuple) -> list[str]:
    """Whether the kernels or the schedule lose: TVM's tuned sequential build runs the same
    kernels one after another."""
    seq = cols.get("TVM tuned sequential", {}).get("median_ms")
    if not seq:
        return []
    if best[0] == "TVM tuned sequential":
        return [f"With the same tuned kernels in turn TVM takes {seq:.2f} ms: the "
                f"concurrent stages cost more than they save here ({seq / ours:.2f}x)."]
    kernels = (f"TVM's tuned sequential build, the same kernels in turn, takes {seq:.2f} ms: "
               f"the kernels are {seq / best[1]:.1f}x slower than {best[0]}'s (a few trials "
               "per kernel; more `--tune` seconds rank more candidates)")
    schedule = (f"and the schedule gives {seq / ours:.2f}x over it" if ours <= seq else
                f"and the concurrent stages cost more than they save ({seq / ours:.2f}x)")
    return [f"{kernels}, {schedule}."]


def _header(prov: dict, results: dict, source: str) -> list[str]:
    tune = results.get("tune_seconds") or 0
    return ["# Your model, your machine: torchvision architectures through tvm-ios", "",
            f"Written by `benchmarks/models.py` from `{Path(source).name}`, which it wrote; "
            "do not edit by hand.", "",
            f"Measured with `{prov.get('command', '?')}` at commit "
            f"{str(prov.get('commit', '?'))[:7]}{' (dirty)' if prov.get('dirty') else ''} on "
            f"{prov.get('cpu', '?')} ({prov.get('cores', '?')} cores), "
            f"{results['threads']} threads, batch 1, {prov.get('date', '?')[:10]}; "
            f"versions {prov.get('versions', {})}. CPU only: no GPU figure here.", "",
            "Each architecture takes the path of `tvm-ios run --model torchvision:NAME "
            "--engine rprogram` (random weights and batch-norm statistics; torch.export; "
            "batch norms folded; kernels from `--kernels auto`"
            + (f"; `--tune {tune:g}` first" if tune else ", no tuning in this run") + "). "
            "Every column was checked against TVM's default build before it was timed; "
            "latencies are medians in ms, ratios paired round by round.", ""]


def render(document: dict, source: str) -> str:
    """The markdown page of a models results file."""
    prov, results = document["provenance"], document["results"]
    lines = _header(prov, results, source)
    lines += ["| model | px | imported | compiled | rel diff | units (batch norms) | "
              "concurrent/stages (units in them) | rPrograms | kernels tuned | "
              + " | ".join(f"{c} ms" for c in COLUMNS) + " | vs TVM default | "
              "vs best baseline |", "|---|" + "---:|" * 15]
    lines += [_row(name, entry) for name, entry in results["archs"].items()]
    whys = [w for name, entry in results["archs"].items() if (w := _why(name, entry))]
    lines += ["", "## Where we lose, and why", ""]
    lines += whys or ["Nowhere in this run: the tvm-ios build is the fastest column on every "
                      "architecture."]
    lines += ["", "Timing: " + ", ".join(
        f"{name} {entry.get('seconds', 0):.0f} s" for name, entry in results["archs"].items())
        + " (import, tuning, builds and timing)."]
    tuned = {name: entry["info"]["database_tuning"] for name, entry in results["archs"].items()
             if (entry.get("info") or {}).get("database_tuning")}
    if tuned:
        lines += ["", "Tuning behind the kernel databases used (this run's and earlier "
                  "`--tune` runs into the cache, from each database's `target.json`): " + ", ".join(
                      f"{name} {t['seconds']:.0f} s ({t['trials']} trials)"
                      for name, t in tuned.items()) + "."]
    return "\n".join(lines) + "\n"
