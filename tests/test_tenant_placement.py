"""Tenant placement options: each rendered exactly as the v1.18.2 CRDs define it, each refused where upstream
would refuse it or where it could not work, and the stateful boundary.

Every rendered policy goes through the upstream CRD schema (closed) and the webhook rules
(`check_propagation_policy`); each webhook-parity check is also shown to fail on a mutated policy.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.config import (
    ConfigError,
    FailoverConfig,
    FleetConfig,
    MemberConfig,
    PlacementConfig,
    PriorityClassConfig,
    QuotaConfig,
    TenantConfig,
)
from components.fleet import policy_docs as fleet
from components.karmada.bootstrap import descheduler_rbac
from tests.support.schemas import validate_karmada, validate_kubernetes
from tests.support.tools import stack_values


def member(name: str, region: str) -> MemberConfig:
    return MemberConfig(name=name, region=region, zones=[name.split("-")[1]], kubernetes_version="v1.33.4",
                        api_endpoint=f"https://{name}.example.com:6443",
                        credentials={"source": "capi", "cluster": name})


MEMBERS = [member("m-fsn1-a", "eu-fsn"), member("m-fsn1-b", "eu-fsn"), member("m-hel1-a", "eu-hel")]
REGIONS = ["eu-fsn", "eu-hel"]

STATE = {"preserve": [{"label": "app.example.com/revision", "jsonPath": "{.currentRevision}"}],
         "restoreFrom": {"kind": "VeleroSchedule", "name": "nightly"}}


def tenant(placement: dict[str, Any] | None = None, **fields: Any) -> TenantConfig:
    return TenantConfig.model_validate({"name": "t", "namespace": "t-ns", "placement": placement or {}, **fields})


def render(t: TenantConfig, failover: FailoverConfig | None = None) -> dict[str, Any]:
    policy = fleet.propagation_policy(t, REGIONS, MEMBERS, failover)
    validate_karmada(policy)
    return policy


OVERFLOW = {"replicaScheduling": "Divided", "weighting": "dynamic", "preferredRegions": ["eu-fsn"],
            "spreadByRegion": False,
            "overflow": [{"name": "spill-hel", "regions": ["eu-hel"]}, {"name": "last", "clusters": ["m-fsn1-b"]}]}
ANTI = {"preferredRegions": ["eu-fsn"], "spreadByRegion": False, "maxClusters": 1,
        "workloadAffinity": {"antiAffinityLabel": "example.com/chain", "antiAffinityGroups": {"pay": 2}}}


# ------------------------------------------------------------------------------------------ overflow


def test_overflow_groups_sit_inside_the_preferred_term_in_order() -> None:
    placement = render(tenant(OVERFLOW))["spec"]["placement"]
    preferred, fallback = placement["clusterAffinities"]
    assert preferred["affinityName"] == fleet.PREFERRED_GROUP
    assert preferred["clusterNames"] == sorted(m.name for m in MEMBERS if m.region == "eu-fsn")
    assert preferred["overflowAffinities"] == [
        {"affinityName": "spill-hel", "clusterNames": sorted(m.name for m in MEMBERS if m.region == "eu-hel")},
        {"affinityName": "last", "clusterNames": ["m-fsn1-b"]},
    ]
    assert "overflowAffinities" not in fallback
    assert placement["replicaScheduling"]["weightPreference"] == {"dynamicWeight": "AvailableReplicas"}


def test_aggregated_division_renders_and_allows_overflow() -> None:
    placement = render(tenant({**OVERFLOW, "weighting": "aggregated"}))["spec"]["placement"]
    assert placement["replicaScheduling"] == {"replicaSchedulingType": "Divided",
                                              "replicaDivisionPreference": "Aggregated"}


def test_no_overflow_means_no_overflow_key_at_all() -> None:
    """Upstream checks `OverflowAffinities != nil`: even an empty list would count as overflow."""
    for term in render(tenant({"preferredRegions": ["eu-fsn"]}))["spec"]["placement"]["clusterAffinities"]:
        assert "overflowAffinities" not in term


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda p: p["replicaScheduling"].pop("weightPreference"), "dynamic weight or aggregated"),
    (lambda p: p["clusterAffinities"][0].pop("clusterNames"), "inline ClusterAffinity"),
    (lambda p: p["clusterAffinities"][0]["overflowAffinities"][1].__setitem__("affinityName", "spill-hel"),
     "unique"),
    (lambda p: p["clusterAffinities"][0]["overflowAffinities"][0].__setitem__("affinityName", "preferred"),
     "unique"),
    (lambda p: p["clusterAffinities"][0]["overflowAffinities"][0].__setitem__("affinityName", "Bad_"),
     "label key"),
])
def test_overflow_webhook_rules(mutate: Any, message: str) -> None:
    policy = render(tenant(OVERFLOW))
    broken = copy.deepcopy(policy)
    mutate(broken["spec"]["placement"])
    with pytest.raises(ValueError, match=message):
        fleet.check_propagation_policy(broken)


@pytest.mark.parametrize(("placement", "message"), [
    ({**OVERFLOW, "weighting": "static"}, "overflow needs replicaScheduling: Divided with weighting: dynamic"),
    ({**OVERFLOW, "replicaScheduling": "Duplicated", "weighting": "static"}, "overflow needs replicaScheduling"),
    ({**OVERFLOW, "preferredRegions": []}, "overflow needs preferredRegions"),
    ({**OVERFLOW, "overflow": [{"name": "a", "regions": ["eu-hel"]}, {"name": "a", "regions": ["eu-fsn"]}]},
     "must be unique"),
    ({**OVERFLOW, "overflow": [{"name": "a"}]}, "exactly one of regions or clusters"),
    ({**OVERFLOW, "overflow": [{"name": "a", "regions": ["eu-hel"], "clusters": ["m-hel1-a"]}]}, "exactly one"),
])
def test_overflow_refusals(placement: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PlacementConfig.model_validate(placement)


def test_overflow_tenant_gets_a_supporting_policy_on_every_region_it_reaches() -> None:
    t = tenant(OVERFLOW)
    main = render(t)
    assert {s["kind"] for s in main["spec"]["resourceSelectors"]} == {"Deployment", "StatefulSet"}
    shared = fleet.supporting_policy(t, REGIONS, MEMBERS)
    assert shared is not None
    validate_karmada(shared)
    assert {s["kind"] for s in shared["spec"]["resourceSelectors"]} == {"Service", "Ingress", "ConfigMap", "Secret"}
    assert shared["spec"]["placement"]["clusterAffinities"][0]["clusterNames"] == sorted(
        m.name for m in MEMBERS if m.region in ("eu-fsn", "eu-hel"))
    assert shared["spec"]["placement"]["replicaScheduling"] == {"replicaSchedulingType": "Duplicated"}
    assert "spreadConstraints" not in shared["spec"]["placement"]
    assert fleet.supporting_policy(tenant({"preferredRegions": ["eu-fsn"]}), REGIONS, MEMBERS) is None
    kinds = {s["kind"] for s in render(tenant({"preferredRegions": ["eu-fsn"]}))["spec"]["resourceSelectors"]}
    assert kinds == {k for _, k in fleet.TENANT_KINDS}


# ------------------------------------------------------------------------------------ spread / maxClusters


def test_max_clusters_without_region_spread_is_a_cluster_constraint_only() -> None:
    spread = render(tenant({"spreadByRegion": False, "maxClusters": 2}))["spec"]["placement"]["spreadConstraints"]
    assert spread == [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 2}]


def test_max_clusters_caps_the_cluster_constraint_of_a_region_spread() -> None:
    spread = render(tenant({"minRegions": 1, "maxClusters": 1}))["spec"]["placement"]["spreadConstraints"]
    assert {c["spreadByField"]: c["maxGroups"] for c in spread} == {"region": 2, "cluster": 1}


@pytest.mark.parametrize(("placement", "message"), [
    ({"replicaScheduling": "Divided", "weighting": "static", "maxClusters": 1}, "does nothing with Divided static"),
    ({"minRegions": 2, "maxClusters": 1}, r"maxClusters \(1\) must be >= minRegions \(2\)"),
    ({"replicaScheduling": "Divided", "weighting": "dynamic", "weights": {"x": 1}}, "weights are only used"),
])
def test_spread_refusals(placement: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PlacementConfig.model_validate(placement)


# ------------------------------------------------------------------------------------ workload affinity


def test_workload_anti_affinity_renders_the_label_key_and_declares_its_groups() -> None:
    policy = render(tenant(ANTI))
    assert policy["spec"]["placement"]["workloadAffinity"] == {"antiAffinity": {"groupByLabelKey": "example.com/chain"}}
    assert policy["metadata"]["annotations"][fleet.GROUPS_ANNOTATION] == '{"antiAffinity":{"pay":2}}'


def test_workload_affinity_and_anti_affinity_together() -> None:
    wa = {"affinityLabel": "example.com/with", "affinityGroups": {"infer": 2},
          "antiAffinityLabel": "example.com/apart", "antiAffinityGroups": {"pay": 2}}
    policy = render(tenant({**ANTI, "workloadAffinity": wa}))
    assert policy["spec"]["placement"]["workloadAffinity"] == {
        "affinity": {"groupByLabelKey": "example.com/with"}, "antiAffinity": {"groupByLabelKey": "example.com/apart"}}


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda w: w.__setitem__("affinity", {"groupByLabelKey": w["antiAffinity"]["groupByLabelKey"]}), "same"),
    (lambda w: w["antiAffinity"].__setitem__("groupByLabelKey", "-bad"), "label key"),
    (lambda w: w["antiAffinity"].__setitem__("groupByLabelKey", "Bad_Prefix/x"), "label key"),
])
def test_workload_affinity_webhook_rules(mutate: Any, message: str) -> None:
    broken = copy.deepcopy(render(tenant(ANTI)))
    mutate(broken["spec"]["placement"]["workloadAffinity"])
    with pytest.raises(ValueError, match=message):
        fleet.check_propagation_policy(broken)


@pytest.mark.parametrize(("placement", "message"), [
    ({**ANTI, "maxClusters": None}, "antiAffinityLabel needs maxClusters"),
    ({"replicaScheduling": "Divided", "weighting": "static",
      "workloadAffinity": ANTI["workloadAffinity"]}, "antiAffinityLabel needs maxClusters"),
    ({"workloadAffinity": {}}, "set affinityLabel, antiAffinityLabel or both"),
    ({"workloadAffinity": {"affinityLabel": "a.io/x"}}, "declare affinityGroups"),
    ({"workloadAffinity": {"affinityLabel": "a.io/x", "affinityGroups": {"g": 2},
                           "antiAffinityLabel": "a.io/x", "antiAffinityGroups": {"h": 2}}}, "must differ"),
    ({"workloadAffinity": {"affinityGroups": {"g": 2}, "antiAffinityLabel": "a.io/y",
                           "antiAffinityGroups": {"h": 2}}, "maxClusters": 1}, "affinityGroups needs its label"),
    ({"workloadAffinity": {"affinityLabel": "not a key", "affinityGroups": {"g": 2}}}, "String should match"),
    ({"workloadAffinity": {"affinityLabel": "a.io/x", "affinityGroups": {"g": 1}}}, "greater than or equal to 2"),
])
def test_workload_affinity_refusals(placement: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PlacementConfig.model_validate(placement)


# ------------------------------------------------------------------------------------ overcommit protection


def test_overcommit_protection_only_where_estimates_matter() -> None:
    PlacementConfig.model_validate({"replicaScheduling": "Divided", "weighting": "dynamic",
                                    "overcommitProtection": True})
    for placement in ({"overcommitProtection": True},
                      {"replicaScheduling": "Divided", "weighting": "static", "overcommitProtection": True}):
        with pytest.raises(ValueError, match="overcommitProtection only changes Divided dynamic/aggregated"):
            PlacementConfig.model_validate(placement)


def test_overcommit_protection_needs_its_gate_and_quota_estimation() -> None:
    dynamic = {"replicaScheduling": "Divided", "weighting": "dynamic", "overcommitProtection": True}
    assert tenant(dynamic).feature_gates() == {"SchedulingOvercommitProtection"}
    quota = {"overall": {"cpu": "4"}, "staticAssignments": [{"cluster": "m-fsn1-a", "hard": {"cpu": "2"}}]}
    assert tenant(dynamic, quota=quota).feature_gates() == {
        "SchedulingOvercommitProtection", "ResourceQuotaEstimate", "FederatedQuotaEnforcement"}


# ------------------------------------------------------------------------------------ priority and preemption


def test_schedule_priority_names_a_kube_priority_class() -> None:
    spec = render(tenant(priorityClass="fleet-standard"))["spec"]
    assert spec["schedulePriority"] == {"priorityClassSource": "KubePriorityClass",
                                        "priorityClassName": "fleet-standard"}
    assert "schedulePriority" not in render(tenant())["spec"]


def test_critical_workloads_get_a_preempting_policy_with_named_selectors() -> None:
    t = tenant(priorityClass="std", critical={"priorityClass": "top", "workloads": [
        {"kind": "Deployment", "name": "checkout"}, {"kind": "StatefulSet", "name": "cart"}]})
    policy = fleet.critical_policy(t, REGIONS, MEMBERS)
    assert policy is not None
    validate_karmada(policy)
    spec = policy["spec"]
    assert policy["metadata"]["name"] == "t-critical"
    assert spec["preemption"] == "Always"
    assert spec["priority"] > render(t)["spec"].get("priority", 0)
    assert spec["resourceSelectors"] == [
        {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "t-ns", "name": "checkout"},
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "namespace": "t-ns", "name": "cart"}]
    assert spec["schedulePriority"]["priorityClassName"] == "top"
    assert spec["placement"] == render(t)["spec"]["placement"]  # only priority differs
    assert fleet.critical_policy(tenant(), REGIONS, MEMBERS) is None
    assert t.feature_gates() == {"PriorityBasedScheduling", "PropagationPolicyPreemption"}


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda s: s["resourceSelectors"][0].pop("name"), "preemption Always needs a name"),
    (lambda s: s["schedulePriority"].__setitem__("priorityClassSource", "FederatedPriorityClass"),
     "only KubePriorityClass"),
])
def test_preemption_and_priority_webhook_rules(mutate: Any, message: str) -> None:
    t = tenant(critical={"priorityClass": "top", "workloads": [{"kind": "Deployment", "name": "checkout"}]})
    broken = copy.deepcopy(fleet.critical_policy(t, REGIONS, MEMBERS))
    assert broken is not None
    mutate(broken["spec"])
    with pytest.raises(ValueError, match=message):
        fleet.check_propagation_policy(broken)


def test_priority_classes_are_valid_kubernetes_objects() -> None:
    docs = fleet.priority_classes([PriorityClassConfig(name="fleet-critical", value=1000000000, description="x"),
                                   PriorityClassConfig(name="low", value=-5)])
    for doc in docs:
        validate_kubernetes(doc, "1.34")
    assert [(d["metadata"]["name"], d["value"], d["globalDefault"]) for d in docs] == [
        ("fleet-critical", 1000000000, False), ("low", -5, False)]
    for bad in ({"name": "system-x", "value": 1}, {"name": "x", "value": 1000000001}):
        with pytest.raises(ValueError):
            PriorityClassConfig.model_validate(bad)


# ------------------------------------------------------------------------------------ application failover


@pytest.mark.parametrize(("app", "expected"), [
    ({}, {"decisionConditions": {"tolerationSeconds": 300}, "purgeMode": "Gracefully", "gracePeriodSeconds": 600}),
    ({"toleration_seconds": 0, "purge_mode": "Directly"},
     {"decisionConditions": {"tolerationSeconds": 0}, "purgeMode": "Directly"}),
    ({"purge_mode": "Never", "toleration_seconds": 60},
     {"decisionConditions": {"tolerationSeconds": 60}, "purgeMode": "Never"}),
    ({"grace_period_seconds": 120},
     {"decisionConditions": {"tolerationSeconds": 300}, "purgeMode": "Gracefully", "gracePeriodSeconds": 120}),
])
def test_application_failover_renders(app: dict[str, Any], expected: dict[str, Any]) -> None:
    spec = render(tenant(applicationFailover=app))["spec"]
    assert spec["failover"]["application"] == expected
    assert spec["propagateDeps"] is True


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda a: a.__setitem__("purgeMode", "Directly"), "only takes effect when purgeMode is Gracefully"),
    (lambda a: a.pop("gracePeriodSeconds"), "required with purgeMode Gracefully"),
    (lambda a: a.__setitem__("gracePeriodSeconds", 0), "must be > 0"),
    (lambda a: a["decisionConditions"].__setitem__("tolerationSeconds", -1), "must be >= 0"),
])
def test_application_failover_webhook_rules(mutate: Any, message: str) -> None:
    broken = copy.deepcopy(render(tenant(applicationFailover={})))
    mutate(broken["spec"]["failover"]["application"])
    with pytest.raises(ValueError, match=message):
        fleet.check_propagation_policy(broken)


def test_application_failover_needs_propagate_deps() -> None:
    broken = copy.deepcopy(render(tenant(applicationFailover={})))
    broken["spec"]["propagateDeps"] = False
    with pytest.raises(ValueError, match="propagateDeps"):
        fleet.check_propagation_policy(broken)


def test_grace_period_only_with_gracefully_in_config() -> None:
    with pytest.raises(ValueError, match="gracePeriodSeconds only applies to purgeMode: Gracefully"):
        tenant(applicationFailover={"purgeMode": "Never", "gracePeriodSeconds": 10})


# ------------------------------------------------------------------------------------ the stateful boundary


def test_stateful_tenant_without_a_state_story_is_refused() -> None:
    with pytest.raises(ValueError, match="a stateful tenant fails over only with a state story, because bindings "
                                         "move and volumes do not"):
        tenant(stateful=True)


def test_stateful_tenant_on_manual_failover_tolerates_the_taint_forever() -> None:
    t = tenant({"maxClusters": 1, "spreadByRegion": False}, stateful=True, failover="manual")
    policy = render(t)
    assert policy["spec"]["placement"]["clusterTolerations"] == [
        {"key": fleet.FAILOVER_TAINT_KEY, "operator": "Exists", "effect": "NoExecute"}]
    assert policy["metadata"]["annotations"] == {fleet.STATEFUL_ANNOTATION: "stateful"}
    assert "application" not in policy["spec"]["failover"]
    assert not t.fails_over and t.feature_gates() == set()


def test_stateful_tenant_with_a_state_story_renders_its_state_preservation() -> None:
    t = tenant({"maxClusters": 1, "spreadByRegion": False}, stateful=True, state=STATE,
               applicationFailover={"purgeMode": "Directly"})
    policy = render(t, FailoverConfig(purge_mode="Gracefully"))
    rules = {"rules": [{"aliasLabelName": "app.example.com/revision", "jsonPath": "{.currentRevision}"}]}
    assert policy["spec"]["failover"]["cluster"] == {"purgeMode": "Directly", "statePreservation": rules}
    assert policy["spec"]["failover"]["application"]["statePreservation"] == rules
    assert policy["metadata"]["annotations"][fleet.RESTORE_ANNOTATION] == "VeleroSchedule/nightly"
    assert "clusterTolerations" not in policy["spec"]["placement"]
    assert t.feature_gates() == {"StatefulFailoverInjection"}


def test_state_preservation_alias_must_be_a_label_name() -> None:
    t = tenant({"maxClusters": 1, "spreadByRegion": False}, stateful=True, state=STATE)
    broken = copy.deepcopy(render(t))
    broken["spec"]["failover"]["cluster"]["statePreservation"]["rules"][0]["aliasLabelName"] = "not a label"
    with pytest.raises(ValueError, match="qualified label name"):
        fleet.check_propagation_policy(broken)


@pytest.mark.parametrize(("fields", "message"), [
    ({"state": STATE}, "state is only for stateful: true tenants"),
    ({"stateful": True, "failover": "manual", "state": STATE, "placement": {"maxClusters": 1}},
     "with failover: manual it does nothing"),
    ({"failover": "manual", "placement": {"tolerationSeconds": 30}}, "remove placement.tolerationSeconds"),
    ({"stateful": True, "state": STATE}, "set placement.maxClusters: 1"),
    ({"stateful": True, "failover": "manual", "applicationFailover": {}}, "move a stateful workload without"),
    ({"stateful": True, "state": STATE, "placement": {"maxClusters": 1}, "applicationFailover": {}},
     "set applicationFailover.purgeMode: Directly"),
    ({"stateful": True, "state": {**STATE, "preserve": [{"label": "a.io/x", "jsonPath": "{.status.phase}"}]},
      "placement": {"maxClusters": 1}}, r"write '\{\.phase\}'"),
    ({"stateful": True, "state": {**STATE, "preserve": [{"label": "a.io/x", "jsonPath": ".phase"}]},
      "placement": {"maxClusters": 1}}, "String should match"),
    ({"stateful": True, "state": {**STATE, "preserve": []}, "placement": {"maxClusters": 1}}, "at least 1"),
    ({"stateful": True, "state": {**STATE, "restoreFrom": {"kind": "Tape", "name": "x"}},
      "placement": {"maxClusters": 1}}, "VeleroBackup"),
    ({"priorityClass": "a", "critical": {"priorityClass": "a", "workloads": [{"kind": "Deployment", "name": "x"}]}},
     "must differ"),
])
def test_tenant_refusals(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TenantConfig.model_validate({"name": "t", "namespace": "t", **fields})


# ------------------------------------------------------------------------------------ fleet-level checks


def dev(mutate: Any) -> str:
    raw, secrets = stack_values("dev")
    mutate(raw)
    with pytest.raises(ConfigError) as info:
        FleetConfig.from_mapping(raw, "stacks/Pulumi.dev.yaml", secrets)
    message = str(info.value)
    assert "\n" not in message and message.startswith("stacks/Pulumi.dev.yaml: karmada-hub:")
    return message.split("karmada-hub:", 1)[1]


def _gate_off(raw: dict[str, Any], gate: str) -> None:
    raw["karmada"]["featureGates"].remove(gate)


@pytest.mark.parametrize(("gate", "where"), [
    ("FederatedQuotaEnforcement", "tenants[0].quota.enforce"),
    ("PriorityBasedScheduling", "tenants[0].priorityClass"),
    ("PropagationPolicyPreemption", "tenants[0].critical"),
    ("SchedulingOvercommitProtection", "tenants[1].placement.overcommitProtection"),
    ("StatefulFailoverInjection", "tenants[2].state"),
])
def test_a_feature_without_its_gate_is_refused(gate: str, where: str) -> None:
    assert dev(lambda raw: _gate_off(raw, gate)) == (
        f"{where}: needs {gate} in karmada.featureGates: while the gate is off the policy is accepted and does "
        "nothing")


def test_a_gate_no_tenant_uses_is_refused_in_all_in_one() -> None:
    assert dev(lambda raw: raw["karmada"]["featureGates"].append("WorkloadAffinity")) == (
        "karmada.featureGates: WorkloadAffinity is on but no tenant uses it; remove it (alpha gates stay off unless "
        "a tenant needs them)")


def test_a_gate_that_is_not_a_tenant_gate_is_refused() -> None:
    message = dev(lambda raw: raw["karmada"]["featureGates"].append("PriorityBasedPreemptiveScheduling"))
    assert message.startswith("karmada.featureGates[5]: must be one of WorkloadAffinity, ")


def test_estimator_gates_need_estimators() -> None:
    def mutate(raw: dict[str, Any]) -> None:
        raw["karmada"]["schedulerEstimators"] = False
        for m in raw["members"]:
            m["schedulerEstimator"] = False
    assert dev(mutate) == ("tenants[1].placement.overcommitProtection: needs karmada.schedulerEstimators: true "
                           "(overcommit protection corrects the estimators' answers)")


def test_unknown_priority_class_and_a_critical_class_not_above_the_tenant() -> None:
    assert dev(lambda raw: raw["tenants"][0].__setitem__("priorityClass", "gold")) == (
        "tenants[0].priorityClass: 'gold' is not in karmada.priorityClasses (fleet-critical, fleet-standard); the "
        "controller-manager would fail to build the tenant's bindings")

    def swap(raw: dict[str, Any]) -> None:
        raw["tenants"][0]["priorityClass"] = "fleet-critical"
        raw["tenants"][0]["critical"]["priorityClass"] = "fleet-standard"
    assert dev(swap) == ("tenants[0].critical.priorityClass: 'fleet-standard' (1000) must be higher than the "
                         "tenant's own priority (100000)")


@pytest.mark.parametrize(("group", "expected"), [
    ({"name": "x", "regions": ["eu-nbg"]}, "tenants[1].placement.overflow[0].regions: overflow group 'x' names "
                                           "unknown region 'eu-nbg'"),
    ({"name": "x", "clusters": ["dev-nbg1-a"]}, "tenants[1].placement.overflow[0].clusters: overflow group 'x' names "
                                                "unknown member 'dev-nbg1-a'"),
])
def test_overflow_groups_must_exist(group: dict[str, Any], expected: str) -> None:
    assert dev(lambda raw: raw["tenants"][1]["placement"].__setitem__("overflow", [group])) == expected


def test_overflow_region_without_members_is_refused() -> None:
    def mutate(raw: dict[str, Any]) -> None:
        raw["regions"]["eu-nbg"] = {"location": "nbg1"}
        raw["tenants"][1]["placement"]["overflow"] = [{"name": "x", "regions": ["eu-nbg"]}]
    assert dev(mutate) == ("tenants[1].placement.overflow[0].regions: overflow group 'x' selects no member cluster "
                           "(no member in eu-nbg)")


def test_region_stack_may_not_own_the_priority_table() -> None:
    raw, secrets = stack_values("prod-fsn1")
    raw["karmada"]["priorityClasses"] = [{"name": "x", "value": 1}]
    with pytest.raises(ConfigError, match="the hub stack creates the priority table"):
        FleetConfig.from_mapping(raw, "stacks/Pulumi.prod-fsn1.yaml", secrets)


# ------------------------------------------------------------------------------------ rebalancer and RBAC


def test_workload_rebalancer_validates_and_refuses_other_kinds() -> None:
    doc = fleet.workload_rebalancer("search-back", "search", [("Deployment", "api"), ("StatefulSet", "index")])
    validate_karmada(doc)
    assert doc["spec"]["workloads"][1] == {"apiVersion": "apps/v1", "kind": "StatefulSet", "namespace": "search",
                                           "name": "index"}
    with pytest.raises(ValueError):
        fleet.workload_rebalancer("x", "search", [("Service", "api")])
    with pytest.raises(ValueError):
        fleet.workload_rebalancer("x", "search", [])


def test_descheduler_rbac_is_least_privilege_and_valid() -> None:
    docs = descheduler_rbac("system:karmada:karmada-descheduler")
    for doc in docs:
        validate_kubernetes(doc, "1.34")
    rules = [r for d in docs for r in d.get("rules", [])]
    assert all("*" not in r["verbs"] and "*" not in r["resources"] for r in rules)
    granted = {(g, res, v) for r in rules for g in r["apiGroups"] for res in r["resources"] for v in r["verbs"]}
    assert ("work.karmada.io", "resourcebindings", "update") in granted
    assert ("work.karmada.io", "resourcebindings", "delete") not in granted
    assert ("", "secrets", "get") not in granted
    assert ("", "services", "get") in granted  # estimator lookup: Forbidden would abort the connection
    role = next(d for d in docs if d["kind"] == "Role")
    lease_update = [r for r in role["rules"] if "update" in r["verbs"]]
    assert lease_update[0]["resourceNames"] == ["karmada-descheduler"]
    binding_subjects = {s["name"] for d in docs for s in d.get("subjects", [])}
    assert binding_subjects == {"system:karmada:karmada-descheduler"}


def test_quota_only_tenant_needs_only_the_quota_gate() -> None:
    assert tenant(quota=QuotaConfig(overall={"cpu": "1"})).feature_gates() == {"FederatedQuotaEnforcement"}
    assert tenant(quota=QuotaConfig(overall={"cpu": "1"}, enforce=False)).feature_gates() == set()


# ------------------------------------------------------------------------------------ budget footnotes


def test_budget_counts_only_tenants_that_fail_over_and_says_what_the_descheduler_does() -> None:
    from components.operations.budget import budget_markdown, failover_budget, format_budget

    raw, secrets = stack_values("dev")
    raw["tenants"][1]["placement"]["tolerationSeconds"] = 45
    config = FleetConfig.from_mapping(raw, "stacks/Pulumi.dev.yaml", secrets)
    report = failover_budget(config)
    assert report.capacity.term("toleration").seconds == 45
    assert [r.tenant for r in report.tenants] == ["shop", "search", "ledger"]  # archive is never evicted
    assert report.footnotes[0] == ("not counted: archive (failover: manual; a member loss leaves them waiting for "
                                   "it)")
    assert "300 + 120 = 420 s" in report.footnotes[1] and "never moves replicas back" in report.footnotes[1]
    # dev has a Pull member: the last note is what losing one hub server can do to it (test_budget.py)
    assert report.footnotes[2].startswith("one hub server lost without a reset") and len(report.footnotes) == 3
    assert format_budget(report).splitlines()[-3:] == [f"* {f}" for f in report.footnotes]
    assert budget_markdown(report).endswith(report.footnotes[2])
    raw["karmada"]["descheduler"] = {"enabled": False}
    raw["tenants"] = [t for t in raw["tenants"] if t["name"] != "archive"]
    quiet = failover_budget(FleetConfig.from_mapping(raw, "stacks/Pulumi.dev.yaml", secrets))
    assert quiet.footnotes == report.footnotes[2:]


# ------------------------------------------------------------------------------------ hub contract


def _region(mutate: Any = None) -> FleetConfig:
    raw, secrets = stack_values("prod-fsn1")
    if mutate:
        mutate(raw)
    return FleetConfig.from_mapping(raw, "stacks/Pulumi.prod-fsn1.yaml", secrets)


def _contract(**overrides: Any) -> dict[str, Any]:
    from components.operations import preflight
    from components.operations.region_intents import region_intents

    raw, secrets = stack_values("prod-hub")
    hub = FleetConfig.from_mapping(raw, "stacks/Pulumi.prod-hub.yaml", secrets)
    return {**preflight.hub_contract(hub, region_intents(hub, "prod-hub")), **overrides}


def _agree(config: FleetConfig, contract: dict[str, Any]) -> None:
    from components.operations import preflight

    preflight.check_hub_contract(config, contract, "stacks/Pulumi.prod-fsn1.yaml", "org/karmada-hub/prod-hub")


def test_region_agrees_with_its_hub_on_gates_and_priorities() -> None:
    contract = _contract()
    assert contract["featureGates"] == ["FederatedQuotaEnforcement", "WorkloadAffinity"]
    _agree(_region(), contract)


def test_region_gates_must_equal_the_hubs() -> None:
    with pytest.raises(ConfigError) as info:
        _agree(_region(), _contract(featureGates=["FederatedQuotaEnforcement"]))
    assert str(info.value) == (
        "stacks/Pulumi.prod-fsn1.yaml: karmada-hub:karmada.featureGates: ['FederatedQuotaEnforcement', "
        "'WorkloadAffinity'] here but org/karmada-hub/prod-hub switches on ['FederatedQuotaEnforcement']; a gate is "
        "on or off for the whole fleet (set karmada.featureGates: ['FederatedQuotaEnforcement'])")


def test_region_tenant_may_only_name_the_hubs_priority_classes() -> None:
    def with_class(raw: dict[str, Any]) -> None:
        raw["karmada"]["featureGates"].append("PriorityBasedScheduling")
        raw["tenants"][0]["priorityClass"] = "gold"
    config = _region(with_class)
    gates = ["FederatedQuotaEnforcement", "PriorityBasedScheduling", "WorkloadAffinity"]
    with pytest.raises(ConfigError, match=r"tenants\[0\]\.priorityClass: 'gold' is not in "
                                          r"org/karmada-hub/prod-hub's karmada\.priorityClasses \(none\)"):
        _agree(config, _contract(featureGates=gates))
    _agree(config, _contract(featureGates=gates, priorityClasses={"gold": 10}))


def test_region_overcommit_protection_needs_the_hubs_estimators() -> None:
    def sop(raw: dict[str, Any]) -> None:
        raw["karmada"]["featureGates"].append("SchedulingOvercommitProtection")
        raw["tenants"][0]["placement"] = {"replicaScheduling": "Divided", "weighting": "dynamic",
                                          "preferredRegions": ["eu-fsn"], "overcommitProtection": True}
        raw["tenants"][0]["quota"]["staticAssignments"] = []
        for member in raw["members"]:  # a hub without estimators: no member may run one
            member.pop("schedulerEstimator", None)
    config = _region(sop)
    gates = ["FederatedQuotaEnforcement", "SchedulingOvercommitProtection", "WorkloadAffinity"]
    with pytest.raises(ConfigError, match="overcommitProtection: needs org/karmada-hub/prod-hub to run"):
        _agree(config, _contract(featureGates=gates, schedulerEstimators=False))


def test_renaming_the_fallback_group_is_how_bindings_start_from_the_preferred_group_again() -> None:
    """Upstream getAffinityIndex: an observed group name that no longer exists restarts at the first group, and
    placementChanged sees the observed term gone, so the binding is rescheduled (pkg/scheduler/helper.go)."""
    t = tenant({"preferredRegions": ["eu-fsn"], "fallbackGroup": "fleet-fallback-2"})
    names = [a["affinityName"] for a in render(t)["spec"]["placement"]["clusterAffinities"]]
    assert names == ["preferred", "fleet-fallback-2"]
    with pytest.raises(ValueError, match="fallbackGroup must differ"):
        PlacementConfig.model_validate({"fallbackGroup": "preferred"})
    with pytest.raises(ValueError, match="differ from 'preferred' and 'b'"):
        PlacementConfig.model_validate({**OVERFLOW, "fallbackGroup": "b", "overflow": [{"name": "b",
                                                                                         "regions": ["eu-hel"]}]})
