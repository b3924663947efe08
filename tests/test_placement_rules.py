"""The policy pack's placement rules, each with a passing and a failing case, on rendered documents and plans."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from components.config import MemberConfig, TenantConfig
from components.fleet import member_docs
from components.fleet import policy_docs as fleet
from hubctl.mocks import unwrap
from hubctl.policy_check import check_plan
from policy import rules
from policy.rules import placement as rule_names

PP = "kubernetes:policy.karmada.io/v1alpha1:PropagationPolicy"
CLUSTER = "kubernetes:cluster.karmada.io/v1alpha1:Cluster"
STATE = {"preserve": [{"label": "app.example.com/revision", "jsonPath": "{.currentRevision}"}],
         "restoreFrom": {"kind": "VeleroSchedule", "name": "nightly"}}


def member(name: str, region: str) -> MemberConfig:
    return MemberConfig(name=name, region=region, zones=[name.split("-")[1]], kubernetes_version="v1.33.4",
                        api_endpoint=f"https://{name}.example.com:6443",
                        credentials={"source": "capi", "cluster": name})


MEMBERS = [member("m-fsn1-a", "eu-fsn"), member("m-fsn1-b", "eu-fsn"), member("m-hel1-a", "eu-hel")]


def rendered(**fields: Any) -> dict[str, Any]:
    t = TenantConfig.model_validate({"name": "t", "namespace": "t", **fields})
    return fleet.propagation_policy(t, ["eu-fsn", "eu-hel"], MEMBERS)


def stack(*policies: dict[str, Any], members: list[MemberConfig] = MEMBERS) -> list[rules.StackResource]:
    out: list[rules.StackResource] = [(CLUSTER, member_docs.cluster_object(m), f"urn:c:{m.name}") for m in members]
    out += [(PP, p, f"urn:pp:{p['metadata']['name']}") for p in policies]
    return out


def test_rule_names_match_the_program() -> None:
    assert rule_names.FAILOVER_TAINT_KEY == fleet.FAILOVER_TAINT_KEY
    assert rule_names.STATEFUL_ANNOTATION == fleet.STATEFUL_ANNOTATION
    assert rule_names.RESTORE_ANNOTATION == fleet.RESTORE_ANNOTATION
    assert rule_names.GROUPS_ANNOTATION == fleet.GROUPS_ANNOTATION


# ------------------------------------------------------------------------------------ stateful-failover


@pytest.mark.parametrize("fields", [
    {"stateful": True, "failover": "manual", "placement": {"maxClusters": 1}},
    {"stateful": True, "state": STATE, "placement": {"maxClusters": 1}},
    {"stateful": True, "state": STATE, "placement": {"maxClusters": 1},
     "applicationFailover": {"purgeMode": "Directly"}},
    {},  # stateless: out of scope
])
def test_stateful_failover_passes(fields: dict[str, Any]) -> None:
    assert rules.stateful_failover(PP, rendered(**fields)) == []


def _story() -> dict[str, Any]:
    return rendered(stateful=True, state=STATE, placement={"maxClusters": 1},
                    applicationFailover={"purgeMode": "Directly"})


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda p: p["spec"]["failover"]["cluster"].pop("statePreservation"), "without a state story"),
    (lambda p: p["metadata"]["annotations"].pop(fleet.RESTORE_ANNOTATION), "without a state story"),
    (lambda p: p["spec"]["failover"]["cluster"].__setitem__("purgeMode", "Gracefully"), "purgeMode Directly"),
    (lambda p: p["spec"]["failover"]["application"].__setitem__("purgeMode", "Never"), "purgeMode Directly"),
])
def test_stateful_failover_fails_without_a_working_state_story(mutate: Any, message: str) -> None:
    broken = copy.deepcopy(_story())
    mutate(broken)
    assert any(message in m for m in rules.stateful_failover(PP, broken))


def test_stateful_manual_policy_that_lost_its_toleration_fails() -> None:
    manual = rendered(stateful=True, failover="manual", placement={"maxClusters": 1})
    assert rules.stateful_failover(PP, manual) == []
    timed = copy.deepcopy(manual)
    timed["spec"]["placement"]["clusterTolerations"][0]["tolerationSeconds"] = 60
    assert rules.stateful_failover(PP, timed)
    gone = copy.deepcopy(manual)
    del gone["spec"]["placement"]["clusterTolerations"]
    assert rules.stateful_failover(PP, gone)
    with_app = copy.deepcopy(manual)
    with_app["spec"]["failover"]["application"] = {"decisionConditions": {"tolerationSeconds": 1},
                                                   "purgeMode": "Directly"}
    assert any("application failover" in m for m in rules.stateful_failover(PP, with_app))


# ------------------------------------------------------------------------------------ overflow-groups-exist

OVERFLOW = {"replicaScheduling": "Divided", "weighting": "dynamic", "preferredRegions": ["eu-fsn"],
            "spreadByRegion": False, "overflow": [{"name": "spill", "regions": ["eu-hel"]}]}


def test_overflow_groups_exist_passes() -> None:
    assert rules.overflow_groups_exist(stack(rendered(placement=OVERFLOW))) == []


def test_overflow_group_without_a_member_fails() -> None:
    no_hel = [m for m in MEMBERS if m.region != "eu-hel"]
    found = rules.overflow_groups_exist(stack(rendered(placement=OVERFLOW), members=no_hel))
    assert found == [("t/t: overflow group spill of preferred selects no Cluster in this stack", "urn:pp:t")]
    typo = copy.deepcopy(rendered(placement=OVERFLOW))
    typo["spec"]["placement"]["clusterAffinities"][0]["overflowAffinities"][0] = {
        "affinityName": "spill", "clusterNames": ["m-hel1-x"]}
    assert rules.overflow_groups_exist(stack(typo))


# ------------------------------------------------------------------------------------ affinity-groups-resolvable

ANTI = {"preferredRegions": ["eu-fsn"], "spreadByRegion": False, "maxClusters": 1,
        "workloadAffinity": {"antiAffinityLabel": "example.com/chain", "antiAffinityGroups": {"pay": 3}}}


def test_affinity_groups_resolvable_passes() -> None:
    assert rules.affinity_groups_resolvable(stack(rendered(placement=ANTI), rendered())) == []


def test_affinity_group_that_selects_nothing_fails() -> None:
    broken = copy.deepcopy(rendered(placement={"preferredRegions": ["eu-fsn"]}))
    broken["spec"]["placement"]["clusterAffinities"][0]["clusterNames"] = ["x"]
    assert rules.affinity_groups_resolvable(stack(broken)) == [
        ("t/t: affinity group preferred selects no Cluster in this stack", "urn:pp:t")]


def test_anti_affinity_group_larger_than_its_reach_fails() -> None:
    big = copy.deepcopy(rendered(placement=ANTI))
    big["metadata"]["annotations"][fleet.GROUPS_ANNOTATION] = json.dumps({"antiAffinity": {"pay": 4}})
    assert any("has 4 workloads but its groups reach 3" in m for m, _ in rules.affinity_groups_resolvable(stack(big)))


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda p: p["metadata"]["annotations"].pop(fleet.GROUPS_ANNOTATION), "without its declared groups"),
    (lambda p: p["metadata"]["annotations"].__setitem__(fleet.GROUPS_ANNOTATION, "{"), "without its declared"),
    (lambda p: p["metadata"]["annotations"].__setitem__(fleet.GROUPS_ANNOTATION, "{}"), "has no declared groups"),
    (lambda p: p["spec"]["placement"]["workloadAffinity"]["antiAffinity"].__setitem__("groupByLabelKey", "a b"),
     "is not a label key"),
])
def test_workload_groups_must_be_declared_and_valid(mutate: Any, message: str) -> None:
    broken = copy.deepcopy(rendered(placement=ANTI))
    mutate(broken)
    assert any(message in m for m, _ in rules.affinity_groups_resolvable(stack(broken)))


def test_cluster_matches_like_upstream() -> None:
    c = member_docs.cluster_object(MEMBERS[0])
    assert rules.cluster_matches({"fieldSelector": {"matchExpressions": [
        {"key": "zone", "operator": "In", "values": ["fsn1"]}]}}, c)
    assert not rules.cluster_matches({"clusterNames": ["m-fsn1-a"], "exclude": ["m-fsn1-a"]}, c)
    assert rules.cluster_matches({"labelSelector": {"matchLabels": {"topology.kubernetes.io/region": "eu-fsn"}}}, c)
    assert not rules.cluster_matches({"labelSelector": {"matchLabels": {"tier": "gold"}}}, c)


# ------------------------------------------------------------------------------------ on a whole plan


def test_the_rules_run_in_the_offline_check(rendered_dev: Any) -> None:
    """The dev plan passes; a stateful policy stripped of its state story in the same plan does not. Deployments are
    included: a Pull member's Cluster is the one its agent registers (read from the agent's flags)."""
    plan = {"stack": "dev", "resources": [
        {"type": r.type, "urn": r.urn, "inputs": copy.deepcopy(unwrap(r.inputs))} for r in rendered_dev.records
        if r.type in (PP, CLUSTER, "kubernetes:apps/v1:Deployment")]}
    assert [v for v in check_plan(plan) if v.policy.startswith(("stateful", "overflow", "affinity"))] == []
    ledger = next(r for r in plan["resources"] if r["type"] == PP and r["inputs"]["metadata"]["name"] == "ledger")
    del ledger["inputs"]["spec"]["failover"]["cluster"]["statePreservation"]
    assert [v.policy for v in check_plan(plan) if v.policy.startswith("stateful")] == ["stateful-failover-needs-state"]


def test_a_pull_members_cluster_is_the_one_its_agent_registers() -> None:
    """The plan renders no Pull Cluster (the agent creates it from its flags at start): the rules count an agent
    Deployment as that Cluster, with its --cluster-region/--cluster-zones and no labels."""
    from components.karmada import flags

    hel = member("m-hel1-a", "eu-hel")
    args = flags.agent_args(hel.name, hel.api_endpoint, region=hel.region, zones=hel.zones)
    agent = member_docs.agent_deployment(hel.name, "v1.18.2", args)
    pushed = [m for m in MEMBERS if m.region != "eu-hel"]
    resources = [*stack(rendered(placement=OVERFLOW), members=pushed),
                 ("kubernetes:apps/v1:Deployment", agent, "urn:agent")]
    assert rules.overflow_groups_exist(resources) == []
    assert rules.overflow_groups_exist(stack(rendered(placement=OVERFLOW), members=pushed))  # without the agent
