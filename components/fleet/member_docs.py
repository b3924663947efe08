"""Member join documents: what `karmadactl join` (Push) and `karmadactl register` (Pull) create, declaratively.

Names, labels and RBAC rules follow `pkg/util/credential.go` (join) and `pkg/karmadactl/register/register.go`
(register) at Karmada v1.18.2, so upstream docs and tooling (`karmadactl unjoin`, agent cert rotation) still
apply. Three API servers are involved and every function says which one its objects go to:

- member: the workload cluster's kube-apiserver (CAPI kubeconfig);
- hub: karmada-apiserver;
- host: the k3s cluster the Karmada control plane runs on (scheduler-estimators: karmada/manifests.py).

Secret material (SA tokens, CA bundles, kubeconfigs) is always an argument; nothing is generated here. Secret
values are rendered base64 in `data` (not `stringData`): that is exactly what the API server stores and
returns, so previews diff cleanly, and Karmada reads `data.token` / `data.caBundle`.
"""

from __future__ import annotations

import base64
from typing import Any, Literal

from components import versions
from components.config import MemberConfig
from components.karmada import flags
from components.kube.kubeconfig import kubeconfig as render_kubeconfig
from components.kube.pod_security import NON_ROOT_UID, container_security_context

CLUSTER_NAMESPACE = "karmada-cluster"
"""`--cluster-namespace` default: credentials in the member (Push) and in the hub (both modes)."""
AGENT_NAMESPACE = "karmada-system"
SYSTEM_LABELS = {"karmada.io/system": "true"}
"""`KarmadaSystemLabel`: upstream marks every namespace/object it creates for a join with it."""

PROVIDER = "hetzner"
REGION_LABEL = "topology.kubernetes.io/region"
SYNC_MODE_LABEL = "fleet.karmada-hub.io/sync-mode"
PROVIDER_LABEL = "fleet.karmada-hub.io/provider"

IMPERSONATOR_SA = "karmada-impersonator"
AGENT_SA = "karmada-agent-sa"
AGENT_NAME = "karmada-agent"
AGENT_KUBECONFIG_PATH = flags.AGENT_KUBECONFIG_PATH
AGENT_KUBECONFIG_DIR, AGENT_KUBECONFIG_SECRET = AGENT_KUBECONFIG_PATH.rsplit("/", 1)
"""What the agent's `--karmada-kubeconfig` must point at (the lead's flags function uses it)."""
AGENT_HEALTH_PORT = 10357
AGENT_METRICS_PORT = 8080

"""The upstream images (alpine, no USER) would run as root; the pods pin a non-root UID instead."""

SyncMode = Literal["Push", "Pull"]


def _b64(value: str) -> str:
    return base64.b64encode(value.encode()).decode()


