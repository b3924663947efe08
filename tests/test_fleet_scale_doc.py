"""docs/fleet-scale.md stays true: its sizing table and its name limits are recomputed here from the checks."""

from __future__ import annotations

import pytest

from bench import fleet_stack
from components.config import FleetConfig
from components.operations import capacity
from tests.support.tools import REPO

DOC = (REPO / "docs" / "fleet-scale.md").read_text()
TYPES = ("cx33", "cx43", "cx53")


def _row(members: int, replicas: int) -> str:
    raw, secrets = fleet_stack.stack_config(members).project_values()
    raw["karmada"]["estimator"] = {"replicas": replicas, "cpu": "100m", "memory": "128Mi"}
    config = FleetConfig.from_mapping(raw, "generated", secrets)
    fit = capacity.hub_fit(config)
    cells = []
    for server_type in TYPES:
        count = next((n for n in capacity.ODD_SERVER_COUNTS if capacity.hub_fit(config, server_type, n).fits()), None)
        cells.append(f"{count} x {server_type}" if count else "none")
    return (f"| {members} | {replicas} | {fit.pod_count} | {fit.millicpu / 1000:.1f} | {fit.memory / 2**30:.1f} | "
            + " | ".join(cells) + " |")


@pytest.mark.parametrize("members", [3, 30, 100, 300])
@pytest.mark.parametrize("replicas", [2, 1])
def test_the_sizing_table_is_what_the_check_computes(members: int, replicas: int) -> None:
    row = _row(members, replicas)
    assert row in DOC, f"docs/fleet-scale.md should have the row\n{row}"


def test_the_name_limits_are_the_tested_ones() -> None:
    for line in ("| 35 characters |", "| 43 characters |", "| 48 characters |", "| 58 characters |"):
        assert line in DOC
