"""A production drill works as docs/runbooks/failover-drill.md says (review-newcomer.md §1 #5): the victim and the
survivor come from the hub's region stacks, whether the drill names the hub (`prod-hub`) or a region stack
(`prod-fsn1`); before, every prod stack was refused ("not a member of stacks/Pulumi.prod-hub.yaml ()")."""

from __future__ import annotations

import io
from typing import Any

import pytest

from hubctl.__main__ import main
from tests.support.tools import REPO

HUB_FLEET = "the fleet of stacks/Pulumi.prod-hub.yaml (its regionStacks: prod-fsn1, prod-hel1, prod-ash)"


def drill(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["drill", *argv], stdout=io.StringIO(), stderr=io.StringIO())
    return code, capsys.readouterr().err


@pytest.mark.parametrize("stack", ["prod-hub", "prod-fsn1", "prod-hel1"])
def test_a_prod_drill_resolves_members_through_the_region_stacks(capsys: pytest.CaptureFixture[str],
                                                                 stack: str) -> None:
    """Without --yes the drill stops after resolving victim and survivor and before touching anything."""
    code, err = drill(capsys, stack, "--member", "prod-fsn1-a", "--survivor", "prod-hel1-a")
    assert code == 2
    assert err == (f"error: hubctl drill kills member prod-fsn1-a of {stack} for real (poweroff: the member's API and "
                   "ingress (servers powered off)); add --yes to go ahead\n")


def test_the_survivor_must_be_in_another_region_of_the_fleet(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = drill(capsys, "prod-hub", "--member", "prod-fsn1-a", "--survivor", "prod-fsn1-b")
    assert code == 2 and err == (f"error: --survivor prod-fsn1-b: must be a member of {HUB_FLEET} in another region "
                                 "than prod-fsn1-a (eu-fsn)\n")
    code, err = drill(capsys, "prod-hub", "--member", "prod-nbg1-a")
    assert code == 2 and err.startswith(f"error: --member prod-nbg1-a: not a member of {HUB_FLEET} (prod-fsn1-a, ")


def test_the_fleet_view_carries_what_the_drill_measures() -> None:
    from components.operations.budget import failover_budget
    from hubctl.commands import load_config
    from hubctl.drill.run import fleet_view

    _, region = load_config(REPO, "prod-hel1", run_preflight=False)
    _, hub = load_config(REPO, "prod-hub", run_preflight=False)
    view, _ = fleet_view(REPO, "prod-hel1", region, "prod-fsn1-a")
    names: Any = {m.name for m in view.members}
    assert {"prod-fsn1-a", "prod-hel1-a", "prod-ash-a"} <= names
    assert set(view.regions) == {"eu-fsn", "eu-hel", "us-ash"}
    assert view.dns == hub.dns and view.hub == hub.hub
    _, fsn = load_config(REPO, "prod-fsn1", run_preflight=False)
    assert view.failover == fsn.failover  # the victim's region stack: its budget is what the drill checks
    report = failover_budget(view)
    assert report.traffic is not None and report.capacity.total > 0
