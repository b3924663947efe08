"""Karmada fleet policy documents: tenant namespace, PropagationPolicy, OverridePolicy, quota, failover taints.

Everything here is applied to karmada-apiserver. Field names follow `pkg/apis/policy/v1alpha1` at Karmada v1.18.2
and the rules of `pkg/util/validation/validation.go` and the policy webhooks are enforced here too, so a bad
combination fails at render time (in `hubctl plan` and tests) instead of at `pulumi up`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from components.config import FailoverConfig, FleetConfig, MemberConfig, RegionConfig, TenantConfig

POLICY_API = "policy.karmada.io/v1alpha1"

FAILOVER_TAINT_KEY = "fleet.karmada-hub.io/not-ready"
"""The NoExecute taint `cluster_taint_policy()` puts on a member whose Ready condition is not True.

A project key rather than `cluster.karmada.io/not-ready`: that key belongs to the cluster controller, which adds
and removes it (NoSchedule) itself; sharing it would make two controllers fight over one taint."""

TAINT_POLICY_NAME = "fleet-not-ready-noexecute"
TENANT_LABEL = "fleet.karmada-hub.io/tenant"
REGION_LABEL = "topology.kubernetes.io/region"

PREFERRED_GROUP = "preferred"
FALLBACK_GROUP = "fleet-fallback"
"""affinityName of the last clusterAffinities group, which always spans every region of the fleet."""

TENANT_KINDS: tuple[tuple[str, str], ...] = (
    ("apps/v1", "Deployment"),
    ("apps/v1", "StatefulSet"),
    ("v1", "Service"),
    ("networking.k8s.io/v1", "Ingress"),
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
)
"""What a tenant's PropagationPolicy selects in its namespace: the workloads, how they are reached, and their
configuration. Left out on purpose:

- PersistentVolumeClaims: data does not move with a failover; StatefulSet claim templates make them per cluster,
  and claims a Deployment references follow it via `propagateDeps`;
- ServiceAccounts: every namespace has a `default` one on both sides (selecting all would conflict on each
  member); non-default accounts a pod template names follow via `propagateDeps`;
- HorizontalPodAutoscalers and PodDisruptionBudgets: their numbers are per cluster and would be wrong under
  `Divided` scheduling (FederatedHPA is the multi-cluster form); tenants add their own policy for those.
"""


def _affinity_region(regions: Iterable[str]) -> dict[str, Any]:
    return {"fieldSelector": {"matchExpressions": [{"key": "region", "operator": "In", "values": list(regions)}]}}


def _resource_selectors(namespace: str) -> list[dict[str, Any]]:
    return [{"apiVersion": api, "kind": kind, "namespace": namespace} for api, kind in TENANT_KINDS]


def _meta(name: str, namespace: str | None, tenant: TenantConfig | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if tenant is not None:
        meta["labels"] = {TENANT_LABEL: tenant.name}
    return meta


def tenant_namespace(tenant: TenantConfig) -> dict[str, Any]:
    """The tenant's namespace in karmada-apiserver; Karmada's namespace-sync controller creates it on every member."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(tenant.namespace, None, tenant)}


def _fleet_regions(regions: Iterable[str], members: Iterable[MemberConfig]) -> list[str]:
    return sorted(set(regions) | {m.region for m in members})


def _replica_scheduling(tenant: TenantConfig) -> dict[str, Any]:
    placement = tenant.placement
    if placement.replica_scheduling == "Duplicated":
        return {"replicaSchedulingType": "Duplicated"}
    scheduling: dict[str, Any] = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}
    if placement.weighting == "dynamic":
        scheduling["weightPreference"] = {"dynamicWeight": "AvailableReplicas"}
    elif placement.weights:
        scheduling["weightPreference"] = {
            "staticWeightList": [
                {"targetCluster": {"clusterNames": [cluster]}, "weight": weight}
                for cluster, weight in sorted(placement.weights.items())
            ]
        }
    # Divided + static without weights: Weighted with no weightPreference means equal weights upstream.
    return scheduling


