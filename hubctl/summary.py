"""The short summary `hubctl plan` prints: resources per component, endpoints, tables that matter.

The sections themselves live in `hubctl/report.py` (shared with `--json`, report.json and `hubctl diff`);
this module is the plain-text view of them.
"""

from __future__ import annotations

import io
from pathlib import Path

from components.config import FleetConfig
from hubctl import report
from hubctl.output import Output
from hubctl.plan import Plan


def header(plan: Plan, out_dir: Path) -> str:
    return f"plan {plan.project}/{plan.stack}: {len(plan.records)} resources -> {out_dir}/"


def render(plan: Plan, config: FleetConfig, out_dir: Path, files: dict[str, str] | list[str]) -> str:
    """The summary as plain text (what a pipe or a CI log gets)."""
    buffer = io.StringIO()
    report.render(Output(buffer, buffer), header(plan, out_dir), report.build(plan, config), list(files))
    return buffer.getvalue().rstrip("\n")


def as_json(plan: Plan, config: FleetConfig, out_dir: Path) -> dict[str, object]:
    """The summary's headline as data (the top of `hubctl plan --json`): resources, plain outputs and the what-if
    table; the full report sits beside it under `report`."""
    from components.fleet.whatif import fleet_whatif

    endpoints = {k: v for k, v in plan.outputs.items()
                 if v != "[secret]" and isinstance(v, str | int) and "\n" not in str(v)}
    return {
        "plan": f"{plan.project}/{plan.stack}",
        "resources": len(plan.records),
        "out": str(out_dir),
        "outputs": endpoints,
        "whatif": fleet_whatif(config).as_dict() if config.members and config.tenants else None,
    }