def _labels(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {**SYSTEM_LABELS, **(extra or {})}


def cluster_sa_name(cluster: str) -> str:
    """`names.GenerateServiceAccountName(cluster)`: the member SA the hub acts as in Push mode."""
    return f"karmada-{cluster}"


def cluster_role_name(cluster: str) -> str:
    """`names.GenerateRoleName(sa)`: the member ClusterRole/Binding for the Push SA."""
    return f"karmada-controller-manager:{cluster_sa_name(cluster)}"


def impersonator_secret_name(cluster: str) -> str:
    return f"{cluster}-impersonator"


def execution_namespace(cluster: str) -> str:
    """`karmada-es-<cluster>`: where the hub keeps a member's Work objects."""
    return f"karmada-es-{cluster}"


def agent_user(cluster: str) -> str:
    """The identity (client cert CN, O=system:karmada:agents) the Pull agent uses against the hub."""
    return f"system:karmada:agent:{cluster}"


# ----------------------------------------------------------------------------------- shared objects


def namespace(name: str) -> dict[str, Any]:
    """A namespace labelled as Karmada-owned (member `karmada-cluster`/`karmada-system`; hub `karmada-cluster`)."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": _labels()}}


def _service_account(name: str, ns: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns,
                                                                       "labels": _labels()}}


def _sa_token_secret(sa: str, ns: str) -> dict[str, Any]:
    """A long-lived SA token Secret; the member's token controller fills `token` and `ca.crt`.

    Since Kubernetes 1.24 SAs get no token Secret of their own; this is what join creates (same name as the SA).
    The lead reads `data.token` / `data["ca.crt"]` back from the member and passes them to `cluster_secret`.
    """
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/service-account-token",
        "metadata": {
            "name": sa,
            "namespace": ns,
            "labels": _labels(),
            "annotations": {"kubernetes.io/service-account.name": sa},
        },
    }


def _all_access_rules() -> list[dict[str, Any]]:
    """`ClusterPolicyRules` upstream: everything, plus GET on every non-resource URL (/healthz, /readyz, /version)."""
    return [
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
        {"nonResourceURLs": ["*"], "verbs": ["get"]},
    ]


def _cluster_role(name: str, rules: list[dict[str, Any]], labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta, "rules": rules}


def _binding(kind: str, name: str, role_kind: str, subject: dict[str, Any], ns: str | None = None,
             labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if ns is not None:
        meta["namespace"] = ns
    if labels:
        meta["labels"] = labels
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
        "subjects": [subject],
    }


def _sa_subject(name: str, ns: str) -> dict[str, Any]:
    return {"kind": "ServiceAccount", "name": name, "namespace": ns}


def _user_subject(name: str) -> dict[str, Any]:
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name}


def _opaque_secret(name: str, ns: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": name, "namespace": ns, "labels": _labels()},
        "data": {key: _b64(value) for key, value in data.items()},
    }


# ------------------------------------------------------------------------------------------ Push


def push_member_objects(cluster: str) -> list[dict[str, Any]]:
    """Member side of a Push join, in apply order: namespace, two SAs with token Secrets, all-access RBAC.

    The impersonator SA gets no RBAC here: Karmada's unifiedAuth controller syncs its impersonation rules.
    """
    sa = cluster_sa_name(cluster)
    role = cluster_role_name(cluster)
    return [
        namespace(CLUSTER_NAMESPACE),
        _service_account(IMPERSONATOR_SA, CLUSTER_NAMESPACE),
        _sa_token_secret(IMPERSONATOR_SA, CLUSTER_NAMESPACE),
        _service_account(sa, CLUSTER_NAMESPACE),
        _cluster_role(role, _all_access_rules(), _labels()),
        _binding("ClusterRoleBinding", role, "ClusterRole", _sa_subject(sa, CLUSTER_NAMESPACE), labels=_labels()),
        _sa_token_secret(sa, CLUSTER_NAMESPACE),
    ]


def cluster_secret(name: str, token: str, ca_bundle: str) -> dict[str, Any]:
    """Hub: `karmada-cluster/<cluster>` with the member SA's bearer token and the member's CA (PEM).

    `token` and `ca_bundle` are the decoded values of the member token Secret's `token` and `ca.crt`.
    """
    return _opaque_secret(name, CLUSTER_NAMESPACE, {"token": token, "caBundle": ca_bundle})


def impersonator_secret(name: str, token: str) -> dict[str, Any]:
    """Hub: `karmada-cluster/<cluster>-impersonator` with the impersonator SA's token (`name` is the cluster)."""
    return _opaque_secret(impersonator_secret_name(name), CLUSTER_NAMESPACE, {"token": token})


def cluster_labels(member: MemberConfig, sync_mode: SyncMode) -> dict[str, str]:
    """The Cluster's labels: the member's own, then region/provider/sync mode (ours win on a clash)."""
    return {**member.labels, REGION_LABEL: member.region, PROVIDER_LABEL: PROVIDER, SYNC_MODE_LABEL: sync_mode.lower()}


def cluster_object(member: MemberConfig, sync_mode: SyncMode | None = None, cluster_id: str | None = None
                   ) -> dict[str, Any]:
    """Hub: a Push member's `Cluster` (aggregated API), with provider/region/zones set for fieldSelector and
    spread, and credentials via secretRef/impersonatorSecretRef so the controller-manager can reach the member.
    `cluster_id` is the member's kube-system namespace UID, as join sets it (used for multi-cluster DNS).

    Never for Pull: the agent creates its own Cluster at start. It lists every Cluster and exits if one has its
    name with another `spec.id` (its kube-system UID), then create-or-updates it (karmada v1.18.2
    cmd/agent/app/agent.go `run`, pkg/util/cluster.go `ClusterRegisterOption.Validate`,
    `CreateOrUpdateClusterObject`), so a Cluster made here would stop it from ever registering.
    """
    mode: SyncMode = sync_mode or member.sync_mode
    if mode != "Push":
        raise ValueError(f"{member.name}: a Pull member's Cluster is created by its karmada-agent, not here")
    spec: dict[str, Any] = {"syncMode": mode, "apiEndpoint": member.api_endpoint.rstrip("/")}
    if cluster_id:
        spec["id"] = cluster_id
    spec["secretRef"] = {"namespace": CLUSTER_NAMESPACE, "name": member.name}
    spec["impersonatorSecretRef"] = {"namespace": CLUSTER_NAMESPACE, "name": impersonator_secret_name(member.name)}
    spec["provider"] = PROVIDER
    spec["region"] = member.region
    if member.zones:
        spec["zones"] = list(member.zones)
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": member.name, "labels": cluster_labels(member, mode)},
        "spec": spec,
    }


