"""The CPU table's provenance and its rendering (markdown table and bar chart) from JSON only.

``provenance`` is taken when the run starts: command line, commit (and whether the tree was
dirty), CPU model and cores, versions, date. ``tvm_ios.bench.provenance`` (the shared
helper) is used when it is installed; the fields here are the same.
"""
from __future__ import annotations

import datetime
import os
import platform
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpu_latency_bounds as bounds

COLUMNS = ("PyTorch eager", "torch.compile", "ONNX Runtime sequential",
           "ONNX Runtime parallel", "TVM default", "TVM tuned sequential",
           "tvm-ios sequential (tuned)", "tvm-ios stages (tuned)", "tvm-ios rProgram (tuned)")
BASELINES = COLUMNS[:4]
# what the rProgram's ratios are paired against, round by round: (label, column(s))
PAIRED = (("best baseline", BASELINES), ("TVM tuned sequential", "TVM tuned sequential"),
          ("tvm-ios sequential, the schedule's share", "tvm-ios sequential (tuned)"))
ROOT = Path(__file__).resolve().parents[1]


def _git(*args) -> str | None:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.lower().startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def provenance(argv) -> dict:
    """Who measured: command, commit, machine, versions, date (taken at the start).

    ``argv`` is the full command line (``sys.argv``). The shared helper
    (``tvm_ios.bench.provenance``) is used when it exists; this fallback has its fields.
    """
    try:
        from tvm_ios.bench.provenance import provenance as shared
        return shared(argv)
    except ImportError:
        pass
    status = _git("status", "--porcelain") or ""
    return {"command": " ".join(["python", *argv]), "script": "benchmarks/cpu_latency.py",
            "commit": _git("rev-parse", "HEAD"), "dirty": bool(status.strip()),
            "dirty_paths": [ln[3:] for ln in status.splitlines() if ln.strip()][:20],
            "cpu": _cpu(), "cores": len(os.sched_getaffinity(0)), "host": platform.node(),
            "platform": platform.platform(), "date": _now(), "versions": _versions()}


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _versions() -> dict:
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for key, dist in (("tvm", "apache-tvm"), ("tvm_ffi", "apache-tvm-ffi"), ("numpy", "numpy"),
                      ("tvm_ios", "tvm-ios"), ("torch", "torch"),
                      ("onnxruntime", "onnxruntime"), ("onnx", "onnx"),
                      ("xgboost", "xgboost-cpu")):
        try:
            out[key] = md.version(dist)
        except md.PackageNotFoundError:
            out[key] = None
    return out


def write_results(path, results, started: dict) -> Path:
    """``{"provenance", "results"}`` to ``path`` (the shared helper's format, digest included)."""
    try:
        from tvm_ios.bench.provenance import write_results as shared
        return shared(path, results, started)
    except ImportError:
        pass
    import hashlib
    import json

    results = json.loads(json.dumps(results, allow_nan=True))  # keys as they read back
    record = dict(started, versions=_versions(), finished=_now())
    record["load_average_at_end"] = list(os.getloadavg())
    text = json.dumps(results, sort_keys=True, separators=(",", ":"), allow_nan=True)
    record["results_sha256"] = hashlib.sha256(text.encode()).hexdigest()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"provenance": record, "results": results}, indent=1) + "\n")
    return path


def _names(b) -> list[str]:
    """A column name or a sequence of them, as a list."""
    return [b] if isinstance(b, str) else list(b)


def _ratio(row: dict, a: str, b) -> float | None:
    others = [row[n]["median_ms"] for n in _names(b) if "median_ms" in row.get(n, {})]
    if "median_ms" not in row.get(a, {}) or not others:
        return None
    return min(others) / row[a]["median_ms"]


def paired(row: dict, a: str, b) -> tuple[float, float, float] | None:
    """Median, least and most over the rounds of each round's ratio (the best of ``b`` in
    that round over ``a``'s figure of the same round), where the row holds each round's
    median (``round_ms``; results written before it do not): a machine whose speed moves
    between rounds moves both sides of a round's ratio alike."""
    series = [row[n]["round_ms"] for n in _names(b) if "round_ms" in row.get(n, {})]
    mine = row.get(a, {}).get("round_ms")
    if not mine or not series or any(len(s) != len(mine) for s in series):
        return None
    ratios = [min(s[i] for s in series) / mine[i] for i in range(len(mine))]
    return statistics.median(ratios), min(ratios), max(ratios)