def _uses_static_weights(tenant: TenantConfig) -> bool:
    """Upstream `shouldIgnoreSpreadConstraint`: Divided+Weighted without dynamicWeight ignores spread constraints."""
    placement = tenant.placement
    return placement.replica_scheduling == "Divided" and placement.weighting == "static"


def _spread_constraints(tenant: TenantConfig, fleet_regions: list[str], members: list[MemberConfig]) -> list[dict]:
    """Spread by region with the mandatory `cluster` constraint; both need maxGroups.

    The scheduler selects `min(clusters, cluster.maxGroups)` clusters and searches region combinations up to
    `region.maxGroups` (`pkg/scheduler/core/spreadconstraint`): an omitted maxGroups (0) selects nothing, so
    both are set to the whole fleet and only minGroups restricts.
    """
    placement = tenant.placement
    if not placement.spread_by_region or _uses_static_weights(tenant):
        return []
    min_regions = placement.min_regions
    if min_regions > len(fleet_regions):
        raise ValueError(
            f"tenant {tenant.name}: placement.minRegions is {min_regions} but the fleet has only "
            f"{len(fleet_regions)} region(s); lower minRegions or add regions"
        )
    if placement.preferred_regions and len(placement.preferred_regions) < min_regions:
        raise ValueError(
            f"tenant {tenant.name}: placement.preferredRegions lists {len(placement.preferred_regions)} region(s), "
            f"fewer than minRegions {min_regions}, so that group could never be used; list more regions"
        )
    max_clusters = max(len(members), min_regions)
    return [
        {"spreadByField": "region", "minGroups": min_regions, "maxGroups": len(fleet_regions)},
        {"spreadByField": "cluster", "minGroups": min_regions, "maxGroups": max_clusters},
    ]


def propagation_policy(
    tenant: TenantConfig,
    regions: list[str],
    members: list[MemberConfig],
    failover: FailoverConfig | None = None,
) -> dict[str, Any]:
    """The tenant's PropagationPolicy: what to propagate, where, how to split replicas, and how to fail over.

    `regions` is every region of the fleet (e.g. `list(config.regions)`); member regions are added to it.

    Placement is an ordered list of affinity groups: the tenant's preferred regions first (if any), then
    always a fallback group spanning every region. Karmada issue #7455: when a reschedule after eviction
    finds no cluster, the binding ends with no clusters and graceful eviction purges the old copy, i.e. the
    workload is silently deleted. A last group covering the whole fleet is the cheapest guard against that.
    It cannot help when spread constraints make *every* group infeasible (e.g. minRegions 2 with one of two
    regions down): minRegions is a hard rule in Karmada.
    """
    failover = failover or FailoverConfig()
    placement_cfg = tenant.placement
    fleet_regions = _fleet_regions(regions, members)
    if not fleet_regions:
        raise ValueError(f"tenant {tenant.name}: the fleet has no regions, so there is nowhere to place it")
    unknown = sorted(set(placement_cfg.preferred_regions) - set(fleet_regions))
    if unknown:
        raise ValueError(f"tenant {tenant.name}: preferredRegions names unknown region(s) {', '.join(unknown)}")

    affinities: list[dict[str, Any]] = []
    if placement_cfg.preferred_regions:
        affinities.append({"affinityName": PREFERRED_GROUP, **_affinity_region(placement_cfg.preferred_regions)})
    affinities.append({"affinityName": FALLBACK_GROUP, **_affinity_region(fleet_regions)})

    placement: dict[str, Any] = {
        "clusterAffinities": affinities,
        "replicaScheduling": _replica_scheduling(tenant),
    }
    spread = _spread_constraints(tenant, fleet_regions, members)
    if spread:
        placement["spreadConstraints"] = spread
    if placement_cfg.toleration_seconds is not None:
        # Exists, not Equal: the policy's taint has no value. Never Lt/Gt (rejected by the webhook).
        placement["clusterTolerations"] = [
            {
                "key": FAILOVER_TAINT_KEY,
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": placement_cfg.toleration_seconds,
            }
        ]

    spec: dict[str, Any] = {
        "resourceSelectors": _resource_selectors(tenant.namespace),
        # Brings along what pod templates reference but the selectors leave out (non-default
        # ServiceAccounts, PVC objects); harmless for the ConfigMaps/Secrets already selected.
        "propagateDeps": True,
        "placement": placement,
        # Explicit, so the controller-manager's --no-execute-taint-eviction-purge-mode default never decides.
        "failover": {"cluster": {"purgeMode": failover.purge_mode}},
    }
    policy = {
        "apiVersion": POLICY_API,
        "kind": "PropagationPolicy",
        "metadata": _meta(tenant.name, tenant.namespace, tenant),
        "spec": spec,
    }
    check_propagation_policy(policy)
    return policy


