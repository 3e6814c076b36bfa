"""Benchmark report (not a test): docs/reliability.md from fuzzing campaigns and fault runs.

Reads the JSON of one or more ``tvm-ios fuzz --json`` campaigns (random CNNs tried per
pipeline, mismatches and crashes, wall time), a findings file (bugs the fuzzer found: what,
where, fixed or open, the test that guards it) and, when present, a bad-inputs/faults file
other runs write (``{"bad_inputs": [{"input", "answer", "exit"}], "faults": [{"fault",
"survived"}]}``), and writes the markdown page::

    PYTHONPATH=. python benchmarks/fuzz.py --campaign /tmp/fuzz100.json \\
        --findings benchmarks/results/fuzz_findings.json --doc docs/reliability.md
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def _campaign_rows(campaigns: list) -> list[str]:
    rows = ["| pipeline | random CNNs | ok | mismatches | crashes | campaign wall time |",
            "|---|---:|---:|---:|---:|---:|"]
    for camp in campaigns:
        for pipeline, row in camp["summary"].items():
            rows.append(f"| `{pipeline}` | {row['tried']} | {row['ok']} | {row['mismatch']} | "
                        f"{row['crash']} | {camp['seconds'] / 60:.1f} min |")
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


def _faults_rows(faults: dict | None) -> list[str]:
    if not faults:
        return ["Not measured yet (this section is filled from `--faults FILE` when given)."]
    rows = ["| bad input | answer | exit |", "|---|---|---:|"]
    rows += [f"| {r['input']} | {r['answer']} | {r['exit']} |" for r in faults.get("bad_inputs", [])]
    rows += ["", "| fault injected | what survived |", "|---|---|"]
    rows += [f"| {r['fault']} | {r['survived']} |" for r in faults.get("faults", [])]
    return rows


def render(campaigns: list, findings: list, faults: dict | None) -> str:
    """The markdown page."""
    total = sum(len(c["records"]) for c in campaigns)
    lines = ["# Reliability: differential fuzzing, bad inputs, faults", "",
             "Written by `benchmarks/fuzz.py` from the campaigns' JSON (`tvm-ios fuzz --json`); "
             "do not edit by hand.", "",
             "## Random CNNs through every pipeline", "",
             f"{total} (CNN, pipeline) checks against TVM's default build (tolerance "
             f"{campaigns[0]['tolerance'] if campaigns else '-'} relative to the largest output).",
             "", *_campaign_rows(campaigns), "", "### Failures in these campaigns", "",
             *_failure_rows(campaigns), "", "## Bugs the fuzzer found", "",
             *_findings_rows(findings), "", "## Bad inputs and faults", "", *_faults_rows(faults),
             ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    """Render the page."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaign", action="append", default=[], help="tvm-ios fuzz --json")
    parser.add_argument("--findings", default=None, help="JSON list of bugs found")
    parser.add_argument("--faults", default=None, help="JSON of bad inputs and faults")
    parser.add_argument("--doc", default="docs/reliability.md")
    args = parser.parse_args(argv)
    campaigns = [json.loads(Path(p).read_text()) for p in args.campaign]
    findings = json.loads(Path(args.findings).read_text()) if args.findings else []
    faults = (json.loads(Path(args.faults).read_text())
              if args.faults and Path(args.faults).exists() else None)
    Path(args.doc).write_text(render(campaigns, findings, faults))
    print(f"wrote {args.doc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