def _paired_line(name: str, t: str, row: dict) -> list[str]:
    """One sentence of the rProgram's ratios paired round by round; none for older results."""
    ours = "tvm-ios rProgram (tuned)"
    parts = [f"{label} {r[0]:.2f}x ({r[1]:.2f}-{r[2]:.2f})" for label, b in PAIRED
             if (r := paired(row, ours, b)) is not None]
    if not parts:
        return []
    rounds = len(row[ours]["round_ms"])
    return [f"{name}, {t} threads, rProgram paired round by round (the median of the "
            f"{rounds} rounds' ratios, least-most): " + ", ".join(parts) + ".", ""]


def _cell(entry: dict) -> str:
    if "median_ms" in entry:
        return f"{entry['median_ms']:.2f}"
    return "n/a" if "error" in entry else ""


def _asked_models(command: str) -> list[str]:
    """The model names a ``cpu_latency.py`` command line asked for (``--models A:75 B``)."""
    words, names = command.split(), []
    if "--models" in words:
        for word in words[words.index("--models") + 1:]:
            if word.startswith("--"):
                break
            names.append(word.partition(":")[0])
    return names


def _env_prefix(prov: dict) -> str:
    """``NAME=value ...`` of the environment the run recorded, as a shell would prefix it."""
    env = prov.get("environment") or {}
    return "".join(f"{k}={shlex.quote(str(v))} " for k, v in env.items())


def render(document: dict, doc: str | None, source: str | None) -> str:
    """Markdown: one table per thread count, ratios; with ``doc`` also a PNG bar chart."""
    lines = []
    results = document["results"]
    prov = document.get("provenance")
    if prov:
        lines += [f"Measured {prov.get('date')} on {prov.get('cpu')} ({_cpu_detail(prov)})"
                  f", commit `{str(prov.get('commit'))[:10]}`"
                  f"{' (dirty tree)' if prov.get('dirty') else ''}; command: "
                  f"`{_env_prefix(prov)}{prov.get('command')}`", ""]
        asked = _asked_models(str(prov.get("command", "")))
        if len(asked) > len(results):
            lines += [f"The run was stopped after {len(results)} of the {len(asked)} models it "
                      f"was asked for: {', '.join(results)} measured; "
                      f"{', '.join(m for m in asked if m not in results)} not.", ""]
        load = prov.get("load_average_at_start")
        if load:
            lines += [f"Load average when it started: {load[0]:.1f} on {prov.get('cores')} "
                      "cores" + (" (the machine was shared: figures are noisy, ratios were "
                                 "measured side by side)" if load[0] > 1.0 else ""), ""]
    threads = sorted({t for r in results.values() for t in r["threads"]}, key=int)
    for t in threads:
        # a results file from before a column existed renders without it, not with blanks
        columns = [c for c in COLUMNS
                   if any(c in r["threads"].get(t, {}) for r in results.values())]
        lines += [f"### {t} thread{'s' if t != '1' else ''}, batch 1, median ms", "",
                  "| model | " + " | ".join(columns) + " | rProgram vs best baseline | "
                  "rProgram vs TVM tuned sequential |",
                  "|" + " --- |" * (len(columns) + 3)]
        for name, r in results.items():
            row = r["threads"].get(t, {})
            best = _ratio(row, "tvm-ios rProgram (tuned)", BASELINES)
            tuned = _ratio(row, "tvm-ios rProgram (tuned)", "TVM tuned sequential")
            cells = [_cell(row.get(c, {})) for c in columns]
            cells += [f"{best:.2f}x" if best else "n/a", f"{tuned:.2f}x" if tuned else "n/a"]
            lines.append(f"| {name} ({r['image_size']} px) | " + " | ".join(cells) + " |")
        lines.append("")
        for name, r in results.items():
            lines += _paired_line(name, t, r["threads"].get(t, {}))
    lines += _profiles(results)
    if doc:
        chart = _chart(results, threads, Path(doc).with_suffix(".png"))
        header = ["# CPU latency: tvm-ios against PyTorch, ONNX Runtime and TVM", "",
                  f"Generated by `python benchmarks/cpu_latency.py --render {source} --doc "
                  f"{doc}` from that file only; do not edit by hand.", ""]
        text = "\n".join(header + lines + [f"![CPU latency]({chart.name})", ""])
        Path(doc).write_text(text)
    return "\n".join(lines)


