"""bench/drill_real's summary: per scenario and phase, the budget and the spread of what the runs measured."""

from __future__ import annotations

import json
from pathlib import Path

from bench.drill_real import markdown, summarise, write_summary


def _timeline(outcome: str, ready: float | None, first: float) -> dict:
    return {"outcome": outcome, "phases": [
        {"key": "ready", "title": "Cluster not Ready", "stage": "kill", "budget_seconds": 40.0, "at": ready},
        {"key": "first_client", "title": "first client success", "stage": "kill", "budget_seconds": 29.0,
         "at": first},
        {"key": "ready_back", "title": "Cluster Ready again", "stage": "restore", "budget_seconds": 10.0, "at": 4.0},
    ]}


def test_the_spread_counts_only_measured_phases(tmp_path: Path) -> None:
    runs = {"push, blackhole": [_timeline("complete", 36.0, 24.0), _timeline("complete", None, 20.0),
                                _timeline("incomplete", 44.0, 31.0)]}
    summary = summarise(runs)["push, blackhole"]
    assert summary["outcomes"] == ["complete", "complete", "incomplete"]
    ready, first = summary["phases"]["ready"], summary["phases"]["first_client"]
    assert (ready["min"], ready["median"], ready["max"], ready["runs"]) == (36.0, 40.0, 44.0, 2)
    assert (first["min"], first["median"], first["max"], first["runs"]) == (20.0, 24.0, 31.0, 3)
    assert first["budget"] == 29.0
    lines = markdown(summarise(runs)).splitlines()
    kill = lines.index("| kill: first client success | 29.0 | 20.0 | 24.0 | 31.0 | 3 |")
    assert kill < lines.index("| restore: Cluster Ready again | 10.0 | 4.0 | 4.0 | 4.0 | 3 |")

    write_summary(runs, tmp_path / "out")
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["push, blackhole"]["phases"]["ready"][
        "runs"] == 2
    assert (tmp_path / "out" / "summary.md").read_text().startswith("### push, blackhole")


def test_a_phase_no_run_measured_shows_dashes() -> None:
    text = markdown(summarise({"pull, stop": [_timeline("failed", None, 30.0)]}))
    assert "| kill: Cluster not Ready | 40.0 | - | - | - | 0 |" in text