# ------------------------------------------------------------------------------------------ Pull


def pull_hub_objects(cluster: str) -> list[dict[str, Any]]:
    """Hub side of a Pull join: the agent's RBAC, in apply order. Names and shape as `karmadactl register`
    creates them (pkg/karmadactl/register/register.go `GenerateClusterRole`, `GenerateSecretAccessRole`,
    `GenerateWorkAccessRole` at v1.18.2), the verbs exactly what the agent's code uses (docs/
    upstream-contract.md, karmada-agent RBAC):

    - its own Cluster: `get` and `update` — register grants `delete` but no `update`, yet the agent's
      CreateOrUpdateClusterObject updates the Cluster whenever its spec differs from the flags (pkg/util/
      cluster.go); nothing in the agent deletes it;
    - no CSR verbs: they serve only the `certRotation` controller, which `--controllers=*` leaves off
      (cmd/agent/app/agent.go `controllersDisabledByDefault`).

    The `agent-work` Role/RoleBinding live in `karmada-es-<cluster>`, which the cluster controller creates for
    every Cluster (get-then-create, so it adopts an existing one) and deletes with it. The agent caches Works in
    that namespace only and must be allowed there before it starts, so, like `karmadactl register`, this renders
    the namespace up front: the one object here that a Karmada binary also manages (the contract tests list it
    as an exception). Remove a Pull member by deleting its Cluster first (docs/runbooks/members.md).
    """
    es = execution_namespace(cluster)
    user = _user_subject(agent_user(cluster))
    base = f"system:karmada:{cluster}"
    cluster_rules = [
        {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters"], "resourceNames": [cluster],
         "verbs": ["get", "update"]},
        {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters"], "verbs": ["create", "list", "watch"]},
        {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters/status"], "resourceNames": [cluster],
         "verbs": ["update"]},
        {"apiGroups": ["config.karmada.io"],
         "resources": ["resourceinterpreterwebhookconfigurations", "resourceinterpretercustomizations"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]},
        {"apiGroups": [""], "resources": ["services"], "verbs": ["list", "watch"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["patch", "create", "update"]},
    ]
    secret_rules = [
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": [cluster, impersonator_secret_name(cluster)],
         "verbs": ["get", "patch"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
    ]
    work_rules = [
        {"apiGroups": ["work.karmada.io"], "resources": ["works"],
         "verbs": ["get", "create", "list", "watch", "update", "delete"]},
        {"apiGroups": ["work.karmada.io"], "resources": ["works/status"], "verbs": ["patch", "update"]},
    ]
    return [
        _cluster_role(f"{base}:agent", cluster_rules),
        _binding("ClusterRoleBinding", f"{base}:agent", "ClusterRole", user),
        _role(f"{base}:agent-secret", CLUSTER_NAMESPACE, secret_rules),
        _binding("RoleBinding", f"{base}:agent-secret", "Role", user, ns=CLUSTER_NAMESPACE),
        namespace(es),
        _role(f"{base}:agent-work", es, work_rules),
        _binding("RoleBinding", f"{base}:agent-work", "Role", user, ns=es),
    ]


def _role(name: str, ns: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": name, "namespace": ns},
            "rules": rules}


def agent_kubeconfig_secret(kubeconfig_yaml: str) -> dict[str, Any]:
    """Member: `karmada-system/karmada-kubeconfig` (key `karmada-kubeconfig`): the agent's way into the hub."""
    return _opaque_secret(AGENT_KUBECONFIG_SECRET, AGENT_NAMESPACE, {AGENT_KUBECONFIG_SECRET: kubeconfig_yaml})


def _pod_security() -> dict[str, Any]:
    return {"runAsNonRoot": True, "runAsUser": NON_ROOT_UID, "runAsGroup": NON_ROOT_UID, "fsGroup": NON_ROOT_UID,
            "seccompProfile": {"type": "RuntimeDefault"}}


def _http_probe(port: int, period: int, failures: int) -> dict[str, Any]:
    return {"httpGet": {"path": "/healthz", "port": port, "scheme": "HTTP"}, "periodSeconds": period,
            "timeoutSeconds": 5, "failureThreshold": failures}


def _anti_affinity(labels: dict[str, str], required: bool) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}
    if required:
        return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": term}]}}


AGENT_REPLICAS = 2
"""The agent leader-elects (Lease `karmada-system/karmada-agent-<cluster>` in the karmada-apiserver), so the
second replica is a warm standby that takes over within the lease duration when the leader's node goes away.
More adds nothing. Anti-affinity
is preferred, not required: members may have a single schedulable node, and a hard rule there would leave the
standby pending and block the rolling update; maxSurge 0 / maxUnavailable 1 rolls one pod at a time for the
same reason, and the PodDisruptionBudget keeps one through node drains."""


def pull_member_objects(cluster: str, version: str, args: list[str], kubeconfig_yaml: str) -> list[dict[str, Any]]:
    """Member side of a Pull join, in apply order.

    `args` is the agent's whole flag list (the lead's flags function; `--karmada-kubeconfig` must be
    `AGENT_KUBECONFIG_PATH`); `kubeconfig_yaml` is the agent's hub kubeconfig (see `kubeconfig`).
    """
    return [
        namespace(AGENT_NAMESPACE),
        agent_kubeconfig_secret(kubeconfig_yaml),
        _service_account(AGENT_SA, AGENT_NAMESPACE),
        _cluster_role(AGENT_NAME, _all_access_rules(), _labels()),
        _binding("ClusterRoleBinding", AGENT_NAME, "ClusterRole", _sa_subject(AGENT_SA, AGENT_NAMESPACE),
                 labels=_labels()),
        agent_deployment(cluster, version, args),
        agent_pod_disruption_budget(),
    ]


def agent_deployment(cluster: str, version: str, args: list[str], replicas: int = AGENT_REPLICAS) -> dict[str, Any]:
    """Member: the karmada-agent Deployment (image `docker.io/karmada/karmada-agent:<version>`).

    The agent talks to its own member with the in-cluster SA token (so the token stays mounted) and to the hub
    with the mounted kubeconfig. Only `/healthz` exists on the probe port (no `/readyz`), for both probes.
    """
    labels = {"app": AGENT_NAME}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": AGENT_NAME, "namespace": AGENT_NAMESPACE,
                     "labels": {**labels, "fleet.karmada-hub.io/cluster": cluster}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": AGENT_SA,
                    "securityContext": _pod_security(),
                    "affinity": _anti_affinity(labels, required=False),
                    "containers": [{
                        "name": AGENT_NAME,
                        "image": versions.karmada_image("karmada-agent", version),
                        "imagePullPolicy": "IfNotPresent",
                        "command": ["/bin/karmada-agent"],
                        "args": list(args),
                        # agent_args binds its health and metrics listeners to $(POD_IP); kubelet expands
                        # $(VAR) only from the container's env and leaves an undefined one as literal text,
                        # on which controller-runtime's listener fails and the agent exits.
                        "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                        "ports": [
                            {"name": "metrics", "containerPort": AGENT_METRICS_PORT, "protocol": "TCP"},
                            {"name": "healthz", "containerPort": AGENT_HEALTH_PORT, "protocol": "TCP"},
                        ],
                        "livenessProbe": {**_http_probe(AGENT_HEALTH_PORT, 15, 3), "initialDelaySeconds": 15},
                        "readinessProbe": _http_probe(AGENT_HEALTH_PORT, 10, 3),
                        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}},
                        "securityContext": container_security_context(),
                        "volumeMounts": [
                            {"name": "kubeconfig", "mountPath": AGENT_KUBECONFIG_DIR, "readOnly": True},
                            {"name": "tmp", "mountPath": "/tmp"},
                        ],
                    }],
                    "volumes": [
                        {"name": "kubeconfig", "secret": {"secretName": AGENT_KUBECONFIG_SECRET}},
                        {"name": "tmp", "emptyDir": {}},
                    ],
                },
            },
        },
    }