def check_propagation_policy(policy: Mapping[str, Any]) -> None:
    """The webhook rules (`ValidatePropagationSpec`, v1.18.2) the CRD schema cannot express; ValueError if broken."""
    spec = policy["spec"]
    namespace = policy["metadata"].get("namespace")
    placement = spec.get("placement") or {}
    problems: list[str] = []
    for selector in spec.get("resourceSelectors") or []:
        if selector.get("namespace") != namespace:
            problems.append("resourceSelectors: namespace must equal the policy's namespace")
    if "clusterAffinity" in placement and "clusterAffinities" in placement:
        problems.append("clusterAffinities cannot co-exist with clusterAffinity")
    names = [a.get("affinityName", "") for a in placement.get("clusterAffinities") or []]
    if len(set(names)) != len(names):
        problems.append("clusterAffinities: affinityName must be unique")
    for name in names:
        if not 1 <= len(name) <= 32:
            problems.append(f"clusterAffinities: affinityName '{name}' must be 1-32 characters")
    for term in placement.get("clusterAffinities") or []:
        for expr in (term.get("fieldSelector") or {}).get("matchExpressions") or []:
            if expr["key"] not in ("provider", "region", "zone") or expr["operator"] not in ("In", "NotIn"):
                problems.append(f"fieldSelector: unsupported {expr['key']} {expr['operator']}")
        if "overflowAffinities" in term:
            problems.append("overflowAffinities is not rendered by this program")
    by_field: list[str] = []
    for constraint in placement.get("spreadConstraints") or []:
        lo, hi = constraint.get("minGroups", 0), constraint.get("maxGroups", 0)
        if lo < 0 or hi < 0 or (hi > 0 and hi < lo):
            problems.append(f"spreadConstraints: need 0 <= minGroups <= maxGroups (got {lo}, {hi})")
        if "spreadByField" in constraint:
            by_field.append(constraint["spreadByField"])
    if len(set(by_field)) != len(by_field):
        problems.append("spreadConstraints: one constraint per spreadByField")
    if by_field and "cluster" not in by_field:
        problems.append("spreadConstraints: the cluster constraint is mandatory when spreadByField is used")
    for toleration in placement.get("clusterTolerations") or []:
        if toleration.get("operator") in ("Lt", "Gt"):
            problems.append("clusterTolerations: Lt/Gt operators are not supported")
    if (spec.get("failover") or {}).get("application") and not spec.get("propagateDeps"):
        problems.append("application failover needs propagateDeps: true")
    if problems:
        raise ValueError(f"PropagationPolicy {policy['metadata']['name']}: " + "; ".join(problems))