def _profiles(results: dict, top: int = 6) -> list[str]:
    """Where the time goes (``--profile``): top kernels of the tuned TVM builds, top ops of
    PyTorch eager, and the per-stage decisions of the rProgram build."""
    lines = []
    for name, r in results.items():
        profile = r.get("profile") or {}
        for col, rows in profile.items():
            if not isinstance(rows, list) or not rows:
                continue
            total = sum(x.get("total_us", 0) for x in rows)
            warmup = col.startswith("ONNX") and "runs" not in rows[0]
            lines += [f"#### {name}: {col}, top {top} of {len(rows)} listed "
                      f"({total / 1e3:.2f} ms in those)", ""]
            lines += ["Averaged over its runs with the warm-up run in (this file was written "
                      "before the warm-up was left out): a node's one-time costs of the first "
                      "run are in its figure.", ""] if warmup else []
            cold = " (cold)" if rows[0].get("cold") else ""
            lines += [f"| kernel / op | calls | us per call{cold} | total us |",
                      "| --- | --- | --- | --- |"]
            lines += [f"| {x.get('kernel', x.get('op'))}{' (rProgram)' if x.get('rprogram') else ''}"
                      f" | {x.get('calls', '')} | {x.get('us', '')} | {x.get('total_us', '')} |"
                      for x in rows[:top]]
            lines.append("")
        for t, runs in r["info"].get("tvm-ios rProgram (tuned)", {}).items():
            decisions = runs.get("fallback", [])
            if not decisions or runs.get("rprograms", 0) == 0 and int(t) == 1:
                continue  # one thread: no rPrograms, nothing was decided
            kept = sum(d["kept"] == "concurrent" for d in decisions)
            measured = [d for d in decisions if d.get("measured")]
            gain = sum(max(0.0, d["sequential_us"] - d["concurrent_us"]) for d in measured)
            lines += [f"{name}, {t} threads: {kept} of {len(decisions)} concurrent stages kept "
                      f"as rPrograms; {len(measured)} decided from both sides measured (one "
                      "rProgram, its groups in turn; the rest from the stage log and the "
                      f"roofline); measured gain of the kept ones, stage by stage: "
                      f"{gain / 1e3:.2f} ms.", ""]
            lines += _model_judge_lines(name, t, runs.get("model_judge") or {})
        lines += bounds.ceiling_lines(name, r["info"].get("ceiling", {}))
        lines += bounds.roofline_lines(name, r["info"].get("kernel_roofline", {}))
        lines += bounds.memory_lines(name, r["info"].get("memory_floor", {}), r["threads"],
                                     BASELINES)
        lines += bounds.compute_lines(name, r["info"].get("compute_floor", {}), r["threads"],
                                      BASELINES)
    return lines


def _model_judge_lines(name: str, t, verdict: dict) -> list[str]:
    """What the whole model measured with the best n of the kept stages concurrent
    (:mod:`tvm_ios.cost.model_judge`)."""
    figures = {int(n): us for n, us in (verdict.get("figures") or {}).items()}
    if not figures:
        return []
    how = "measured" if verdict.get("measured") else "from the stage log"
    each = ", ".join(f"{n or 'none'}: {us / 1e3:.2f} ms" for n, us in sorted(figures.items(),
                                                                           reverse=True))
    return [f"{name}, {t} threads, judged in the whole model ({how}): the best n of the "
            f"{verdict['ranked']} kept stages (by measured gain) concurrent, the rest in turn: "
            f"{each}; kept **{verdict['kept']}**.", ""]


def _chart(results: dict, threads: list, path: Path) -> Path:
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results)
    fig, axes = plt.subplots(len(names), len(threads), figsize=(5.2 * len(threads),
                                                                 3.0 * len(names)),
                             squeeze=False)
    for ax, (name, t) in zip(axes.flat, [(n, t) for n in names for t in threads]):
        row = results[name]["threads"].get(t, {})
        cols = [c for c in COLUMNS if "median_ms" in row.get(c, {})]
        values = [row[c]["median_ms"] for c in cols]
        colors = ["#999999" if c in BASELINES else "#4477aa" if c.startswith("TVM")
                  else "#cc6677" for c in cols]
        ax.barh(range(len(cols)), values, color=colors)
        ax.set_yticks(range(len(cols)), cols, fontsize=7)
        ax.invert_yaxis()
        ax.set_xscale("log")  # baselines and untuned TVM differ by two orders
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("median ms, log scale (lower is better)")
        ax.set_title(f"{name} {results[name]['image_size']} px, {t} thread(s)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _cpu_detail(prov: dict) -> str:
    """``znver5, 2 cores`` (the LLVM CPU name where the provenance has it)."""
    cores = f"{prov.get('cores')} cores"
    return f"{prov['llvm_cpu']}, {cores}" if prov.get("llvm_cpu") else cores
