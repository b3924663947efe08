"""Region stacks agree with their hub: Karmada version (agents within skew), estimators, DNS terms.

The hub exports `fleetContract`; a region stack checks it against its own config, offline in `hubctl plan`
(one line, exit 2) and in `pulumi preview` through the StackReference (a `pulumi.RunError`, one line).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from components.config import ConfigError
from components.operations.preflight import check_hub_contract, hub_contract
from components.operations.region_intents import region_intents
from hubctl.plan import run_program
from hubctl.stackfile import read_stack
from tests.support.tools import REPO, copy_program, load_stack, program_env

HUB = "organization/karmada-hub/prod-hub"
FILE = "stacks/Pulumi.prod-fsn1.yaml"


def _contract(**changes: Any) -> dict[str, Any]:
    hub = load_stack("prod-hub")
    contract = hub_contract(hub, region_intents(hub, "prod-hub"))
    for key, value in changes.items():
        if key in ("ttl", "intervalSeconds", "refreshSeconds"):
            contract["dns"] = {**contract["dns"], key: value}
        elif key == "failover":
            contract["dns"] = {**contract["dns"], "failover": {**contract["dns"]["failover"], **value}}
        else:
            contract[key] = value
    return contract


def test_the_example_region_stacks_agree_with_prod_hub() -> None:
    for stack in ("prod-fsn1", "prod-hel1", "prod-ash"):
        check_hub_contract(load_stack(stack), _contract(), f"stacks/Pulumi.{stack}.yaml", HUB)


def test_a_hub_from_before_the_failover_controller_lets_regions_go_first() -> None:
    """The migration order: region stacks publish their LB address before the hub switches external-dns."""
    old = _contract()
    old["dns"] = {k: v for k, v in old["dns"].items() if k != "failover"}
    check_hub_contract(load_stack("prod-fsn1"), old, FILE, HUB)
    old["dns"]["ttl"] = 120  # every other promise is still checked
    with pytest.raises(ConfigError, match=r"dns\.ttl: 15 here"):
        check_hub_contract(load_stack("prod-fsn1"), old, FILE, HUB)


def test_a_region_in_another_dns_mode_than_its_hub_is_refused() -> None:
    contract = _contract()
    contract["dns"] = {**contract["dns"], "mode": "hetzner"}
    with pytest.raises(ConfigError) as info:
        check_hub_contract(load_stack("prod-fsn1"), contract, FILE, HUB)
    assert str(info.value) == (f"{FILE}: karmada-hub:dns.mode: self-hosted here but {HUB} runs mode hetzner; the "
                               "region's drill record and the budget follow the hub (set dns.mode: hetzner)")
    del contract["dns"]["mode"]  # a hub from before dns.mode ran external-dns in the Hetzner zone
    with pytest.raises(ConfigError, match=r"dns\.mode: self-hosted here"):
        check_hub_contract(load_stack("prod-fsn1"), contract, FILE, HUB)


@pytest.mark.parametrize(("changes", "expected"), [
    ({"karmadaVersion": "v1.19.0"},
     "karmada.version: organization/karmada-hub/prod-hub runs Karmada v1.19.0, which this checkout's "
     "compatibility matrix (components/versions.py) does not know; update the checkout first"),
    ({"ttl": 120},
     "dns.ttl: 15 here but organization/karmada-hub/prod-hub uses 120; the failover budget must "
     "count the hub's value (set dns.ttl: 120)"),
    ({"failover": {"failureThreshold": 4}},
     "dns.failover.failureThreshold: 3 here but organization/karmada-hub/prod-hub uses 4; the "
     "failover budget must count the hub's value (set dns.failover.failureThreshold: 4)"),
    ({"refreshSeconds": 30},
     "dns.refreshSeconds: 15 here but organization/karmada-hub/prod-hub uses 30; the failover "
     "budget must count the hub's value (set dns.refreshSeconds: 30)"),
    ({"dns": None}, "dns: organization/karmada-hub/prod-hub has no dns section (it writes no failover names); "
                    "add it there first"),
])
def test_disagreement_is_one_line(changes: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        check_hub_contract(load_stack("prod-fsn1"), _contract(**changes), FILE, HUB)
    assert str(info.value) == f"{FILE}: karmada-hub:{expected}"


def test_agents_may_trail_the_hub_but_never_lead_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a newer release in the matrix: a region at v1.18.2 under a v1.19 hub is within skew; a region
    ahead of its hub is refused with the fix."""
    import dataclasses

    from components import versions

    current = versions.RELEASES["v1.18.2"]
    newer = dataclasses.replace(current, version="v1.19.0")
    older = dataclasses.replace(current, version="v1.17.4")
    monkeypatch.setattr(versions, "RELEASES", {**versions.RELEASES, "v1.19.0": newer, "v1.17.4": older})
    check_hub_contract(load_stack("prod-fsn1"), _contract(karmadaVersion="v1.19.0"), FILE, HUB)
    with pytest.raises(ConfigError) as info:
        check_hub_contract(load_stack("prod-fsn1"), _contract(karmadaVersion="v1.17.4"), FILE, HUB)
    assert str(info.value).startswith(f"{FILE}: karmada-hub:karmada.version: v1.18.2 here but {HUB} runs Karmada "
                                      "v1.17.4: karmada-agent v1.18.2 must be within")
    assert str(info.value).endswith("(set karmada.version: v1.17.4)")


