"""Karmada fleet policy documents: tenant namespace, PropagationPolicy, OverridePolicy, quota, failover taints.

Everything here is applied to karmada-apiserver. Field names follow `pkg/apis/policy/v1alpha1` at Karmada v1.18.2
and the rules of `pkg/util/validation/validation.go` and the policy webhooks are enforced here too, so a bad
combination fails at render time (in `hubctl plan` and tests) instead of at `pulumi up`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from components.config import FailoverConfig, FleetConfig, MemberConfig, PriorityClassConfig, RegionConfig, TenantConfig

POLICY_API = "policy.karmada.io/v1alpha1"

FAILOVER_TAINT_KEY = "fleet.karmada-hub.io/not-ready"
"""The NoExecute taint `cluster_taint_policy()` puts on a member whose Ready condition is not True.

A project key rather than `cluster.karmada.io/not-ready`: that key belongs to the cluster controller, which adds
and removes it (NoSchedule) itself; sharing it would make two controllers fight over one taint."""

TAINT_POLICY_NAME = "fleet-not-ready-noexecute"
TENANT_LABEL = "fleet.karmada-hub.io/tenant"
REGION_LABEL = "topology.kubernetes.io/region"

STATEFUL_ANNOTATION = "fleet.karmada-hub.io/data"
"""`stateful` on a stateful tenant's policies (read by the policy pack's stateful-failover rule)."""
RESTORE_ANNOTATION = "fleet.karmada-hub.io/restore-from"
"""`<kind>/<name>` of the restore source of a stateful tenant with a state story (Karmada never reads it)."""
GROUPS_ANNOTATION = "fleet.karmada-hub.io/workload-groups"
"""JSON `{"affinity": {value: members}, "antiAffinity": {...}}`: the declared workload groups, for the what-if
table and the policy pack (Karmada never reads it)."""

CRITICAL_SUFFIX = "-critical"
CRITICAL_POLICY_PRIORITY = 100
"""`spec.priority` of a tenant's critical policy: above the tenant-wide policy's 0, so with `preemption: Always`
(gate PropagationPolicyPreemption) it takes the named templates over (pkg/detector/preemption.go: strictly
higher priority wins)."""

PREFERRED_GROUP = "preferred"
FALLBACK_GROUP = "fleet-fallback"
"""Default affinityName of the last clusterAffinities group, which always spans every region of the fleet
(`placement.fallbackGroup` renames it)."""

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


WORKLOAD_KINDS = TENANT_KINDS[:2]
SUPPORTING_KINDS = TENANT_KINDS[2:]
SUPPORTING_SUFFIX = "-shared"


def splits_supporting_objects(tenant: TenantConfig) -> bool:
    """Whether the tenant's Services, Ingresses, ConfigMaps and Secrets need a policy of their own.

    They are not workloads, so the scheduler places them Duplicated, on the preferred group only (overflow groups
    apply to workloads only, clusteraffinity plugin) and within the spread constraints like any binding. With
    overflow or maxClusters that would leave a workload on a member without its Service or Ingress, so those
    tenants get a second policy that puts them on every member of the tenant's groups."""
    return bool(tenant.placement.overflow) or tenant.placement.max_clusters is not None


def _affinity_region(regions: Iterable[str], members: Iterable[MemberConfig]) -> dict[str, Any]:
    """The members of `regions`, by name: a Cluster's name is the one thing about it nobody but its creator (the
    hub) sets. Not a fieldSelector on `spec.region`: at Karmada v1.18.2 a Pull agent can rewrite its own Cluster's
    spec through the status subresource (pkg/registry/cluster/strategy.go `StatusStrategy.PrepareForUpdate` keeps
    whatever the update carries), so a compromised member could claim another region and receive its tenants'
    objects (security review 2, C2 path B)."""
    wanted = list(regions)
    names = sorted(m.name for m in members if m.region in wanted)
    if not names:
        raise ValueError(f"no member in region(s) {', '.join(wanted)} to place on; add a member there or leave the "
                         "region out")
    return {"clusterNames": names}


def _affinity_clusters(clusters: Iterable[str]) -> dict[str, Any]:
    return {"clusterNames": list(clusters)}


