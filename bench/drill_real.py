"""`python -m bench.drill_real`: the failover drill on the local real fleet, repeated, beside `hubctl budget`.

Brings the real fleet up with its traffic path (tests/support/realfleet), then runs `hubctl drill` `--runs` times
for each member (the Push `dev-fsn1-a`, the Pull `dev-hel1-a`) and each way of killing it (`blackhole`: the
member's network drops everything; `stop`: its processes die), one after the other, each from a healthy fleet.
Writes every run's timeline (JSON, Markdown, SVG) under `--out`, and `summary.json` / `summary.md`: per phase, the
budget term and the measured minimum, median and maximum. Needs root and `make upstream` (measured, never asserted;
docs/failover-measured.md is written from it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

MEMBERS = {"push": "dev-fsn1-a", "pull": "dev-hel1-a"}


def summarise(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per scenario and phase: budget seconds and the measured spread over the runs."""
    out: dict[str, Any] = {}
    for scenario, timelines in runs.items():
        phases: dict[str, Any] = {}
        for timeline in timelines:
            for p in timeline["phases"]:
                entry = phases.setdefault(p["key"], {"title": p["title"], "stage": p["stage"],
                                                     "budget": p["budget_seconds"], "measured": []})
                if p["at"] is not None:
                    entry["measured"].append(p["at"])
        for entry in phases.values():
            m = entry["measured"]
            entry.update({"min": min(m) if m else None, "median": statistics.median(m) if m else None,
                          "max": max(m) if m else None, "runs": len(m)})
        out[scenario] = {"phases": phases, "outcomes": [t["outcome"] for t in timelines]}
    return out


def markdown(summary: dict[str, Any]) -> str:
    def f(x: float | None) -> str:
        return "-" if x is None else f"{x:.1f}"

    lines = []
    for scenario, data in summary.items():
        lines += [f"### {scenario}", "", f"Outcomes: {', '.join(data['outcomes'])}.", "",
                  "| phase | budget s | min s | median s | max s | runs |", "|---|---:|---:|---:|---:|---:|"]
        for stage in ("kill", "restore"):
            for entry in data["phases"].values():
                if entry["stage"] == stage:
                    lines.append(f"| {stage}: {entry['title']} | {f(entry['budget'])} | {f(entry['min'])} | "
                                 f"{f(entry['median'])} | {f(entry['max'])} | {entry['runs']} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.drill_real", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--members", default="push,pull", help="push, pull or both (default)")
    parser.add_argument("--ways", default="blackhole,stop", help="blackhole, stop or both (default)")
    parser.add_argument("--out", type=Path, default=Path("build/bench/drill"))
    args = parser.parse_args(argv)
    from tests.support.realfleet.drill import DrillFailed, run_drill
    from tests.support.realfleet.fleet import RealFleet

    runs: dict[str, list[dict[str, Any]]] = {}
    with RealFleet() as fleet:
        fleet.up()
        fleet.start_traffic()
        for n in range(args.runs):
            for kind in args.members.split(","):
                for how in args.ways.split(","):
                    scenario = f"{kind} member ({MEMBERS[kind]}), {how}"
                    out = args.out / f"{kind}-{how}-{n + 1}"
                    started = time.monotonic()
                    try:
                        timeline = run_drill(fleet, MEMBERS[kind], how, out)
                    except DrillFailed as err:
                        print(f"{scenario} run {n + 1}: {str(err).splitlines()[0]}", file=sys.stderr)
                        timeline = json.loads((out / "timeline" / "timeline.json").read_text()) if (
                            out / "timeline" / "timeline.json").is_file() else None
                    if timeline is not None:
                        runs.setdefault(scenario, []).append(timeline)
                    print(f"{scenario} run {n + 1}: {timeline['outcome'] if timeline else 'no timeline'} "
                          f"({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)
                    write_summary(runs, args.out)  # after every run: an interrupted bench keeps what it measured
    print(markdown(summarise(runs)))
    return 0


def write_summary(runs: dict[str, list[dict[str, Any]]], out: Path) -> None:
    summary = summarise(runs)
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "summary.md").write_text(markdown(summary))


if __name__ == "__main__":
    sys.exit(main())