def agent_pod_disruption_budget() -> dict[str, Any]:
    """Member: keep one agent through voluntary disruptions (node drains during CAPI rollouts)."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": AGENT_NAME, "namespace": AGENT_NAMESPACE, "labels": _labels()},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": AGENT_NAME}}},
    }


# ------------------------------------------------------------------------------------- kubeconfig


def kubeconfig(
    server: str,
    ca_pem: str,
    client_cert_pem: str | None = None,
    client_key_pem: str | None = None,
    token: str | None = None,
    name: str = "karmada",
) -> str:
    """A one-cluster kubeconfig (YAML) with exactly one credential: a client certificate + key, or a token.

    Rendering is `components.kubeconfig.kubeconfig` (one renderer for the whole program); this adds the
    join-specific rules: https only, and never both credentials (which one a client would use is ambiguous).
    """
    has_cert = client_cert_pem is not None or client_key_pem is not None
    if has_cert and (client_cert_pem is None or client_key_pem is None):
        raise ValueError("kubeconfig: client_cert_pem and client_key_pem go together")
    if has_cert == (token is not None):
        raise ValueError("kubeconfig: give either a client certificate and key or a token, not both or neither")
    if not server.startswith("https://"):
        raise ValueError(f"kubeconfig: server must be an https:// URL (got '{server}')")
    return render_kubeconfig(name, server, ca_pem, client_cert_pem, client_key_pem, token)