def _with_members(stack: str, **by_name: dict[str, Any]) -> Any:
    config = load_stack(stack)
    members = [m.model_copy(update=by_name.get(m.name, {})) for m in config.members]
    return config.model_copy(update={"members": members})


def test_estimators_need_the_hub_scheduler_side() -> None:
    config = load_stack("prod-fsn1")
    check_hub_contract(config, _contract(), FILE, HUB)
    with pytest.raises(ConfigError, match=r"karmada\.schedulerEstimators off"):
        check_hub_contract(config, {**_contract(), "schedulerEstimators": False}, FILE, HUB)
    behind = _contract()  # a hub that has not read this region file's estimators yet
    behind["regions"]["eu-fsn"]["estimators"] = []
    with pytest.raises(ConfigError, match=r"karmada-hub:estimators: .* serves none"):
        check_hub_contract(config, behind, FILE, HUB)


def test_every_member_has_the_estimator_the_hub_dials() -> None:
    """karmada v1.18.2 pkg/scheduler/scheduler.go and pkg/descheduler/descheduler.go establishEstimatorConnections:
    one dial per Cluster (the descheduler has no Pull-mode opt-out); a member without an estimator is a dead dial."""
    config = _with_members("prod-fsn1", **{"prod-fsn1-b": {"scheduler_estimator": False}})
    with pytest.raises(ConfigError) as info:
        check_hub_contract(config, _contract(), FILE, HUB)
    assert str(info.value) == (
        f"{FILE}: karmada-hub:members[1].schedulerEstimator: {HUB}'s scheduler asks every member's estimator "
        "(karmada.schedulerEstimators: true in stacks/Pulumi.prod-hub.yaml) and would dial "
        "karmada-scheduler-estimator-prod-fsn1-b, which nothing creates: set schedulerEstimator: true on "
        "prod-fsn1-b, or karmada.schedulerEstimators: false in stacks/Pulumi.prod-hub.yaml")
    nobody = _with_members("prod-fsn1", **{m: {"scheduler_estimator": False}
                                            for m in ("prod-fsn1-a", "prod-fsn1-b", "prod-fsn1-c")})
    off = _contract(schedulerEstimators=False)
    off["regions"]["eu-fsn"]["estimators"] = []  # a hub without estimators runs none for this region
    check_hub_contract(nobody, off, FILE, HUB)  # nobody dials them then


def test_an_all_in_one_stack_agrees_with_its_own_hub_side() -> None:
    from components.operations import preflight

    dev = _with_members("dev", **{"dev-hel1-a": {"scheduler_estimator": False}})
    with pytest.raises(ConfigError, match=r"^stacks/Pulumi\.dev\.yaml: karmada-hub:members\[1\]\.schedulerEstimator: "
                                          r"this stack's scheduler asks every member's estimator"):
        preflight.check(dev, "stacks/Pulumi.dev.yaml")


