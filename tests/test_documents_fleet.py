"""Tests for the fleet policy documents and the Karmada CRD validator they are checked with.

Every rendered object goes through the upstream v1.18.2 CRD schema (closed: unknown fields fail) and the
webhook rules; the invariants that keep workloads alive through a failover get their own tests.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from components.config import (
    FailoverConfig,
    MemberConfig,
    PlacementConfig,
    QuotaConfig,
    RegionConfig,
    StaticAssignment,
    TenantConfig,
)
from components.fleet import policy_docs as fleet
from tests.support.schemas import SchemaError, validate_any, validate_karmada, validate_kubernetes
from tests.support.tools import load_stack

REPO = Path(__file__).resolve().parents[1]
DEV_STACK = REPO / "stacks" / "Pulumi.dev.yaml"




def member(name: str, region: str, sync_mode: str = "Push") -> MemberConfig:
    return MemberConfig(
        name=name,
        region=region,
        zones=[name.split("-")[1]] if "-" in name else [],
        sync_mode=sync_mode,
        kubernetes_version="v1.33.4",
        api_endpoint=f"https://{name}.example.com:6443",
        credentials={"source": "capi", "cluster": name},
    )


REGIONS = {
    "eu-fsn": RegionConfig(location="fsn1", registry_mirror="registry-fsn1.example.com"),
    "eu-hel": RegionConfig(location="hel1", registry_mirror="registry-hel1.example.com:5000/mirror"),
    "us-ash": RegionConfig(location="ash"),
}
MEMBERS = [member("m-fsn1-a", "eu-fsn"), member("m-fsn1-b", "eu-fsn"), member("m-hel1-a", "eu-hel", "Pull"),
           member("m-ash-a", "us-ash")]


def tenant(**placement: Any) -> TenantConfig:
    return TenantConfig(name="shop", namespace="shop-ns", placement=PlacementConfig(**placement))


PLACEMENTS: dict[str, dict[str, Any]] = {
    "duplicated-defaults": {},
    "duplicated-preferred-2-regions": {"preferred_regions": ["eu-fsn", "eu-hel"], "min_regions": 2},
    "duplicated-no-spread": {"preferred_regions": ["us-ash"], "spread_by_region": False},
    "divided-static": {"replica_scheduling": "Divided", "weighting": "static",
                       "weights": {"m-fsn1-a": 3, "m-hel1-a": 1}, "preferred_regions": ["eu-fsn"]},
    "divided-static-equal": {"replica_scheduling": "Divided", "weighting": "static"},
    "divided-dynamic": {"replica_scheduling": "Divided", "weighting": "dynamic", "min_regions": 3},
    "tolerating": {"toleration_seconds": 120, "preferred_regions": ["eu-hel"]},
    "tolerating-zero": {"toleration_seconds": 0},
}


def render(placement: dict[str, Any], failover: FailoverConfig | None = None) -> dict[str, Any]:
    return fleet.propagation_policy(tenant(**placement), list(REGIONS), MEMBERS, failover)


# ------------------------------------------------------------------------------ PropagationPolicy


@pytest.mark.parametrize("case", sorted(PLACEMENTS))
def test_propagation_policy_validates_against_crd(case: str) -> None:
    policy = render(PLACEMENTS[case])
    validate_karmada(policy)
    assert policy["metadata"] == {"name": "shop", "namespace": "shop-ns",
                                  "labels": {fleet.TENANT_LABEL: "shop"}}


@pytest.mark.parametrize("case", sorted(PLACEMENTS))
def test_fallback_group_is_always_last_and_covers_the_fleet(case: str) -> None:
    affinities = render(PLACEMENTS[case])["spec"]["placement"]["clusterAffinities"]
    assert affinities[-1]["affinityName"] == fleet.FALLBACK_GROUP
    assert [a["affinityName"] for a in affinities].count(fleet.FALLBACK_GROUP) == 1
    assert affinities[-1] == {"affinityName": fleet.FALLBACK_GROUP,
                              "clusterNames": sorted(m.name for m in MEMBERS)}  # by name: nothing a member writes
    assert "clusterAffinity" not in render(PLACEMENTS[case])["spec"]["placement"]


def test_preferred_group_comes_first_in_declared_order() -> None:
    affinities = render({"preferred_regions": ["eu-hel", "eu-fsn"]})["spec"]["placement"]["clusterAffinities"]
    assert [a["affinityName"] for a in affinities] == [fleet.PREFERRED_GROUP, fleet.FALLBACK_GROUP]
    assert affinities[0]["clusterNames"] == ["m-fsn1-a", "m-fsn1-b", "m-hel1-a"]
    assert not any("fieldSelector" in a or "labelSelector" in a for a in affinities)


def test_without_preferred_regions_only_the_fallback_group_remains() -> None:
    affinities = render({})["spec"]["placement"]["clusterAffinities"]
    assert [a["affinityName"] for a in affinities] == [fleet.FALLBACK_GROUP]


def test_fallback_includes_member_regions_missing_from_the_region_list() -> None:
    policy = fleet.propagation_policy(tenant(), ["eu-fsn"], [member("x-hel1-a", "eu-hel"),
                                                              member("x-fsn1-a", "eu-fsn")])
    assert policy["spec"]["placement"]["clusterAffinities"][-1]["clusterNames"] == ["x-fsn1-a", "x-hel1-a"]


def test_a_region_without_members_is_no_placement_target() -> None:
    """An empty clusterNames term would select every cluster (Karmada's ClusterAffinity matches all when empty):
    a group naming only regions without members is refused instead."""
    with pytest.raises(ValueError, match=r"no member in region\(s\) us-ash"):
        fleet.propagation_policy(tenant(preferred_regions=["us-ash"]), list(REGIONS), MEMBERS[:3])


def test_spread_by_region_carries_the_mandatory_cluster_constraint() -> None:
    spread = render({"min_regions": 2})["spec"]["placement"]["spreadConstraints"]
    by_field = {c["spreadByField"]: c for c in spread}
    assert set(by_field) == {"region", "cluster"}
    assert by_field["region"] == {"spreadByField": "region", "minGroups": 2, "maxGroups": 3}
    # maxGroups 0 would select no cluster at all (spreadconstraint.selectBestClustersByRegion).
    assert by_field["cluster"] == {"spreadByField": "cluster", "minGroups": 2, "maxGroups": len(MEMBERS)}


def test_no_spread_when_disabled_or_ignored_by_static_weights() -> None:
    assert "spreadConstraints" not in render(PLACEMENTS["duplicated-no-spread"])["spec"]["placement"]
    # Divided + static weights: upstream shouldIgnoreSpreadConstraint() drops them, so none are rendered.
    assert "spreadConstraints" not in render(PLACEMENTS["divided-static"])["spec"]["placement"]
    assert "spreadConstraints" in render(PLACEMENTS["divided-dynamic"])["spec"]["placement"]


def test_min_regions_larger_than_the_fleet_is_refused() -> None:
    with pytest.raises(ValueError, match="minRegions is 4"):
        render({"min_regions": 4})


def test_preferred_group_smaller_than_min_regions_is_refused() -> None:
    with pytest.raises(ValueError, match="fewer than minRegions 2"):
        render({"preferred_regions": ["eu-fsn"], "min_regions": 2})


def test_unknown_preferred_region_is_refused() -> None:
    with pytest.raises(ValueError, match="ap-sin"):
        fleet.propagation_policy(tenant(preferred_regions=["ap-sin"]), list(REGIONS), MEMBERS)


def test_duplicated_scheduling() -> None:
    assert render({})["spec"]["placement"]["replicaScheduling"] == {"replicaSchedulingType": "Duplicated"}


def test_static_weights_target_clusters_by_name() -> None:
    scheduling = render(PLACEMENTS["divided-static"])["spec"]["placement"]["replicaScheduling"]
    assert scheduling == {
        "replicaSchedulingType": "Divided",
        "replicaDivisionPreference": "Weighted",
        "weightPreference": {"staticWeightList": [
            {"targetCluster": {"clusterNames": ["m-fsn1-a"]}, "weight": 3},
            {"targetCluster": {"clusterNames": ["m-hel1-a"]}, "weight": 1},
        ]},
    }


def test_static_without_weights_means_equal_weights() -> None:
    scheduling = render(PLACEMENTS["divided-static-equal"])["spec"]["placement"]["replicaScheduling"]
    assert scheduling == {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}


def test_dynamic_weights_follow_available_replicas() -> None:
    scheduling = render(PLACEMENTS["divided-dynamic"])["spec"]["placement"]["replicaScheduling"]
    assert scheduling["weightPreference"] == {"dynamicWeight": "AvailableReplicas"}


def test_toleration_for_the_failover_taint_only_when_configured() -> None:
    assert "clusterTolerations" not in render({})["spec"]["placement"]
    tolerations = render(PLACEMENTS["tolerating"])["spec"]["placement"]["clusterTolerations"]
    assert tolerations == [{"key": fleet.FAILOVER_TAINT_KEY, "operator": "Exists", "effect": "NoExecute",
                            "tolerationSeconds": 120}]
    zero = render(PLACEMENTS["tolerating-zero"])["spec"]["placement"]["clusterTolerations"]
    assert zero[0]["tolerationSeconds"] == 0


@pytest.mark.parametrize("mode", ["Gracefully", "Directly"])
def test_cluster_failover_purge_mode_comes_from_failover_config(mode: str) -> None:
    policy = render({}, FailoverConfig(purge_mode=mode))
    assert policy["spec"]["failover"] == {"cluster": {"purgeMode": mode}}


def test_purge_mode_is_explicit_by_default() -> None:
    assert render({})["spec"]["failover"]["cluster"]["purgeMode"] == "Gracefully"


def test_resource_selectors_stay_in_the_tenant_namespace() -> None:
    selectors = render({})["spec"]["resourceSelectors"]
    assert {s["namespace"] for s in selectors} == {"shop-ns"}
    assert {(s["apiVersion"], s["kind"]) for s in selectors} == set(fleet.TENANT_KINDS)
    assert all("name" not in s for s in selectors)


# ------------------------------------------------------------------- webhook-parity rule checks


def _broken(mutate: Any) -> dict[str, Any]:
    policy = copy.deepcopy(render({"min_regions": 2, "preferred_regions": ["eu-fsn", "eu-hel"]}))
    mutate(policy["spec"])
    return policy


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda s: s["placement"].__setitem__("clusterAffinity", {"clusterNames": ["x"]}), "co-exist"),
        (lambda s: s["placement"]["clusterAffinities"][0].__setitem__("affinityName", fleet.FALLBACK_GROUP),
         "unique"),
        (lambda s: s["placement"]["clusterAffinities"][0].__setitem__("affinityName", "x" * 33), "1-32"),
        (lambda s: s["placement"]["spreadConstraints"].pop(), "cluster constraint is mandatory"),
        (lambda s: s["placement"]["spreadConstraints"][0].__setitem__("maxGroups", 1), "minGroups <= maxGroups"),
        (lambda s: s["placement"].__setitem__("clusterTolerations", [{"key": "k", "operator": "Lt", "value": "1"}]),
         "Lt/Gt"),
        (lambda s: s["resourceSelectors"][0].__setitem__("namespace", "other"), "namespace"),
        (lambda s: s["placement"]["clusterAffinities"][0].__setitem__("fieldSelector", {"matchExpressions": [
            {"key": "region", "operator": "Exists"}]}), "unsupported"),
    ],
)
def test_rule_checks_catch_what_the_webhook_would_reject(mutate: Any, message: str) -> None:
    fleet.check_propagation_policy(render({"min_regions": 2, "preferred_regions": ["eu-fsn", "eu-hel"]}))
    with pytest.raises(ValueError, match=message):
        fleet.check_propagation_policy(_broken(mutate))


# --------------------------------------------------------------------------------- OverridePolicy


def test_override_policy_has_one_rule_per_region() -> None:
    policy = fleet.override_policy(tenant(), REGIONS, MEMBERS)
    validate_karmada(policy)
    rules = policy["spec"]["overrideRules"]
    assert [r["targetCluster"] for r in rules] == [
        {"clusterNames": sorted(m.name for m in MEMBERS if m.region == name)} for name in sorted(REGIONS)]
    assert [r["targetCluster"] for r in fleet.override_policy(tenant(), REGIONS, MEMBERS[:3])[
        "spec"]["overrideRules"]] == [{"clusterNames": ["m-fsn1-a", "m-fsn1-b"]}, {"clusterNames": ["m-hel1-a"]}]
    for rule, name in zip(rules, sorted(REGIONS), strict=True):
        assert rule["overriders"]["labelsOverrider"] == [
            {"operator": "add", "value": {"topology.kubernetes.io/region": name}}
        ]


def test_image_overrider_only_where_a_mirror_is_set() -> None:
    rules = {r["overriders"]["labelsOverrider"][0]["value"]["topology.kubernetes.io/region"]: r["overriders"]
             for r in fleet.override_policy(tenant(), REGIONS, MEMBERS)["spec"]["overrideRules"]}
    assert rules["eu-fsn"]["imageOverrider"] == [
        {"component": "Registry", "operator": "replace", "value": "registry-fsn1.example.com"}
    ]
    assert rules["eu-hel"]["imageOverrider"][0]["value"] == "registry-hel1.example.com:5000/mirror"
    assert "imageOverrider" not in rules["us-ash"]


def test_override_policy_is_namespaced_like_the_tenant() -> None:
    meta = fleet.override_policy(tenant(), REGIONS, MEMBERS)["metadata"]
    assert meta["namespace"] == "shop-ns"
    assert meta["name"] == "shop-regional"


# ----------------------------------------------------------------------- FederatedResourceQuota


def test_federated_resource_quota() -> None:
    quota = QuotaConfig(
        overall={"cpu": "40", "memory": "80Gi"},
        static_assignments=[StaticAssignment(cluster="m-fsn1-a", hard={"cpu": "20", "memory": "40Gi"}),
                            StaticAssignment(cluster="m-hel1-a", hard={"cpu": "500m"})],
    )
    frq = fleet.federated_resource_quota(TenantConfig(name="shop", namespace="shop-ns", quota=quota))
    validate_karmada(frq)
    assert frq["metadata"]["namespace"] == "shop-ns"
    assert frq["spec"] == {
        "overall": {"cpu": "40", "memory": "80Gi"},
        "staticAssignments": [
            {"clusterName": "m-fsn1-a", "hard": {"cpu": "20", "memory": "40Gi"}},
            {"clusterName": "m-hel1-a", "hard": {"cpu": "500m"}},
        ],
    }


def test_quota_without_assignments_has_only_overall() -> None:
    frq = fleet.federated_resource_quota(
        TenantConfig(name="t", namespace="t", quota=QuotaConfig(overall={"cpu": "4"})))
    validate_karmada(frq)
    assert frq["spec"] == {"overall": {"cpu": "4"}}


def test_quota_needs_a_quota_section() -> None:
    with pytest.raises(ValueError, match="no quota"):
        fleet.federated_resource_quota(tenant())


# --------------------------------------------------------------------------- ClusterTaintPolicy


def test_cluster_taint_policy_taints_no_execute_while_not_ready() -> None:
    policy = fleet.cluster_taint_policy()
    validate_karmada(policy)
    spec = policy["spec"]
    assert spec["taints"] == [{"key": fleet.FAILOVER_TAINT_KEY, "effect": "NoExecute"}]
    assert spec["addOnConditions"] == [{"conditionType": "Ready", "operator": "NotIn", "statusValues": ["True"]}]
    assert spec["removeOnConditions"] == [{"conditionType": "Ready", "operator": "In", "statusValues": ["True"]}]
    assert "targetClusters" not in spec  # every member
    assert "namespace" not in policy["metadata"]
    assert not fleet.FAILOVER_TAINT_KEY.startswith("cluster.karmada.io/")


def test_tenant_namespace_is_a_valid_namespace() -> None:
    ns = fleet.tenant_namespace(tenant())
    validate_kubernetes(ns, "1.34")
    assert ns["metadata"]["name"] == "shop-ns"


# ----------------------------------------------------------------------------------- dev stack


def test_dev_stack_fleet_documents_validate() -> None:
    config = load_stack()
    docs = [fleet.cluster_taint_policy()]
    for t in config.tenants:
        docs += [fleet.tenant_namespace(t),
                 fleet.propagation_policy(t, list(config.regions), config.members, config.failover),
                 fleet.override_policy(t, config.regions, config.members)]
        if t.quota is not None:
            docs.append(fleet.federated_resource_quota(t))
    for doc in docs:
        validate_any(doc, config.hub.kubernetes_minor if config.hub else "1.34")
    kinds = [d["kind"] for d in docs]
    assert kinds.count("PropagationPolicy") == len(config.tenants) >= 1
    assert "FederatedResourceQuota" in kinds


# ---------------------------------------------------------------------------- the validator itself


def test_validator_rejects_unknown_fields() -> None:
    policy = render({})
    policy["spec"]["placement"]["clusterAffinities"][0]["regionSelector"] = {}
    with pytest.raises(SchemaError, match="regionSelector"):
        validate_karmada(policy)


def test_validator_rejects_misspelt_top_level_field() -> None:
    policy = render({})
    policy["spec"]["propagateDependencies"] = True
    with pytest.raises(SchemaError, match="propagateDependencies"):
        validate_karmada(policy)


def test_validator_enforces_enums_and_lengths() -> None:
    policy = render({})
    policy["spec"]["failover"]["cluster"]["purgeMode"] = "Immediately"  # allowed for application only
    with pytest.raises(SchemaError, match="purgeMode"):
        validate_karmada(policy)
    policy = render({})
    policy["spec"]["placement"]["clusterAffinities"][0]["affinityName"] = "x" * 33
    with pytest.raises(SchemaError, match="too long"):
        validate_karmada(policy)


def test_validator_handles_int_or_string_quantities() -> None:
    frq = fleet.federated_resource_quota(TenantConfig(name="t", namespace="t", quota=QuotaConfig(overall={"cpu": "4"})))
    frq["spec"]["overall"]["cpu"] = 4
    validate_karmada(frq)
    frq["spec"]["overall"]["cpu"] = "four"
    with pytest.raises(SchemaError, match="does not match"):
        validate_karmada(frq)
    frq["spec"]["overall"]["cpu"] = 4.5
    with pytest.raises(SchemaError):
        validate_karmada(frq)


def test_validator_keeps_preserve_unknown_fields_open() -> None:
    policy = fleet.override_policy(tenant(), REGIONS, MEMBERS)
    policy["spec"]["overrideRules"][0]["overriders"]["plaintext"] = [
        {"path": "/spec/replicas", "operator": "replace", "value": {"any": ["shape", 1]}}
    ]
    validate_karmada(policy)


def test_validator_checks_scope_and_metadata() -> None:
    policy = render({})
    del policy["metadata"]["namespace"]
    with pytest.raises(SchemaError, match="namespaced"):
        validate_karmada(policy)
    taint = fleet.cluster_taint_policy()
    taint["metadata"]["namespace"] = "default"
    with pytest.raises(SchemaError, match="cluster-scoped"):
        validate_karmada(taint)
    policy = render({})
    policy["metadata"]["name"] = "Shop_Policy"
    with pytest.raises(SchemaError, match="DNS-1123"):
        validate_karmada(policy)


def test_validator_refuses_kinds_without_a_crd() -> None:
    with pytest.raises(SchemaError, match="no served CRD"):
        validate_karmada({"apiVersion": "policy.karmada.io/v1beta9", "kind": "PropagationPolicy",
                          "metadata": {"name": "x", "namespace": "x"}, "spec": {}})


def test_crds_dir_can_be_overridden(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KARMADA_HUB_CRDS_DIR", str(tmp_path))
    with pytest.raises(SchemaError, match="no served CRD"):
        validate_karmada(fleet.cluster_taint_policy())
