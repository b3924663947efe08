"""Tenant placement rules: the stateful boundary, and affinity/overflow groups that resolve to real members.

They read the rendered PropagationPolicies and Cluster objects of a stack (wire inputs; a Pull member's Cluster
is the one its agent will register, read from the agent's flags), so they also catch a
hand-edited or future policy the config checks never saw. The names they read are the program's own
(`components/fleet/policy_docs.py`), repeated here because the pack imports only the standard library; a test
keeps the two in step.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .props import Props, StackResource, _get, _list, is_opaque, k8s_kind, selector_matches

FAILOVER_TAINT_KEY = "fleet.karmada-hub.io/not-ready"
STATEFUL_ANNOTATION = "fleet.karmada-hub.io/data"
RESTORE_ANNOTATION = "fleet.karmada-hub.io/restore-from"
GROUPS_ANNOTATION = "fleet.karmada-hub.io/workload-groups"

_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _is_label_key(key: Any) -> bool:
    if not isinstance(key, str):
        return False
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return False
    return bool(_LABEL_NAME.match(name))


def _annotations(props: Props) -> Mapping[str, Any]:
    value = _get(props, "metadata", "annotations")
    return value if isinstance(value, Mapping) else {}


def _policy_name(props: Props) -> str:
    return f"{_get(props, 'metadata', 'namespace')}/{_get(props, 'metadata', 'name')}"


def _tolerates_forever(placement: Any) -> bool:
    """The taint manager never evicts a binding whose policy tolerates the failover taint without a time limit."""
    return any(
        isinstance(t, Mapping) and t.get("key") == FAILOVER_TAINT_KEY and t.get("operator") == "Exists"
        and t.get("effect") in ("NoExecute", None, "") and t.get("tolerationSeconds") is None
        for t in _list(_get(placement, "clusterTolerations"))
    )


def stateful_failover(resource_type: str, props: Props) -> list[str]:
    """A stateful tenant's policy (annotated `fleet.karmada-hub.io/data: stateful`) never fails over automatically
    unless it carries a state story: statePreservation rules, purge mode Directly (labels are injected only then,
    upstream controllers/binding/common.go) and a restore source. Bindings move, volumes do not."""
    if k8s_kind(resource_type) not in ("PropagationPolicy", "ClusterPropagationPolicy"):
        return []
    if _annotations(props).get(STATEFUL_ANNOTATION) != "stateful":
        return []
    spec = _get(props, "spec") or {}
    if is_opaque(spec):
        return []
    name = _policy_name(props)
    failover = _get(spec, "failover") or {}
    application = _get(failover, "application")
    manual = _tolerates_forever(_get(spec, "placement"))
    if manual and application is None:
        return []
    problems: list[str] = []
    cluster = _get(failover, "cluster") or {}
    story = bool(_list(_get(cluster, "statePreservation", "rules"))) and bool(
        _annotations(props).get(RESTORE_ANNOTATION))
    if not manual:
        if not story:
            problems.append(f"stateful policy {name} fails over automatically without a state story "
                            "(statePreservation rules and a restore source); volumes stay on the failed member")
        elif _get(cluster, "purgeMode") not in ("Directly", "Immediately"):
            problems.append(f"stateful policy {name}: state labels are injected only with failover.cluster."
                            f"purgeMode Directly (got {_get(cluster, 'purgeMode') or 'default Gracefully'})")
    if application is not None:
        if not story:
            problems.append(f"stateful policy {name} has application failover without a state story")
        elif _get(application, "purgeMode") not in ("Directly", "Immediately") or not _list(
                _get(application, "statePreservation", "rules")):
            problems.append(f"stateful policy {name}: application failover needs purgeMode Directly and the "
                            "statePreservation rules")
    return problems


# ------------------------------------------------------------------------------------ clusters and groups


AGENT_BINARY = "karmada-agent"


def _clusters(resources: Sequence[StackResource]) -> list[Props]:
    """The stack's Clusters: the ones it renders (Push; a region stack's Push credential Secrets declare the hub's),
    and the ones its Pull agents create at start, as the
    agent registers them from its flags (karmada v1.18.2 cmd/agent/app/agent.go
    generateClusterInControllerPlane: name, Pull, provider, region, zones, no labels)."""
    rendered = [p for t, p, _ in resources if k8s_kind(t) == "Cluster" and isinstance(p, Mapping)]
    names = {_get(p, "metadata", "name") for p in rendered}
    declared = [c for c in (_declared_cluster(p) for t, p, _ in resources if k8s_kind(t) == "Secret")
                if c is not None and _get(c, "metadata", "name") not in names]
    return rendered + declared + [_agent_cluster(c) for t, p, _ in resources if k8s_kind(t) == "Deployment"
                       for c in _list(_get(p, "spec", "template", "spec", "containers"))
                       if isinstance(c, Mapping) and str((_list(c.get("command")) or [""])[0]).endswith(
                           "/" + AGENT_BINARY)]


DECLARED_CLUSTER_ANNOTATION = "fleet.karmada-hub.io/cluster"
"""A region stack's Push credential Secret carries the Cluster its hub makes from the same file (the hub owns
Push Clusters: components/fleet/member_docs.py)."""


def _declared_cluster(secret: Props) -> Props | None:
    import json

    text = (_get(secret, "metadata", "annotations") or {}).get(DECLARED_CLUSTER_ANNOTATION)
    if not isinstance(text, str):
        return None
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    return doc if isinstance(doc, Mapping) else None


def _agent_cluster(container: Mapping[str, Any]) -> Props:
    flags: dict[str, str] = {}
    for arg in _list(container.get("args")):
        if isinstance(arg, str) and arg.startswith("--") and "=" in arg:
            key, value = arg[2:].split("=", 1)
            flags[key] = value
    spec: dict[str, Any] = {"syncMode": "Pull", "region": flags.get("cluster-region"),
                            "provider": flags.get("cluster-provider")}
    if flags.get("cluster-zones"):
        spec["zones"] = flags["cluster-zones"].split(",")
    return {"metadata": {"name": flags.get("cluster-name")}, "spec": spec}


def _policies(resources: Sequence[StackResource]) -> list[tuple[Props, str]]:
    return [(p, urn) for t, p, urn in resources if k8s_kind(t) == "PropagationPolicy" and isinstance(p, Mapping)]


def _field_values(cluster: Props, key: str) -> list[str]:
    spec = _get(cluster, "spec") or {}
    if key == "region":
        return [spec["region"]] if isinstance(spec.get("region"), str) else []
    if key == "provider":
        return [spec["provider"]] if isinstance(spec.get("provider"), str) else []
    if key == "zone":
        return [z for z in _list(spec.get("zones")) if isinstance(z, str)] + (
            [spec["zone"]] if isinstance(spec.get("zone"), str) else [])
    return []


def cluster_matches(affinity: Any, cluster: Props) -> bool:
    """`util.ClusterMatches` for one ClusterAffinity (clusterNames, labelSelector, fieldSelector, exclude)."""
    if not isinstance(affinity, Mapping):
        return False
    name = _get(cluster, "metadata", "name")
    if name in _list(affinity.get("exclude")):
        return False
    names = _list(affinity.get("clusterNames"))
    if names and name not in names:
        return False
    selector = affinity.get("labelSelector")
    if selector is not None:
        labels = _get(cluster, "metadata", "labels")
        if not selector_matches(selector, labels if isinstance(labels, Mapping) else {}):
            return False
    for expr in _list(_get(affinity, "fieldSelector", "matchExpressions")):
        values = set(_field_values(cluster, str(expr.get("key"))))
        wanted = set(_list(expr.get("values")))
        if expr.get("operator") == "In" and not values & wanted:
            return False
        if expr.get("operator") == "NotIn" and values & wanted:
            return False
    return True


def _matching(affinity: Any, clusters: Sequence[Props]) -> list[str]:
    return sorted(str(_get(c, "metadata", "name")) for c in clusters if cluster_matches(affinity, c))


def overflow_groups_exist(resources: Sequence[StackResource]) -> list[tuple[str, str | None]]:
    """Every overflowAffinities group selects at least one member of the stack: replicas would otherwise never
    spill anywhere, and the group would only look like capacity."""
    clusters = _clusters(resources)
    out: list[tuple[str, str | None]] = []
    for props, urn in _policies(resources):
        name = _policy_name(props)
        for term in _list(_get(props, "spec", "placement", "clusterAffinities")):
            for group in _list(_get(term, "overflowAffinities")):
                if not _matching(group, clusters):
                    out.append((f"{name}: overflow group {_get(group, 'affinityName')} of "
                                f"{_get(term, 'affinityName')} selects no Cluster in this stack", urn))
    return out


def affinity_groups_resolvable(resources: Sequence[StackResource]) -> list[tuple[str, str | None]]:
    """Every clusterAffinities group selects at least one member, and every declared workload group can be
    placed: an anti-affinity group of N needs N members in reach (its members never share one), and a
    workloadAffinity must declare its groups (annotation `fleet.karmada-hub.io/workload-groups`) with label keys
    the webhook accepts."""
    clusters = _clusters(resources)
    out: list[tuple[str, str | None]] = []
    for props, urn in _policies(resources):
        name = _policy_name(props)
        placement = _get(props, "spec", "placement") or {}
        reach: set[str] = set()
        for term in _list(_get(placement, "clusterAffinities")):
            members = _matching(term, clusters)
            for group in _list(_get(term, "overflowAffinities")):
                members += _matching(group, clusters)
            if not members:
                out.append((f"{name}: affinity group {_get(term, 'affinityName')} selects no Cluster in this stack",
                            urn))
            reach |= set(members)
        workload = _get(placement, "workloadAffinity")
        if not isinstance(workload, Mapping):
            continue
        keys = {t: _get(workload, t, "groupByLabelKey") for t in ("affinity", "antiAffinity") if t in workload}
        for term, key in keys.items():
            if not _is_label_key(key):
                out.append((f"{name}: workloadAffinity.{term}.groupByLabelKey {key!r} is not a label key", urn))
        raw = _annotations(props).get(GROUPS_ANNOTATION)
        try:
            groups = json.loads(raw) if isinstance(raw, str) else None
        except json.JSONDecodeError:
            groups = None
        if not isinstance(groups, Mapping):
            out.append((f"{name}: workloadAffinity without its declared groups ({GROUPS_ANNOTATION}), so no one "
                        "checked that they fit the fleet", urn))
            continue
        for term in keys:
            if not groups.get(term):
                out.append((f"{name}: workloadAffinity.{term} has no declared groups", urn))
        for value, size in (groups.get("antiAffinity") or {}).items():
            if isinstance(size, int) and size > len(reach):
                out.append((f"{name}: anti-affinity group {value} has {size} workloads but its groups reach "
                            f"{len(reach)} member(s); the last ones can never be placed", urn))
    return out
