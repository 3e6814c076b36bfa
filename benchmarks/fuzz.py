"""Benchmark report (not a test): fuzzing campaigns run and written with their provenance,
and docs/reliability.md rendered from them.

Each ``--campaign SEEDS:PIPELINE,PIPELINE...`` is run here (``tvm_ios.testing.fuzz``: random
CNNs through each pipeline against TVM's default build, each failure shrunk); all of them go
to ``benchmarks/results/fuzz.json`` with the provenance of this run, together with the
findings (bugs the fuzzer found: what, where, fixed or open, the test that guards it;
``benchmarks/data/fuzz_findings.json``), and the page is rendered from that file
(``--render`` alone re-renders it)::

    python benchmarks/fuzz.py --campaign 100:ios,ios-stages,ios-rprogram \\
        --campaign 50:ios-wavefront,ios-stages:device=v100,ios-graphturbo
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _campaign_rows(campaigns: list) -> list[str]:
    rows = ["| pipeline | random CNNs | ok | mismatches | crashes | campaign wall time | commit |",
            "|---|---:|---:|---:|---:|---:|---|"]
    for camp in campaigns:
        for pipeline, row in camp["summary"].items():
            rows.append(f"| `{pipeline}` | {row['tried']} | {row['ok']} | {row['mismatch']} | "
                        f"{row['crash']} | {camp['seconds'] / 60:.1f} min | "
                        f"{(camp.get('provenance') or {}).get('commit') or '-':.7} |")
    return rows


def _failure_rows(campaigns: list) -> list[str]:
    fails = [f for camp in campaigns for f in camp["failures"]]
    if not fails:
        return ["No mismatch and no crash in these campaigns."]
    groups: dict = {}
    for f in fails:
        groups.setdefault((f["pipeline"], f["status"], (f["error"] or "")[:90]), []).append(f)
    rows = ["| pipeline | status | error | seeds | shrunk to | first reproducer |",
            "|---|---|---|---:|---|---|"]
    for (pipeline, status, error), group in groups.items():
        sizes = sorted({f.get("shrunk_ops") for f in group if f.get("shrunk_ops") is not None})
        rows.append(f"| `{pipeline}` | {status} | {error} | {len(group)} | "
                    f"{', '.join(map(str, sizes))} ops | `{group[0].get('reproducer', '')}` |")
    return rows


def _findings_rows(findings: list) -> list[str]:
    if not findings:
        return ["None recorded."]
    rows = ["| bug | found by | status | guarded by |", "|---|---|---|---|"]
    for f in findings:
        rows.append(f"| {f['bug']} | {f['found_by']} | {f['status']} | `{f.get('test', '')}` |")
    return rows


def _cell(text) -> str:
    """``text`` for a markdown table cell (its bars escaped)."""
    return str(text).replace("|", "\\|")


def _faults_rows(faults: dict | None) -> list[str]:
    if not faults:
        return ["Not measured yet (this section is filled from `--faults FILE` when given)."]
    made = faults.get("provenance") or {}
    rows = ([f"Performed on the real command line by `benchmarks/faults.py` (commit "
             f"{made.get('commit') or '-':.7}, {made.get('date', '-')}), as the tests in "
             "`tests/cli/test_faults.py` and `tests/cli/test_damaged_inputs.py` do.", ""]
            if made else [])
    rows += ["| bad input | answer | exit |", "|---|---|---:|"]
    rows += [f"| {_cell(r['input'])} | {_cell(r['answer'])} | {r['exit']} |"
             for r in faults.get("bad_inputs", [])]
    rows += ["", "| fault injected | what survived |", "|---|---|"]
    rows += [f"| {_cell(r['fault'])} | {_cell(r['survived'])} |"
             for r in faults.get("faults", [])]
    return rows


def render(campaigns: list, findings: list, faults: dict | None) -> str:
    """The markdown page."""
    total = sum(len(c["records"]) for c in campaigns)
    lines = ["# Reliability: differential fuzzing, bad inputs, faults", "",
             "Written by `benchmarks/fuzz.py` from `benchmarks/results/fuzz.json`, which it wrote; "
             "do not edit by hand.", "",
             "## Random CNNs through every pipeline", "",
             f"{total} (CNN, pipeline) checks against TVM's default build (tolerance "
             f"{campaigns[0]['tolerance'] if campaigns else '-'} relative to the largest output).",
             "", *_campaign_rows(campaigns), "", "### Failures in these campaigns", "",
             *_failure_rows(campaigns), "", "## Bugs the fuzzer found", "",
             *_findings_rows(findings), "", "## Bad inputs and faults", "", *_faults_rows(faults),
             ""]
    return "\n".join(lines)


def _run(spec: str, out_dir: str | None) -> dict:
    from tvm_ios.cli.fuzz import _pipelines  # (the CLI's reading of NAME:k=v pipelines)
    from tvm_ios.testing.fuzz import run_campaign

    seeds, _, pipelines = spec.partition(":")
    return run_campaign(range(int(seeds)), _pipelines(pipelines), out_dir)


def _kept(results: str, campaigns: list) -> list:
    """The campaigns of ``results`` (if it exists) run on none of ``campaigns``' pipelines."""
    if not Path(results).exists():
        return []
    data = json.loads(Path(results).read_text())
    new = {p for camp in campaigns for p in camp["pipelines"]}
    kept = []
    for camp in data["results"]["campaigns"]:
        if not new & set(camp["pipelines"]):
            kept.append({**camp, "provenance": camp.get("provenance", data.get("provenance"))})
    return kept


