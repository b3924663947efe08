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
from hubctl.plan import run_program
from hubctl.stackfile import read_stack
from tests.support.tools import REPO, copy_program, load_stack, program_env

HUB = "organization/karmada-hub/prod-hub"
FILE = "stacks/Pulumi.prod-fsn1.yaml"


def _contract(**changes: Any) -> dict[str, Any]:
    contract = hub_contract(load_stack("prod-hub"))
    for key, value in changes.items():
        if key in ("ttl", "intervalSeconds", "refreshSeconds"):
            contract["dns"] = {**contract["dns"], key: value}
        else:
            contract[key] = value
    return contract


def test_the_example_region_stacks_agree_with_prod_hub() -> None:
    for stack in ("prod-fsn1", "prod-hel1", "prod-ash"):
        check_hub_contract(load_stack(stack), _contract(), f"stacks/Pulumi.{stack}.yaml", HUB)


@pytest.mark.parametrize(("changes", "expected"), [
    ({"karmadaVersion": "v1.19.0"},
     "karmada.version: organization/karmada-hub/prod-hub runs Karmada v1.19.0, which this checkout's "
     "compatibility matrix (components/versions.py) does not know; update the checkout first"),
    ({"ttl": 45},
     "dns.ttl: 30 here but organization/karmada-hub/prod-hub's external-dns uses 45; the failover budget must "
     "count the hub's value (set dns.ttl: 45)"),
    ({"refreshSeconds": 30},
     "dns.refreshSeconds: 15 here but organization/karmada-hub/prod-hub's external-dns uses 30; the failover "
     "budget must count the hub's value (set dns.refreshSeconds: 30)"),
    ({"dns": None}, "dns: organization/karmada-hub/prod-hub runs no external-dns (no dns section); add it there "
                    "first"),
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
        check_hub_contract(config, _contract(schedulerEstimators=False), FILE, HUB)


def test_every_push_member_has_the_estimator_the_hub_scheduler_dials() -> None:
    """karmada v1.18.2 pkg/scheduler/scheduler.go establishEstimatorConnections: one dial per Cluster (Pull ones
    skipped with --disable-scheduler-estimator-in-pull-mode); a Push member without one is a dead dial."""
    config = _with_members("prod-fsn1", **{"prod-fsn1-a": {"scheduler_estimator": False}})
    with pytest.raises(ConfigError) as info:
        check_hub_contract(config, _contract(), FILE, HUB)
    assert str(info.value) == (
        f"{FILE}: karmada-hub:members[0].schedulerEstimator: {HUB}'s scheduler asks every Push member's estimator "
        "(karmada.schedulerEstimators: true in stacks/Pulumi.prod-hub.yaml) and would dial "
        "karmada-scheduler-estimator-prod-fsn1-a, which nothing creates: set schedulerEstimator: true on "
        "prod-fsn1-a, or karmada.schedulerEstimators: false in stacks/Pulumi.prod-hub.yaml")
    check_hub_contract(config, _contract(schedulerEstimators=False), FILE, HUB)  # nobody dials it then


def test_no_estimator_for_a_pull_member_the_scheduler_skips() -> None:
    config = _with_members("prod-fsn1", **{"prod-fsn1-b": {"scheduler_estimator": True}})
    with pytest.raises(ConfigError, match=r"members\[1\]\.schedulerEstimator: prod-fsn1-b is a Pull member"):
        check_hub_contract(config, _contract(), FILE, HUB)
    check_hub_contract(config, _contract(schedulerEstimatorsForPull=True), FILE, HUB)


def test_a_tenant_needing_a_gate_the_hub_does_not_run_is_refused_naming_both_keys() -> None:
    """D5: quota is enforced by the hub's controller-manager and webhook only with FederatedQuotaEnforcement
    (karmada v1.18.2 cmd/controller-manager/app/controllermanager.go:641, pkg/webhook/resourcebinding/
    validating.go:121), so a region tenant with quota.enforce needs the hub to run it."""
    with pytest.raises(ConfigError) as info:
        check_hub_contract(load_stack("prod-fsn1"), _contract(featureGates={}), FILE, HUB)
    assert str(info.value) == (
        f"{FILE}: karmada-hub:tenants[0].quota.enforce: needs feature gate FederatedQuotaEnforcement, which {HUB} "
        "does not run (its karmada-controller-manager, karmada-webhook would ignore it): set "
        "karmada.features.FederatedQuotaEnforcement: true in stacks/Pulumi.prod-hub.yaml")


def test_region_gates_feed_only_its_agents_and_estimators_and_agree_with_the_hub() -> None:
    config = load_stack("prod-fsn1")
    with_gate = config.model_copy(update={"karmada": config.karmada.model_copy(
        update={"features": {"FederatedQuotaEnforcement": True}})})
    with pytest.raises(ConfigError, match=r"karmada\.features\.FederatedQuotaEnforcement: no binary this stack "
                                          r"renders reads it \(karmada-controller-manager, karmada-webhook run in "):
        check_hub_contract(with_gate, _contract(), FILE, HUB)
    # the agents here (prod-fsn1-b is Pull) read CustomizedClusterResourceModeling: it must be the hub's value
    hub_off = _contract(featureGates={"FederatedQuotaEnforcement": True, "CustomizedClusterResourceModeling": False})
    with pytest.raises(ConfigError, match=r"karmada\.features\.CustomizedClusterResourceModeling: true here but "
                                          r".* runs CustomizedClusterResourceModeling=false; this stack's "
                                          r"karmada-agent must agree"):
        check_hub_contract(config, hub_off, FILE, HUB)
    agreeing = config.model_copy(update={"karmada": config.karmada.model_copy(
        update={"features": {"CustomizedClusterResourceModeling": False}})})
    check_hub_contract(agreeing, hub_off, FILE, HUB)


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
    doc["config"]["karmada-hub:dns"]["ttl"] = 20
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    result = subprocess.run([sys.executable, "-m", "hubctl", "plan", "prod-fsn1", "--quiet"], cwd=repo,
                            capture_output=True, text=True, timeout=300, env=program_env())
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        "error: stacks/Pulumi.prod-fsn1.yaml: karmada-hub:dns.ttl: 20 here but organization/karmada-hub/prod-hub's "
        "external-dns uses 30; the failover budget must count the hub's value (set dns.ttl: 30)"]
    assert not (repo / "build" / "plan" / "prod-fsn1").exists()