def _resource_selectors(namespace: str, kinds: Sequence[tuple[str, str]] = TENANT_KINDS) -> list[dict[str, Any]]:
    return [{"apiVersion": api, "kind": kind, "namespace": namespace} for api, kind in kinds]


def _meta(name: str, namespace: str | None, tenant: TenantConfig | None = None,
          annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    if tenant is not None:
        meta["labels"] = {TENANT_LABEL: tenant.name}
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta


def _policy_annotations(tenant: TenantConfig) -> dict[str, str]:
    out: dict[str, str] = {}
    if tenant.stateful:
        out[STATEFUL_ANNOTATION] = "stateful"
    if tenant.state is not None:
        out[RESTORE_ANNOTATION] = f"{tenant.state.restore_from.kind}/{tenant.state.restore_from.name}"
    wa = tenant.placement.workload_affinity
    if wa is not None:
        groups: dict[str, dict[str, int]] = {}
        if wa.affinity_groups:
            groups["affinity"] = dict(sorted(wa.affinity_groups.items()))
        if wa.anti_affinity_groups:
            groups["antiAffinity"] = dict(sorted(wa.anti_affinity_groups.items()))
        out[GROUPS_ANNOTATION] = json.dumps(groups, sort_keys=True, separators=(",", ":"))
    return out


def tenant_namespace(tenant: TenantConfig) -> dict[str, Any]:
    """The tenant's namespace in karmada-apiserver; Karmada's namespace-sync controller creates it on every member."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(tenant.namespace, None, tenant)}


def _fleet_regions(regions: Iterable[str], members: Iterable[MemberConfig]) -> list[str]:
    return sorted(set(regions) | {m.region for m in members})


def _replica_scheduling(tenant: TenantConfig) -> dict[str, Any]:
    placement = tenant.placement
    if placement.replica_scheduling == "Duplicated":
        return {"replicaSchedulingType": "Duplicated"}
    if placement.weighting == "aggregated":
        return {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}
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
    if _uses_static_weights(tenant):
        return []
    if not placement.spread_by_region:
        if placement.max_clusters is None:
            return []
        # Only a cluster constraint: the scheduler takes the first min(feasible, maxGroups) clusters, ordered by
        # overflow tier, locality score, available replicas, name (spreadconstraint.selectBestClustersByCluster).
        return [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": placement.max_clusters}]
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
    max_clusters = placement.max_clusters or max(len(members), min_regions)
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

    spec = _propagation_spec(tenant, fleet_regions, members, failover)
    kinds = WORKLOAD_KINDS if splits_supporting_objects(tenant) else TENANT_KINDS
    spec = {"resourceSelectors": _resource_selectors(tenant.namespace, kinds), **spec}
    if tenant.priority_class is not None:
        spec["schedulePriority"] = {"priorityClassSource": "KubePriorityClass",
                                    "priorityClassName": tenant.priority_class}
    policy = {
        "apiVersion": POLICY_API,
        "kind": "PropagationPolicy",
        "metadata": _meta(tenant.name, tenant.namespace, tenant, _policy_annotations(tenant)),
        "spec": spec,
    }
    check_propagation_policy(policy)
    return policy


def supporting_policy(
    tenant: TenantConfig,
    regions: list[str],
    members: list[MemberConfig],
    failover: FailoverConfig | None = None,
) -> dict[str, Any] | None:
    """Services, Ingresses, ConfigMaps and Secrets of a tenant whose workloads use overflow or maxClusters: a copy
    on every member of every region the tenant's groups reach (then the fleet-wide fallback), no spread, the same
    failover tolerations. None when the tenant-wide policy carries them itself (`splits_supporting_objects`)."""
    if not splits_supporting_objects(tenant):
        return None
    failover = failover or FailoverConfig()
    fleet_regions = _fleet_regions(regions, members)
    placement_cfg = tenant.placement
    by_name = {m.name: m.region for m in members}
    reach = list(dict.fromkeys([
        *placement_cfg.preferred_regions,
        *(r for g in placement_cfg.overflow for r in g.regions),
        *(by_name[c] for g in placement_cfg.overflow for c in g.clusters if c in by_name),
    ]))
    terms: list[dict[str, Any]] = []
    if reach:
        terms.append({"affinityName": PREFERRED_GROUP, **_affinity_region(reach, members)})
    terms.append({"affinityName": placement_cfg.fallback_group, **_affinity_region(fleet_regions, members)})
    placement: dict[str, Any] = {"clusterAffinities": terms, "replicaScheduling": {"replicaSchedulingType":
                                                                                   "Duplicated"}}
    tolerations = _tolerations(tenant)
    if tolerations:
        placement["clusterTolerations"] = tolerations
    policy = {
        "apiVersion": POLICY_API,
        "kind": "PropagationPolicy",
        "metadata": _meta(tenant.name + SUPPORTING_SUFFIX, tenant.namespace, tenant),
        "spec": {
            "resourceSelectors": _resource_selectors(tenant.namespace, SUPPORTING_KINDS),
            "propagateDeps": True,
            "placement": placement,
            "failover": {"cluster": {"purgeMode": failover.purge_mode}},
        },
    }
    check_propagation_policy(policy)
    return policy


def critical_policy(
    tenant: TenantConfig,
    regions: list[str],
    members: list[MemberConfig],
    failover: FailoverConfig | None = None,
) -> dict[str, Any] | None:
    """The tenant's named critical workloads under their own policy: same placement and failover, a higher
    schedule priority, and `preemption: Always` with `priority` above the tenant-wide policy's, so it takes those
    templates over even though the tenant-wide policy claimed them first.

    Upstream at v1.18.2: a claimed template stays with its policy unless a policy with strictly higher `priority`
    and `preemption: Always` selects it by name while the controller-manager runs PropagationPolicyPreemption
    (pkg/detector/preemption.go); the webhook refuses `preemption: Always` with a selector without a name
    (validation.go validateResourceSelectorsIfPreemptionEnabled). Schedule priority only orders the scheduler's
    queue (PriorityBasedScheduling); nothing is evicted for it. None when the tenant declares no critical workloads.
    """
    if tenant.critical is None:
        return None
    failover = failover or FailoverConfig()
    fleet_regions = _fleet_regions(regions, members)
    spec = _propagation_spec(tenant, fleet_regions, members, failover)
    selectors = [{"apiVersion": "apps/v1", "kind": w.kind, "namespace": tenant.namespace, "name": w.name}
                 for w in tenant.critical.workloads]
    spec = {
        "resourceSelectors": selectors,
        "priority": CRITICAL_POLICY_PRIORITY,
        "preemption": "Always",
        **spec,
        "schedulePriority": {"priorityClassSource": "KubePriorityClass",
                             "priorityClassName": tenant.critical.priority_class},
    }
    policy = {
        "apiVersion": POLICY_API,
        "kind": "PropagationPolicy",
        "metadata": _meta(tenant.name + CRITICAL_SUFFIX, tenant.namespace, tenant, _policy_annotations(tenant)),
        "spec": spec,
    }
    check_propagation_policy(policy)
    return policy


def _affinity_terms(tenant: TenantConfig, fleet_regions: list[str], members: list[MemberConfig]
                    ) -> list[dict[str, Any]]:
    """The preferred group (with its overflow groups, in order) if any, then always the fleet-wide fallback.

    Terms are tried one at a time from the one the binding was last scheduled with
    (`status.schedulerObservingAffinityName`) and only forwards (pkg/scheduler/scheduler.go scheduleResourceBinding
    at v1.18.2): once a binding moved to the fallback group it stays there. Overflow groups sit inside the
    preferred term, so spilling never switches terms and replicas can be pulled back into the preferred group."""
    placement = tenant.placement
    terms: list[dict[str, Any]] = []
    if placement.preferred_regions:
        term: dict[str, Any] = {"affinityName": PREFERRED_GROUP,
                                **_affinity_region(placement.preferred_regions, members)}
        if placement.overflow:
            # Never `overflowAffinities: []`: upstream checks `!= nil`, so an empty list counts as overflow.
            term["overflowAffinities"] = [
                {"affinityName": g.name,
                 **(_affinity_region(g.regions, members) if g.regions else _affinity_clusters(g.clusters))}
                for g in placement.overflow
            ]
        terms.append(term)
    terms.append({"affinityName": placement.fallback_group, **_affinity_region(fleet_regions, members)})
    return terms


def _propagation_spec(tenant: TenantConfig, fleet_regions: list[str], members: list[MemberConfig],
                      failover: FailoverConfig) -> dict[str, Any]:
    """Everything of a tenant policy's spec but what it selects: placement, dependencies and failover."""
    placement_cfg = tenant.placement
    placement: dict[str, Any] = {
        "clusterAffinities": _affinity_terms(tenant, fleet_regions, members),
        "replicaScheduling": _replica_scheduling(tenant),
    }
    spread = _spread_constraints(tenant, fleet_regions, members)
    if spread:
        placement["spreadConstraints"] = spread
    wa = placement_cfg.workload_affinity
    if wa is not None:
        placement["workloadAffinity"] = {
            **({"affinity": {"groupByLabelKey": wa.affinity_label}} if wa.affinity_label else {}),
            **({"antiAffinity": {"groupByLabelKey": wa.anti_affinity_label}} if wa.anti_affinity_label else {}),
        }
    tolerations = _tolerations(tenant)
    if tolerations:
        placement["clusterTolerations"] = tolerations
    spec: dict[str, Any] = {
        # Brings along what pod templates reference but the selectors leave out (non-default
        # ServiceAccounts, PVC objects); harmless for the ConfigMaps/Secrets already selected.
        # Also required by application failover (validation.go ValidatePropagationSpec).
        "propagateDeps": True,
        "placement": placement,
        "failover": _failover(tenant, failover),
    }
    return spec


def _tolerations(tenant: TenantConfig) -> list[dict[str, Any]]:
    if not tenant.fails_over:
        # No tolerationSeconds: the taint manager treats it as tolerated forever and never evicts
        # (taint_manager.go enqueueBinding, "minTolerationTime < 0 means indefinite toleration").
        return [{"key": FAILOVER_TAINT_KEY, "operator": "Exists", "effect": "NoExecute"}]
    if tenant.placement.toleration_seconds is not None:
        # Exists, not Equal: the policy's taint has no value. Never Lt/Gt (rejected by the webhook).
        return [{"key": FAILOVER_TAINT_KEY, "operator": "Exists", "effect": "NoExecute",
                 "tolerationSeconds": tenant.placement.toleration_seconds}]
    return []


def _state_preservation(tenant: TenantConfig) -> dict[str, Any]:
    assert tenant.state is not None
    return {"rules": [{"aliasLabelName": r.label, "jsonPath": r.json_path} for r in tenant.state.preserve]}


def _failover(tenant: TenantConfig, failover: FailoverConfig) -> dict[str, Any]:
    """Cluster failover always has an explicit purge mode, so the controller-manager's
    --no-execute-taint-eviction-purge-mode default never decides. A state story forces Directly: the preserved
    labels are injected only for `Directly` eviction tasks (controllers/binding/common.go at v1.18.2)."""
    cluster: dict[str, Any] = {"purgeMode": "Directly" if tenant.state is not None else failover.purge_mode}
    if tenant.state is not None:
        cluster["statePreservation"] = _state_preservation(tenant)
    out: dict[str, Any] = {"cluster": cluster}
    app = tenant.application_failover
    if app is not None:
        application: dict[str, Any] = {
            "decisionConditions": {"tolerationSeconds": app.toleration_seconds},
            "purgeMode": app.purge_mode,
        }
        if app.purge_mode == "Gracefully":
            # Explicit 600 (the mutating webhook's default), so the stored object equals the rendered one.
            application["gracePeriodSeconds"] = app.grace_period_seconds or 600
        if tenant.state is not None:
            application["statePreservation"] = _state_preservation(tenant)
        out["application"] = application
    return out


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
        elif not _is_label_key(name):
            problems.append(f"clusterAffinities: affinityName '{name}' must be a label key")
    overflow_ok = _overflow_allowed(placement.get("replicaScheduling"))
    for term in placement.get("clusterAffinities") or []:
        for expr in _field_expressions(term):
            if expr["key"] not in ("provider", "region", "zone") or expr["operator"] not in ("In", "NotIn"):
                problems.append(f"fieldSelector: unsupported {expr['key']} {expr['operator']}")
        if "overflowAffinities" in term:
            overflow = term["overflowAffinities"]
            if not overflow_ok:
                problems.append("overflowAffinities can only be used together with dynamic weight or aggregated "
                                "scheduling")
            if not any(term.get(k) for k in ("clusterNames", "labelSelector", "fieldSelector", "exclude")):
                problems.append("overflowAffinities can only be used together with the inline ClusterAffinity")
            seen = {term.get("affinityName")}
            for group in overflow:
                name = group.get("affinityName", "")
                if not _is_label_key(name) or len(name) > 32:
                    problems.append(f"overflowAffinities: affinityName '{name}' must be a label key of <= 32 chars")
                if name in seen:
                    problems.append(f"overflowAffinities: '{name}' must be unique and differ from the group's name")
                seen.add(name)
                for expr in _field_expressions(group):
                    if expr["key"] not in ("provider", "region", "zone") or expr["operator"] not in ("In", "NotIn"):
                        problems.append(f"fieldSelector: unsupported {expr['key']} {expr['operator']}")
    workload = placement.get("workloadAffinity") or {}
    keys = [(workload.get(t) or {}).get("groupByLabelKey") for t in ("affinity", "antiAffinity")]
    for key in keys:
        if key is not None and not _is_label_key(key):
            problems.append(f"workloadAffinity: groupByLabelKey '{key}' must be a label key")
    if keys[0] is not None and keys[0] == keys[1]:
        problems.append("workloadAffinity: affinity and antiAffinity must not use the same groupByLabelKey")
    if spec.get("preemption") == "Always" and any(not s.get("name") for s in spec.get("resourceSelectors") or []):
        problems.append("preemption Always needs a name on every resource selector")
    priority = spec.get("schedulePriority")
    if priority is not None and priority.get("priorityClassSource") != "KubePriorityClass":
        problems.append("schedulePriority: only KubePriorityClass is supported at v1.18.2")
    failover_spec = spec.get("failover") or {}
    app = failover_spec.get("application")
    if app is not None:
        graceful = app.get("purgeMode", "Gracefully") in ("Gracefully", "Graciously")
        grace = app.get("gracePeriodSeconds")
        if grace is not None and not graceful:
            problems.append("application failover: gracePeriodSeconds only takes effect when purgeMode is "
                            "Gracefully")
        if graceful and grace is None:
            problems.append("application failover: gracePeriodSeconds is required with purgeMode Gracefully")
        if grace is not None and grace <= 0:
            problems.append("application failover: gracePeriodSeconds must be > 0")
        if (app.get("decisionConditions") or {}).get("tolerationSeconds", 0) < 0:
            problems.append("application failover: tolerationSeconds must be >= 0")
    for where in ("cluster", "application"):
        for rule in ((failover_spec.get(where) or {}).get("statePreservation") or {}).get("rules") or []:
            if not _is_label_key(rule.get("aliasLabelName", "")):
                problems.append(f"{where} statePreservation: aliasLabelName '{rule.get('aliasLabelName')}' must be "
                                "a qualified label name")
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


_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _is_label_key(key: str) -> bool:
    """`content.IsLabelKey` / `ValidateLabelName`: `[prefix/]name`, prefix a DNS subdomain <= 253."""
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return False
    return bool(_LABEL_NAME.match(name))


def _field_expressions(affinity: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list((affinity.get("fieldSelector") or {}).get("matchExpressions") or [])


def _overflow_allowed(scheduling: Mapping[str, Any] | None) -> bool:
    """`IsOverflowSchedulingAllowed` (pkg/util/policy.go): Divided + Aggregated, or Divided + dynamic weights."""
    if not scheduling or scheduling.get("replicaSchedulingType", "Divided") != "Divided":
        return False
    if scheduling.get("replicaDivisionPreference") == "Aggregated":
        return True
    return bool((scheduling.get("weightPreference") or {}).get("dynamicWeight"))


def override_policy(tenant: TenantConfig, regions: Mapping[str, RegionConfig], members: Iterable[MemberConfig]
                    ) -> dict[str, Any]:
    """Per-region overrides: pull images from the region's registry mirror and label objects with the region.

    One rule per region with members, targeted at those members by name (`_affinity_region`), so a member joins its
    region's overrides by being declared in the region. Regions without a mirror only get the label.
    """
    rules: list[dict[str, Any]] = []
    members = list(members)
    for name in sorted(regions):
        if not any(m.region == name for m in members):
            continue
        region = regions[name]
        overriders: dict[str, Any] = {}
        if region.registry_mirror:
            # Without a predicate, image paths are found automatically for Pod/ReplicaSet/Deployment/DaemonSet/
            # StatefulSet/Job; other kinds are untouched.
            overriders["imageOverrider"] = [
                {"component": "Registry", "operator": "replace", "value": region.registry_mirror}
            ]
        overriders["labelsOverrider"] = [{"operator": "add", "value": {REGION_LABEL: name}}]
        rules.append({"targetCluster": _affinity_region([name], members), "overriders": overriders})
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


def tenant_policies(config: FleetConfig) -> list[tuple[TenantConfig, dict[str, Any], bool]]:
    """Every tenant's policies as a stack applies them: (tenant, policy, names a priority class?). The
    PropagationPolicy, the supporting and critical ones when the tenant has them, the OverridePolicy and, with a
    quota, the FederatedResourceQuota. Their namespaces belong to the hub (`tenant_namespace`)."""
    regions, members = list(config.regions), list(config.members)
    out: list[tuple[TenantConfig, dict[str, Any], bool]] = []
    for tenant in config.tenants:
        prioritised = tenant.priority_class is not None or tenant.critical is not None
        out.append((tenant, propagation_policy(tenant, regions, members, config.failover), prioritised))
        supporting = supporting_policy(tenant, regions, members, config.failover)
        if supporting is not None:
            out.append((tenant, supporting, False))
        critical = critical_policy(tenant, regions, members, config.failover)
        if critical is not None:
            out.append((tenant, critical, prioritised))
        out.append((tenant, override_policy(tenant, config.regions, members), False))
        if tenant.quota is not None:
            out.append((tenant, federated_resource_quota(tenant), False))
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


def priority_classes(table: Sequence[PriorityClassConfig]) -> list[dict[str, Any]]:
    """The fleet priority table as `scheduling.k8s.io/v1` PriorityClasses in karmada-apiserver.

    That is where the controller-manager reads them for `schedulePriority` (pkg/util/helper/priorityclass.go): a
    policy naming a class that does not exist there makes BuildResourceBinding fail, so nothing of the tenant is
    propagated. The classes are not copied to members; a pod's own priorityClassName is a member concern. Only
    `value` is used (preemptionPolicy is a TODO upstream, globalDefault is never consulted)."""
    return [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
         "metadata": {"name": c.name, "labels": {"app.kubernetes.io/part-of": "karmada-hub"}},
         "value": c.value, "globalDefault": False, "preemptionPolicy": "Never",
         **({"description": c.description} if c.description else {})}
        for c in table
    ]


def workload_rebalancer(name: str, namespace: str, workloads: Sequence[tuple[str, str]],
                        ttl_seconds: int = 3600) -> dict[str, Any]:
    """A WorkloadRebalancer (apps.karmada.io/v1alpha1, cluster-scoped) that reschedules the named workloads from
    scratch. What brings Divided replicas back after a member recovers: nothing reschedules them on its own
    (pkg/scheduler/scheduler.go: "TODO: reschedule binding on cluster change other than cluster deletion"), and at
    v1.18.2 the rebalance still starts from the affinity group the binding was last scheduled with, so it pulls
    replicas back into the preferred group only through overflow groups, never out of the fallback group.

    `workloads` are (kind, name) of apps/v1 Deployments or StatefulSets in `namespace`."""
    if not workloads:
        raise ValueError("a WorkloadRebalancer needs at least one workload")
    for kind, _ in workloads:
        if kind not in ("Deployment", "StatefulSet"):
            raise ValueError(f"kind {kind!r}: only apps/v1 Deployment and StatefulSet are tenant workloads")
    return {
        "apiVersion": "apps.karmada.io/v1alpha1",
        "kind": "WorkloadRebalancer",
        "metadata": {"name": name},
        "spec": {
            "workloads": [{"apiVersion": "apps/v1", "kind": k, "namespace": namespace, "name": n}
                          for k, n in workloads],
            "ttlSecondsAfterFinished": ttl_seconds,
        },
    }