def override_policy(tenant: TenantConfig, regions: Mapping[str, RegionConfig]) -> dict[str, Any]:
    """Per-region overrides: pull images from the region's registry mirror and label objects with the region.

    One rule per region, targeted by the Cluster's `spec.region` (fieldSelector), so a member joins its region's
    overrides by being in the region. Regions without a mirror only get the label.
    """
    rules: list[dict[str, Any]] = []
    for name in sorted(regions):
        region = regions[name]
        overriders: dict[str, Any] = {}
        if region.registry_mirror:
            # Without a predicate, image paths are found automatically for Pod/ReplicaSet/Deployment/DaemonSet/
            # StatefulSet/Job; other kinds are untouched.
            overriders["imageOverrider"] = [
                {"component": "Registry", "operator": "replace", "value": region.registry_mirror}
            ]
        overriders["labelsOverrider"] = [{"operator": "add", "value": {REGION_LABEL: name}}]
        rules.append({"targetCluster": _affinity_region([name]), "overriders": overriders})
    if not rules:
        raise ValueError(f"tenant {tenant.name}: no regions to override for")
    return {
        "apiVersion": POLICY_API,
        "kind": "OverridePolicy",
        "metadata": _meta(f"{tenant.name}-regional", tenant.namespace, tenant),
        "spec": {"resourceSelectors": _resource_selectors(tenant.namespace), "overrideRules": rules},
    }


def federated_resource_quota(tenant: TenantConfig) -> dict[str, Any]:
    """The tenant's FederatedResourceQuota: the fleet-wide total plus a ResourceQuota per listed member.

    Since v1.14 only the clusters in staticAssignments get a ResourceQuota; the overall limit is enforced
    at scheduling time only when the FederatedQuotaEnforcement gate is on (controller-manager and webhook).
    Raises ValueError if the tenant declares no quota (callers check `tenant.quota` first).
    """
    quota = tenant.quota
    if quota is None:
        raise ValueError(f"tenant {tenant.name} has no quota section")
    spec: dict[str, Any] = {"overall": dict(quota.overall)}
    if quota.static_assignments:
        spec["staticAssignments"] = [{"clusterName": a.cluster, "hard": dict(a.hard)} for a in quota.static_assignments]
    return {
        "apiVersion": POLICY_API,
        "kind": "FederatedResourceQuota",
        "metadata": _meta(tenant.name, tenant.namespace, tenant),
        "spec": spec,
    }


def tenant_policies(config: FleetConfig) -> list[dict[str, Any]]:
    """Every tenant's PropagationPolicy, OverridePolicy and (with a quota) FederatedResourceQuota, as a stack
    applies them; their namespaces belong to the hub (`tenant_namespace`)."""
    out: list[dict[str, Any]] = []
    for tenant in config.tenants:
        out.append(propagation_policy(tenant, list(config.regions), list(config.members), config.failover))
        out.append(override_policy(tenant, config.regions))
        if tenant.quota is not None:
            out.append(federated_resource_quota(tenant))
    return out


def cluster_taint_policy() -> dict[str, Any]:
    """NoExecute taint while a member's Ready condition is not True: what makes Karmada (v1.14+) move workloads.

    `NotIn [True]` catches both False (Push probe failed) and Unknown (Pull lease lost). A member that has
    never reported Ready has no condition and is not matched (conditions must exist to match), so joining
    members are not tainted. No NoSchedule sibling: the cluster controller already adds
    `cluster.karmada.io/not-ready|unreachable:NoSchedule` at once, and the scheduler's taint filter treats
    NoExecute as unschedulable too; a second taint would only be one more thing to tolerate.
    Needs the Failover gate + `--enable-no-execute-taint-eviction` on controller-manager and
    `--allow-no-execute-taint-policy` on the webhook.
    """
    return {
        "apiVersion": POLICY_API,
        "kind": "ClusterTaintPolicy",
        "metadata": {"name": TAINT_POLICY_NAME},
        "spec": {
            "addOnConditions": [{"conditionType": "Ready", "operator": "NotIn", "statusValues": ["True"]}],
            "removeOnConditions": [{"conditionType": "Ready", "operator": "In", "statusValues": ["True"]}],
            "taints": [{"key": FAILOVER_TAINT_KEY, "effect": "NoExecute"}],
        },
    }
