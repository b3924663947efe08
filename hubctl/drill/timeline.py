"""The drill's record: phases with their measured and budgeted seconds, and three ways to write it down.

`timeline.json` (everything, machine-readable), `timeline.md` (the phases side by side with `hubctl budget`,
then the budget's own tables) and `timeline.svg` (a chart: one lane for the kill, one for the restore, a dot per
measured phase and a tick per budget). The SVG is written by hand: no plotting dependency.
"""

from __future__ import annotations

import html
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from components.operations.budget import FailoverReport, budget_markdown, fmt_seconds


@dataclass
class Phase:
    key: str
    title: str
    stage: str
    """`kill` (seconds after the kill was issued) or `restore` (after the restore was issued)."""
    budget_terms: str = ""
    budget_seconds: float | None = None
    at: float | None = None
    value: str = ""
    """What was seen when the phase fired (the answer, the taints, ...)."""
    expected: bool = True
    """False for phases the kill method does not cause (e.g. Karmada's with `lb-detach`)."""


@dataclass
class Timeline:
    stack: str
    member: str
    survivor: str
    method: str
    host: str
    started: str = ""
    killed_at: str = ""
    restored_at: str = ""
    phases: list[Phase] = field(default_factory=list)
    events: list[tuple[str, float, str]] = field(default_factory=list)
    """(stage, seconds, text) in order."""
    outcome: str = "running"
    derived: dict[str, float] = field(default_factory=dict)
    """Measured differences worth a budget term of their own (external-dns + propagation, cache drain)."""

    def phase(self, key: str) -> Phase:
        return next(p for p in self.phases if p.key == key)

    def mark(self, key: str, at: float, value: str = "") -> bool:
        p = self.phase(key)
        if p.at is not None:
            return False
        p.at, p.value = round(at, 3), value
        self.events.append((p.stage, round(at, 3), f"{p.title}: {value}" if value else p.title))
        return True

    def pending(self, stage: str) -> list[Phase]:
        return [p for p in self.phases if p.stage == stage and p.at is None and p.expected]

    def derive(self) -> None:
        def at(key: str) -> float | None:
            return self.phase(key).at

        pairs = {
            "external-dns + propagation (measured)": ("dnsendpoint", "authoritative"),
            "cache drain after the authoritative answer (measured)": ("authoritative", "recursive"),
        }
        for name, (a, b) in pairs.items():
            if at(a) is not None and at(b) is not None:
                self.derived[name] = round(at(b) - at(a), 3)  # type: ignore[operator]

    # ------------------------------------------------------------------ writers

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=False)

    def to_markdown(self, report: FailoverReport | None) -> str:
        lines = [f"# Failover drill: {self.stack}, member {self.member} killed by {self.method}", "",
                 f"Started {self.started}; killed {self.killed_at}; restored {self.restored_at or '-'}; "
                 f"outcome: **{self.outcome}**. Probe name `{self.host}`, survivor {self.survivor}.", ""]
        for stage, title in (("kill", "Kill (seconds after the kill was issued)"),
                             ("restore", "Restore (seconds after the restore was issued)")):
            lines += [f"## {title}", "", "| phase | measured s | budget s | budget terms | within budget |",
                      "|---|---:|---:|---|---|"]
            for p in self.phases:
                if p.stage != stage:
                    continue
                measured = "-" if p.at is None else fmt_seconds(p.at)
                if not p.expected and p.at is None:
                    measured = "not expected"
                budget = "-" if p.budget_seconds is None else fmt_seconds(p.budget_seconds)
                within = "" if p.at is None or p.budget_seconds is None else (
                    "yes" if p.at <= p.budget_seconds else "**no**")
                terms = p.budget_terms.replace("|", "\\|")
                lines.append(f"| {p.title} | {measured} | {budget} | {terms} | {within} |")
            lines.append("")
        if self.derived:
            lines += ["| derived | seconds |", "|---|---:|"]
            lines += [f"| {k} | {fmt_seconds(v)} |" for k, v in self.derived.items()]
            lines.append("")
        if report is not None:
            lines += ["## `hubctl budget " + self.stack + "`", "", budget_markdown(report), ""]
        lines += ["## Events", "", "| stage | s | event |", "|---|---:|---|"]
        lines += [f"| {stage} | {fmt_seconds(t)} | {html.escape(text)} |" for stage, t, text in self.events]
        return "\n".join(lines) + "\n"

    def to_svg(self) -> str:
        """Two lanes (kill, restore); x = seconds; a filled dot per measured phase, an open tick per budget."""
        width, left, right, lane_h, top = 1100, 330, 40, 26, 50
        rows = [p for p in self.phases if p.at is not None or p.budget_seconds is not None]
        horizon = max([1.0] + [p.at or 0 for p in rows] + [p.budget_seconds or 0 for p in rows])
        scale = (width - left - right) / horizon
        height = top + lane_h * (len(rows) + 2) + 40
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
               f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
               '<rect width="100%" height="100%" fill="white"/>',
               f'<text x="10" y="22" font-size="15">{html.escape(self.stack)}: {html.escape(self.member)} killed '
               f'by {html.escape(self.method)} ({html.escape(self.outcome)})</text>']
        step = 10 ** max(0, len(str(int(horizon))) - 1)
        if horizon / step < 4:
            step = max(step / 5, 0.1)
        tick = 0.0
        axis_y = top + lane_h * (len(rows) + 1)
        while tick <= horizon + 1e-9:
            x = left + tick * scale
            out.append(f'<line x1="{x:.1f}" y1="{top - 10}" x2="{x:.1f}" y2="{axis_y}" stroke="#eee"/>')
            out.append(f'<text x="{x:.1f}" y="{axis_y + 16}" text-anchor="middle">{fmt_seconds(tick)}</text>')
            tick += step
        out.append(f'<text x="{left + (width - left - right) / 2:.0f}" y="{axis_y + 34}" text-anchor="middle">'
                   'seconds after the kill (or the restore)</text>')
        y = top
        stage = None
        for p in rows:
            if p.stage != stage:
                stage = p.stage
                out.append(f'<text x="10" y="{y + 4}" font-weight="bold">{stage}</text>')
                y += lane_h
            out.append(f'<text x="{left - 8}" y="{y + 4}" text-anchor="end">{html.escape(p.title)}</text>')
            out.append(f'<line x1="{left}" y1="{y}" x2="{width - right}" y2="{y}" stroke="#ddd"/>')
            if p.budget_seconds is not None:
                x = left + p.budget_seconds * scale
                out.append(f'<line x1="{x:.1f}" y1="{y - 8}" x2="{x:.1f}" y2="{y + 8}" stroke="#999" '
                           'stroke-width="2"><title>budget</title></line>')
            if p.at is not None:
                x = left + p.at * scale
                late = p.budget_seconds is not None and p.at > p.budget_seconds
                colour = "#c62828" if late else "#1565c0"
                out.append(f'<circle cx="{x:.1f}" cy="{y}" r="5" fill="{colour}"><title>{fmt_seconds(p.at)} s'
                           '</title></circle>')
            y += lane_h
        out.append("</svg>")
        return "\n".join(out) + "\n"

    def write(self, directory: Path, report: FailoverReport | None) -> dict[str, Path]:
        directory.mkdir(parents=True, exist_ok=True)
        self.derive()
        files = {"json": directory / "timeline.json", "markdown": directory / "timeline.md",
                 "svg": directory / "timeline.svg"}
        files["json"].write_text(self.to_json())
        files["markdown"].write_text(self.to_markdown(report))
        files["svg"].write_text(self.to_svg())
        return files


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())
