"""The run's report: per target killed / timeout / survived / equivalent / error, the kill rate, every survivor's
diff, and the spot check's named mutants; as JSON (`build/mutation/report.json`) and Markdown (`report.md`).

A mutant is *equivalent* when docs/testing.md lists its key in the "Equivalent mutants" table with the reason no
test can tell it from the original. The kill rate leaves equivalents out: (killed + timeout) / (total -
equivalent). A listed key the run killed is reported as not equivalent after all; a listed key the run did not
produce (the code moved on) as stale.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from bench.mutation.targets import TARGETS

EQUIVALENTS_DOC = "docs/testing.md"
EQUIVALENTS_HEADING = "## Equivalent mutants"
_ROW = re.compile(r"^\|\s*`([0-9a-f]{10})`\s*\|\s*([^|]+?)\s*\|")
STATUSES = ("killed", "timeout", "survived", "equivalent", "error")


def equivalents(repo: Path) -> dict[str, dict[str, str]]:
    """key -> {target, where, reason} from the table under EQUIVALENTS_HEADING in docs/testing.md."""
    path = repo / EQUIVALENTS_DOC
    if not path.is_file():
        return {}
    out: dict[str, dict[str, str]] = {}
    inside = False
    for line in path.read_text().splitlines():
        if line.startswith("## "):
            inside = line.strip() == EQUIVALENTS_HEADING
            continue
        match = _ROW.match(line) if inside else None
        if match:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            out[match.group(1)] = {"target": match.group(2), "where": cells[2] if len(cells) > 2 else "",
                                   "reason": cells[-1]}
    return out


def rate(counts: Mapping[str, int]) -> float | None:
    scored = sum(counts.values()) - counts.get("equivalent", 0)
    return None if scored == 0 else (counts.get("killed", 0) + counts.get("timeout", 0)) / scored


def build(runs: Mapping[str, dict[str, Any]], repo: Path, tool: str) -> dict[str, Any]:
    listed = equivalents(repo)
    produced: set[str] = set()
    targets: dict[str, Any] = {}
    total = dict.fromkeys(STATUSES, 0)
    named: list[dict[str, Any]] = []
    killed_equivalents: list[dict[str, Any]] = []
    for target in TARGETS:
        run = runs.get(target.name)
        if run is None:
            continue
        counts = dict.fromkeys(STATUSES, 0)
        survivors, equivalent, errors = [], [], []
        for o in run["outcomes"]:
            produced.add(o["key"])
            status = o["status"]
            if o["key"] in listed:
                if status == "survived":
                    status = "equivalent"
                    equivalent.append(_entry(o, reason=listed[o["key"]]["reason"]))
                elif status in ("killed", "timeout"):
                    killed_equivalents.append(_entry(o))
            if status == "survived":
                survivors.append(_entry(o))
            elif status in ("error", "timeout"):
                errors.append(_entry(o, output=o.get("output", "")))
            counts[status] += 1
        for k, v in counts.items():
            total[k] += v
        named += [{**n, "target": target.name} for n in run.get("named", [])]
        targets[target.name] = {
            "title": target.title, "files": sorted({o["path"] for o in run["outcomes"]}), "tests": run["tests"],
            "baseline_seconds": run["baseline_seconds"], "timeout": run["timeout"], "finished": run.get("finished"),
            "counts": counts, "total": sum(counts.values()), "kill_rate": rate(counts),
            "survivors": survivors, "equivalents": equivalent, "timeouts_and_errors": errors,
        }
    stale = [{"key": k, **v} for k, v in listed.items() if k not in produced and v["target"] in targets]
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "commit": _git(repo, "rev-parse", "--short", "HEAD"),
        "dirty": bool(_git(repo, "status", "--porcelain", "--untracked-files=no")),
        "tool": tool,
        "targets": targets,
        "not_run": [t.name for t in TARGETS if t.name not in runs],
        "total": {"counts": total, "total": sum(total.values()), "kill_rate": rate(total)},
        "named": named,
        "equivalents_killed": killed_equivalents,
        "equivalents_stale": stale,
    }


def _entry(o: Mapping[str, Any], **extra: Any) -> dict[str, Any]:
    return {"key": o["key"], "path": o["path"], "line": o["line"], "definition": o["definition"],
            "operator": o["operator"], "original": o["original"], "diff": o.get("diff", ""),
            **extra}


def _git(repo: Path, *args: str) -> str:
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True,
                              timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1%}"


def markdown(report: Mapping[str, Any]) -> str:
    dirty = " (uncommitted changes)" if report["dirty"] else ""
    lines = [f"# Mutation run, {report['date']} at {report['commit']}{dirty}",
             "", f"Tool: {report['tool']}. Kill rate = (killed + timeout) / (mutants - equivalent).", "",
             "| target | mutants | killed | timeout | survived | equivalent | error | kill rate |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, t in report["targets"].items():
        c = t["counts"]
        lines.append(f"| {name} ({t['title']}) | {t['total']} | {c['killed']} | {c['timeout']} | {c['survived']} | "
                     f"{c['equivalent']} | {c['error']} | {_pct(t['kill_rate'])} |")
    c = report["total"]["counts"]
    lines.append(f"| **all** | {report['total']['total']} | {c['killed']} | {c['timeout']} | {c['survived']} | "
                 f"{c['equivalent']} | {c['error']} | **{_pct(report['total']['kill_rate'])}** |")
    if report["not_run"]:
        lines += ["", f"Not in this report: {', '.join(report['not_run'])}."]
    if report["named"]:
        lines += ["", "## The spot check's mutants (issue 28)", "", "| target | mutant | result |", "|---|---|---|"]
        lines += [f"| {n['target']} | {n['name']} | {n['status']} |" for n in report["named"]]
    for title, items in (
            ("Listed as equivalent but killed (remove from docs/testing.md)", report["equivalents_killed"]),
            ("Listed as equivalent, not produced any more (stale)", report["equivalents_stale"])):
        if items:
            lines += ["", f"## {title}", ""] + [f"- `{i['key']}` {i.get('path', i.get('where', ''))}" for i in items]
    for name, t in report["targets"].items():
        lines += ["", f"## {name}: {t['title']}", "", f"Files: {', '.join(t['files'])}.",
                  f"Tests: {' '.join(t['tests'])} (baseline {t['baseline_seconds']} s, timeout {t['timeout']} s)."]
        lines += _section("Survivors", t["survivors"])
        lines += _section("Timeouts and errors", t["timeouts_and_errors"])
    return "\n".join(lines) + "\n"


def _section(title: str, items: Iterable[Mapping[str, Any]]) -> list[str]:
    items = list(items)
    if not items:
        return []
    out = ["", f"### {title} ({len(items)})"]
    for i in items:
        out += ["", f"`{i['key']}` {i['path']}:{i['line']} in `{i['definition']}`, {i['operator']}", "", "```diff",
                _diff_body(i["diff"]) or f"  {i['original']}", "```"]
        if i.get("output"):
            out += ["", "```", i["output"][-600:], "```"]
    return out


def _diff_body(diff: str) -> str:
    return "\n".join(line for line in diff.splitlines() if not line.startswith("--- mutation diff"))


def write(report: Mapping[str, Any], out: Path) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / "report.json", out / "report.md"
    json_path.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
    md_path.write_text(markdown(report))
    return json_path, md_path