def test_controller_manager_failover_values_are_the_hubs() -> None:
    """D6: --resource-eviction-rate and the monitor periods are controller-manager flags (karmada v1.18.2
    cmd/controller-manager/app/options/cluster_failover.go, options.go); a region's value feeds no binary."""
    hub = _contract()
    slower = {**hub, "failover": {**hub["failover"], "resourceEvictionRate": 0.5}}
    with pytest.raises(ConfigError) as info:
        check_hub_contract(load_stack("prod-fsn1"), slower, FILE, HUB)
    assert str(info.value) == (
        f"{FILE}: karmada-hub:failover.resourceEvictionRate: 2 here but {HUB}'s karmada-controller-manager runs "
        "--resource-eviction-rate=0.5 for every member; the failover budget must count the hub's value (set "
        "failover.resourceEvictionRate: 0.5 here, or change it in stacks/Pulumi.prod-hub.yaml)")
    # a threshold the agents read binds a region only through its Push members: prod-ash is Pull only
    other = {**hub, "failover": {**hub["failover"], "clusterFailureThreshold": 60}}
    check_hub_contract(load_stack("prod-ash"), other, "stacks/Pulumi.prod-ash.yaml", HUB)
    with pytest.raises(ConfigError, match=r"failover\.clusterFailureThreshold: 30 here"):
        check_hub_contract(load_stack("prod-fsn1"), other, FILE, HUB)


def test_pulumi_run_stops_with_one_line_on_the_stack_reference(rendered_prod_hub: Any) -> None:
    """Under the mock runtime the StackReference returns the given outputs: a hub at another Karmada version
    stops the region program with a RunError carrying the one line (no traceback in `pulumi preview`)."""
    outputs, secret_names = rendered_prod_hub.as_stack_reference()
    outputs["fleetContract"] = {**outputs["fleetContract"], "karmadaVersion": "v1.99.0"}
    with pytest.raises(pulumi.RunError, match=r"^stacks/Pulumi\.prod-fsn1\.yaml: karmada-hub:karmada\.version: "):
        run_program(REPO, read_stack(REPO, "prod-fsn1"), {HUB: (outputs, secret_names)})


def test_hubctl_plan_refuses_a_region_stack_the_hub_disagrees_with(tmp_path: Path) -> None:
    repo = copy_program(tmp_path / "repo")
    path = repo / "stacks" / "Pulumi.prod-fsn1.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["config"]["karmada-hub:dns"]["intervalSeconds"] = 30
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    result = subprocess.run([sys.executable, "-m", "hubctl", "plan", "prod-fsn1", "--quiet"], cwd=repo,
                            capture_output=True, text=True, timeout=300, env=program_env())
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        "error: stacks/Pulumi.prod-fsn1.yaml: karmada-hub:dns.intervalSeconds: 30 here but "
        "organization/karmada-hub/prod-hub uses 60; the failover budget must count the hub's value "
        "(set dns.intervalSeconds: 60)"]
    assert not (repo / "build" / "plan" / "prod-fsn1").exists()


def test_a_region_the_hub_does_not_serve_is_refused() -> None:
    contract = _contract()
    contract["regions"] = {k: v for k, v in contract["regions"].items() if k != "eu-fsn"}
    with pytest.raises(ConfigError) as info:
        check_hub_contract(load_stack("prod-fsn1"), contract, FILE, HUB)
    assert str(info.value) == (f"{FILE}: karmada-hub:region: {HUB} does not serve region eu-fsn: add this stack to "
                               "its karmada-hub:regionStacks and up it first")


def test_a_member_the_hub_has_not_set_up_yet_is_refused() -> None:
    """A region that added a member before its hub read the new file: the hub has no RBAC for it yet."""
    contract = _contract()
    served = contract["regions"]["eu-fsn"]
    contract["regions"]["eu-fsn"] = {**served, "members": [m for m in served["members"] if "prod-fsn1-b" not in m]}
    with pytest.raises(ConfigError) as info:
        check_hub_contract(load_stack("prod-fsn1"), contract, FILE, HUB)
    assert str(info.value) == (f"{FILE}: karmada-hub:members: {HUB} serves prod-fsn1-a:Push, prod-fsn1-c:Push, this "
                               "stack declares prod-fsn1-a:Push, prod-fsn1-b:Pull, prod-fsn1-c:Push; up the hub stack "
                               "first (it reads this file)")
