"""The upgrade rehearsal on the local real fleet (issue 26 point 6): `make upgrade-rehearsal`, not `make test`.

The dev stack runs on the previous Karmada minor's binaries (`upstream.build.PREVIOUS_KARMADA`), then
docs/runbooks/upgrade-karmada.md is followed step by step to the pinned release (tests/support/realfleet/upgrade.py):
every step passes, the version-skew guard passes after every step and every rolled workload, and the probe
service answers every request throughout. Marked `rehearsal` and deselected by default (pyproject addopts): it
takes a fleet bring-up and a rollout (bench/upgrade_real.py prints the same as a report).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.realfleet.fleet import RealFleet
from tests.support.realfleet.upgrade import TARGET, markdown, module_dir, rehearse
from tests.support.tools import require_tool, require_upstream
from upstream.build import PREVIOUS_KARMADA, all_binary_names, binary, previous_karmada_set

pytestmark = pytest.mark.rehearsal


def test_the_upgrade_rehearsal_passes(tmp_path: Path) -> None:
    require_upstream(*all_binary_names())
    for name in (f for _, f in previous_karmada_set().binaries):
        if binary(name, PREVIOUS_KARMADA) is None:
            require_tool(f"{name} {PREVIOUS_KARMADA}", "python -m upstream.build --only karmada-prev")
    for version in (PREVIOUS_KARMADA, TARGET):
        if module_dir(version) is None:
            require_tool(f"github.com/karmada-io/karmada@{version} (Go module cache)",
                         f"go mod download github.com/karmada-io/karmada@{version}")
    for tool in ("unbound", "knotd", "kdig"):
        require_tool(tool, "the fleet's DNS path (Debian: unbound, knot, knot-dnsutils)")
    with RealFleet() as fleet:
        report = rehearse(fleet, tmp_path)
    (tmp_path / "report.json").write_text(json.dumps(report, indent=2))
    print(markdown(report))
    assert report["failed"] is None, report["failed"]
    assert not [(s["ref"], s["detail"]) for s in report["steps"] if s["ok"] is False]
    assert [s["ref"] for s in report["steps"] if s["ok"] is None] == ["A.3", "B.7", "B.8"]
    assert all(not g["problems"] for g in report["guard"]) and len(report["guard"]) > 10
    assert report["probe"]["requests"] > 60 and not report["probe"]["failures"], report["probe"]
    rolled = {c["name"] for c in report["changes"] if c["action"] == "rolled"}
    assert {"karmada-system/karmada-controller-manager", "karmada-system/karmada-agent"} <= rolled
