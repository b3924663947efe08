"""What a region stack's identity may do: exactly the objects that stack writes, by name, and nothing else.

A region stack authenticates as User `karmada-hub:region:<region>:<key id>` (no groups) with a client certificate
the hub signed for the key its committed CSR names (kube/region_csr.py): the RBAC is bound to that exact name, so a
new key's CSR unbinds every certificate of the old key. A region without an accepted CSR has no RBAC at all.
Its grants are derived from the very documents the region stack renders,
so they cannot drift from what it applies:

karmada-apiserver
  - its tenants' PropagationPolicies, OverridePolicies and FederatedResourceQuotas (policy_docs.tenant_policies),
    in the tenants' namespaces, which the hub creates;
  - its ingress OverridePolicy in `ingress-nginx` (RegionalTraffic), when the region has members;
  - the credential Secrets `karmada-cluster/<member>` and `<member>-impersonator` of its Push members (the
    Cluster objects that point at them are the hub's);
  - the bootstrap-token Secret `kube-system/bootstrap-token-<id>` of each of its Pull members (PullJoin).
host (k3s)
  - the `karmada-scheduler-estimator-<member>-member-token` Secret of each estimator member (a token and a CA,
    data only: the kubeconfig around them, the estimator Deployments and their serving certificates are the hub's);
  - the region ConfigMap `external-dns/traffic-region-<region>` (its load balancer's address and members, which
    the failover controller probes), when the fleet has DNS and the region has members.

Verbs are what Pulumi's server-side apply uses: get (refresh), create and patch (an apply PATCH that creates
is also authorized as `create` *with the name*: k8s.io/apiserver v0.35.3 `endpoints/handlers/patch.go`, which is
what makes `create` with `resourceNames` work), delete, and list/watch (which with resourceNames match only
requests that select the one name, as the provider's awaits do).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from components.fleet import member_docs
from components.fleet import policy_docs as fleet
from components.karmada import flags, manifests
from components.karmada.pki_spec import estimator_service_name
from components.operations.region_intents import RegionIntent
from components.traffic import docs as traffic
from components.traffic import failover_docs as failover

VERBS = ("get", "list", "watch", "create", "patch", "delete")
BOOTSTRAP_NAMESPACE = "kube-system"


def region_user(intent: RegionIntent) -> str | None:
    """The user name the hub signs into the region's certificates (None: no CSR committed, no certificate)."""
    return intent.csr.user if intent.csr is not None else None


def bootstrap_token_secret_name(member: str) -> str:
    """`bootstrap-token-<id>` in kube-system: the name the API server's bootstrap authenticator looks up."""
    return f"bootstrap-token-{member_docs.token_id(member)}"


@dataclass(frozen=True, order=True)
class Grant:
    """One object a region may write: API group, resource (plural), namespace ("" = cluster-scoped), name."""

    group: str
    resource: str
    namespace: str
    name: str


_PLURAL = {"PropagationPolicy": "propagationpolicies", "OverridePolicy": "overridepolicies",
           "FederatedResourceQuota": "federatedresourcequotas", "Secret": "secrets", "Namespace": "namespaces",
           "ConfigMap": "configmaps"}


def _grant(obj: dict[str, Any]) -> Grant:
    group = obj["apiVersion"].rpartition("/")[0]
    meta = obj["metadata"]
    return Grant(group, _PLURAL[obj["kind"]], meta.get("namespace", ""), meta["name"])


def karmada_grants(intent: RegionIntent) -> list[Grant]:
    config = intent.config
    grants = [_grant(p) for _, p, _ in fleet.tenant_policies(config)]
    members = intent.members
    if members:
        override = traffic.ingress_status_overrides(traffic.INGRESS_NAMESPACE, traffic.INGRESS_CONTROLLER,
                                                    dict.fromkeys((m.name for m in members), "192.0.2.1"),
                                                    region=intent.region)
        grants.append(_grant(override))
    for m in members:
        if m.sync_mode == "Push":
            ns = member_docs.CLUSTER_NAMESPACE
            grants += [Grant("", "secrets", ns, m.name),
                       Grant("", "secrets", ns, member_docs.impersonator_secret_name(m.name))]
        else:
            grants.append(Grant("", "secrets", BOOTSTRAP_NAMESPACE, bootstrap_token_secret_name(m.name)))
    return sorted(set(grants))


def host_grants(intent: RegionIntent) -> list[Grant]:
    grants = [Grant("", "secrets", flags.NAMESPACE, estimator_service_name(m.name) + manifests.MEMBER_TOKEN_SUFFIX)
              for m in intent.members if m.scheduler_estimator]
    if intent.members and intent.config.dns is not None:
        grants.append(_grant(failover.region_configmap(intent.region, "192.0.2.1", [m.name for m in intent.members])))
    return sorted(grants)


def role_name(region: str) -> str:
    return f"karmada-hub:region:{region}"


def _rbac(name: str, user: str, grants: Sequence[Grant]) -> list[dict[str, Any]]:
    """One Role per namespace (a ClusterRole for cluster-scoped objects), each bound to `user` alone. Roles and
    bindings are named after the region (`karmada-hub:region:<region>`), so a new key rebinds them in place."""
    by_ns: dict[str, list[Grant]] = {}
    for g in grants:
        by_ns.setdefault(g.namespace, []).append(g)
    out: list[dict[str, Any]] = []
    labels = {"app.kubernetes.io/part-of": "karmada-hub"}
    for ns in sorted(by_ns):
        rules: dict[tuple[str, str], list[str]] = {}
        for g in by_ns[ns]:
            rules.setdefault((g.group, g.resource), []).append(g.name)
        meta: dict[str, Any] = {"name": name, "labels": labels, **({"namespace": ns} if ns else {})}
        kind = "Role" if ns else "ClusterRole"
        out.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta,
                    "rules": [{"apiGroups": [group], "resources": [resource], "resourceNames": sorted(names),
                               "verbs": list(VERBS)} for (group, resource), names in sorted(rules.items())]})
        out.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": f"{kind}Binding", "metadata": dict(meta),
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
                    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]})
    return out


def karmada_rbac(intent: RegionIntent) -> list[dict[str, Any]]:
    user = region_user(intent)
    return _rbac(role_name(intent.region), user, karmada_grants(intent)) if user else []


def host_rbac(intent: RegionIntent) -> list[dict[str, Any]]:
    user = region_user(intent)
    return _rbac(role_name(intent.region), user, host_grants(intent)) if user else []