def _faults(path: str | None) -> dict | None:
    """The bad inputs and faults of ``path``: its ``results`` (as ``benchmarks/faults.py``
    writes them, with their provenance) or the file itself; None without one."""
    if not path or not Path(path).exists():
        return None
    data = json.loads(Path(path).read_text())
    if "results" not in data:
        return data
    return {**data["results"], "provenance": data.get("provenance")}


def main(argv=None) -> int:
    """Run the campaigns (if any), write the results file, render the page."""
    from tvm_ios.bench.provenance import provenance, write_results

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaign", action="append", default=[],
                        help="SEEDS:PIPELINE,... to run (repeatable)")
    parser.add_argument("--findings", default=str(ROOT / "benchmarks/data/fuzz_findings.json"))
    parser.add_argument("--faults", default=None,
                        help="JSON of bad inputs and faults (benchmarks/faults.py writes it)")
    parser.add_argument("--render", action="store_true",
                        help="only render the page from the results file (what no "
                             "--campaign does)")
    parser.add_argument("--results", default=str(ROOT / "benchmarks/results/fuzz.json"))
    parser.add_argument("--reproducers", default=None, help="write failures' reproducers here")
    parser.add_argument("--doc", default=str(ROOT / "docs/reliability.md"))
    parser.add_argument("--add", action="store_true",
                        help="keep the results file's campaigns of other pipelines (each "
                             "keeps the provenance of the run that measured it)")
    args = parser.parse_args(argv)
    if args.render and args.campaign:
        parser.error("--render renders only: leave out --campaign")
    started = provenance(None if argv is None else ["benchmarks/fuzz.py", *argv])
    if args.campaign:
        campaigns = [{**_run(spec, args.reproducers), "provenance": started}
                     for spec in args.campaign]
        if args.add:
            campaigns = _kept(args.results, campaigns) + campaigns
        findings = json.loads(Path(args.findings).read_text()) if args.findings else []
        write_results(args.results, {"campaigns": campaigns, "findings": findings}, started)
        print(f"wrote {args.results}")
    data = json.loads(Path(args.results).read_text())["results"]
    faults = _faults(args.faults)
    Path(args.doc).write_text(render(data["campaigns"], data["findings"], faults))
    print(f"wrote {args.doc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
