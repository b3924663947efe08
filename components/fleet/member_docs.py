"""Member join documents: what `karmadactl join` (Push) and `karmadactl register` (Pull) create, declaratively.

Pull differs from register where the hub's safety needs it: no rbac-generator (the hub stack owns the agent's
RBAC, narrowed to what the agent's code uses), a one-hour authentication-only bootstrap token, no reported
secrets, certificate rotation on; see docs/security.md.

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
import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any, Literal

from components import versions
from components.config import MemberConfig
from components.karmada import flags
from components.kube import agent_script, rollouts
from components.kube.kubeconfig import kubeconfig as render_kubeconfig
from components.kube.pod_security import NON_ROOT_UID, RESTRICTED, container_security_context

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
AGENT_KUBECONFIG_KEY = "karmada-kubeconfig"
"""The key certRotation reads and rewrites (cert_rotation_controller.go `KarmadaKubeconfigName` is both the Secret's
name and its key at v1.18.2); the join writes it."""
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
    """A namespace labelled as Karmada-owned (member `karmada-cluster`/`karmada-system`; hub `karmada-cluster`),
    enforcing Pod Security `restricted` (the agent, the join and the restart run as such)."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {**_labels(),
                                                                                        **RESTRICTED}}}


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


DECLARED_CLUSTER_ANNOTATION = "fleet.karmada-hub.io/cluster"
"""On a Push member's credential Secret: the Cluster the hub makes from the same stack file (name, labels,
syncMode, provider, region, zones). A region stack renders no Cluster (the hub owns them), so this is how the
policy pack sees, in the region's own plan, which clusters its policies can reach; Karmada ignores it."""


def declared_cluster(member: MemberConfig) -> str:
    obj = cluster_object(member)
    spec = {k: v for k, v in obj["spec"].items() if k in ("syncMode", "provider", "region", "zones")}
    return json.dumps({"metadata": obj["metadata"], "spec": spec}, sort_keys=True)


def cluster_secret(name: str, token: str, ca_bundle: str, declared: str | None = None) -> dict[str, Any]:
    """Hub: `karmada-cluster/<cluster>` with the member SA's bearer token and the member's CA (PEM).

    `token` and `ca_bundle` are the decoded values of the member token Secret's `token` and `ca.crt`;
    `declared` is `declared_cluster(member)`.
    """
    secret = _opaque_secret(name, CLUSTER_NAMESPACE, {"token": token, "caBundle": ca_bundle})
    if declared is not None:
        secret["metadata"]["annotations"] = {DECLARED_CLUSTER_ANNOTATION: declared}
    return secret


def impersonator_secret(name: str, token: str) -> dict[str, Any]:
    """Hub: `karmada-cluster/<cluster>-impersonator` with the impersonator SA's token (`name` is the cluster)."""
    return _opaque_secret(impersonator_secret_name(name), CLUSTER_NAMESPACE, {"token": token})


def cluster_labels(member: MemberConfig, sync_mode: SyncMode) -> dict[str, str]:
    """The Cluster's labels: the member's own, then region/provider/sync mode (ours win on a clash)."""
    return {**member.labels, REGION_LABEL: member.region, PROVIDER_LABEL: PROVIDER, SYNC_MODE_LABEL: sync_mode.lower()}


def cluster_object(member: MemberConfig, sync_mode: SyncMode | None = None, cluster_id: str | None = None
                   ) -> dict[str, Any]:
    """Hub: a member's `Cluster` (aggregated API), with provider/region/zones for spread, applied by the hub stack
    (MemberRegistry) for Push and Pull members alike: a region identity may not write a `secretRef`, and a Pull
    agent needs no right to create or change Clusters.

    - Push: credentials via secretRef/impersonatorSecretRef so the controller-manager can reach the member.
    - Pull: exactly the spec the agent derives from its flags (karmada v1.18.2 cmd/agent/app/agent.go
      `generateClusterInControllerPlane`: syncMode Pull, apiEndpoint, proxyURL "", id, provider, zones when set,
      region, insecureSkipTLSVerification false, no secret references with `--report-secrets=None`), with
      `spec.id` the member's kube-system UID (`clusterId`). The agent's start then finds a Cluster of its name and
      id (pkg/util/cluster.go `Validate`: `sameCluster`) whose spec DeepEquals what it would write
      (`CreateOrUpdateClusterObject` writes nothing then), so it creates and updates nothing.
    """
    mode: SyncMode = sync_mode or member.sync_mode
    spec: dict[str, Any] = {"syncMode": mode, "apiEndpoint": member.api_endpoint.rstrip("/")}
    if mode == "Pull":
        cluster_id = cluster_id or member.cluster_id
        if not cluster_id:
            raise ValueError(f"{member.name}: a Pull member's Cluster needs its kube-system UID (clusterId)")
        spec["id"] = cluster_id
    else:
        if cluster_id:
            spec["id"] = cluster_id
        spec["secretRef"] = {"namespace": CLUSTER_NAMESPACE, "name": member.name}
        spec["impersonatorSecretRef"] = {"namespace": CLUSTER_NAMESPACE,
                                         "name": impersonator_secret_name(member.name)}
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


# ---------------------------------------------------------------------------------- estimator reader

ESTIMATOR_READER = "karmada-scheduler-estimator"
"""Member: the service account the member's scheduler-estimator (on the hub) reads the member with."""
ESTIMATOR_READER_ROLE = "karmada-hub:scheduler-estimator"


def estimator_reader_rules(resource_quota_estimate: bool = False) -> list[dict[str, Any]]:
    """What karmada-scheduler-estimator v1.18.2 reads (pkg/estimator/server/server.go): informers over nodes,
    pods (non-terminal) and replicasets, a dynamic informer over apps/v1 deployments (`supportedGVRs`), and
    resourcequotas only with the ResourceQuotaEstimate gate (plugins/resourcequota). Discovery needs nothing
    beyond `system:discovery`. It writes nothing."""
    read = ["get", "list", "watch"]
    core = ["nodes", "pods", *(["resourcequotas"] if resource_quota_estimate else [])]
    return [{"apiGroups": [""], "resources": core, "verbs": read},
            {"apiGroups": ["apps"], "resources": ["deployments", "replicasets"], "verbs": read}]


def estimator_reader_objects(resource_quota_estimate: bool = False) -> list[dict[str, Any]]:
    """Member (namespace `karmada-cluster`, which the caller ensures): the read-only account, its long-lived
    token Secret (the member's token controller fills it; rotate by deleting it) and its ClusterRole."""
    return [
        _service_account(ESTIMATOR_READER, CLUSTER_NAMESPACE),
        _cluster_role(ESTIMATOR_READER_ROLE, estimator_reader_rules(resource_quota_estimate), _labels()),
        _binding("ClusterRoleBinding", ESTIMATOR_READER_ROLE, "ClusterRole",
                 _sa_subject(ESTIMATOR_READER, CLUSTER_NAMESPACE), labels=_labels()),
        _sa_token_secret(ESTIMATOR_READER, CLUSTER_NAMESPACE),
    ]


# ------------------------------------------------------------------------------------------ Pull


def agent_leader_lease(cluster: str) -> str:
    """The agent's leader-election Lease: `karmada-agent-<cluster>` in the hub's karmada-system (the manager is
    built on the control-plane config: karmada v1.18.2 cmd/agent/app/agent.go, `LeaderElectionID`)."""
    return f"karmada-agent-{cluster}"


def pull_hub_objects(cluster: str) -> list[dict[str, Any]]:
    """Hub side of a Pull join: the agent's RBAC, owned by the hub stack, in apply order. Names and shape as
    `karmadactl register` creates them (pkg/karmadactl/register/register.go `GenerateClusterRole`,
    `GenerateWorkAccessRole` at v1.18.2), the verbs exactly what the agent's code uses with
    `--controllers=*,certRotation --report-secrets=None` (docs/upstream-contract.md, karmada-agent RBAC):

    - `clusters`: list/watch (Validate, cache), get on its own name, `clusters/status` update on its own name; no
      create, update or delete: the hub creates the Cluster with exactly the spec the agent derives
      (`cluster_object`), so CreateOrUpdateClusterObject finds nothing to write. (At v1.18.2 the status
      subresource's strategy keeps whatever spec and metadata a status update carries, pkg/registry/cluster/
      strategy.go `StatusStrategy.PrepareForUpdate` is empty, so the status right still reaches the agent's own
      Cluster: docs/security.md "Residual risks";)
    - leases: its heartbeat `karmada-cluster/<cluster>` and its leader lock `karmada-system/karmada-agent-<cluster>`
      only (get/update by name, create), instead of register's cluster-wide get/create/update, which let any agent
      overwrite the controllers' leader locks;
    - CSRs get/create: the certRotation controller renews the agent's certificate through the CSR API;
    - namespaces get (`karmada-cluster` exists), services list/watch, events, interpreter configs read, Works in
      `karmada-es-<cluster>`; no Secrets: nothing is reported, so no member token reaches the hub.

    The `agent-work` Role/RoleBinding live in `karmada-es-<cluster>`, which the cluster controller creates for
    every Cluster (get-then-create, so it adopts an existing one) and deletes with it. The agent caches Works in
    that namespace only and must be allowed there before it starts, so, like `karmadactl register`, this renders
    the namespace up front: the one object here that a Karmada binary also manages (the contract tests list it
    as an exception). Remove a Pull member by deleting its Cluster first (docs/runbooks/members.md).
    """
    es = execution_namespace(cluster)
    user = _user_subject(agent_user(cluster))
    base = f"system:karmada:{cluster}"
    leases = "coordination.k8s.io"
    cluster_rules = [
        {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters"], "resourceNames": [cluster],
         "verbs": ["get"]},
        {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters"], "verbs": ["list", "watch"]},
        {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters/status"], "resourceNames": [cluster],
         "verbs": ["update"]},
        {"apiGroups": ["config.karmada.io"],
         "resources": ["resourceinterpreterwebhookconfigurations", "resourceinterpretercustomizations"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]},
        {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"], "verbs": ["get", "create"]},
        {"apiGroups": [""], "resources": ["services"], "verbs": ["list", "watch"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["patch", "create", "update"]},
    ]
    lease_rules = lambda name: [  # noqa: E731
        {"apiGroups": [leases], "resources": ["leases"], "resourceNames": [name], "verbs": ["get", "update"]},
        {"apiGroups": [leases], "resources": ["leases"], "verbs": ["create"]},
    ]
    work_rules = [
        {"apiGroups": ["work.karmada.io"], "resources": ["works"],
         "verbs": ["get", "create", "list", "watch", "update", "delete"]},
        {"apiGroups": ["work.karmada.io"], "resources": ["works/status"], "verbs": ["patch", "update"]},
    ]
    return [
        _cluster_role(f"{base}:agent", cluster_rules),
        _binding("ClusterRoleBinding", f"{base}:agent", "ClusterRole", user),
        _role(f"{base}:agent-lease", CLUSTER_NAMESPACE, lease_rules(cluster)),
        _binding("RoleBinding", f"{base}:agent-lease", "Role", user, ns=CLUSTER_NAMESPACE),
        _role(f"{base}:agent-leader", AGENT_NAMESPACE, lease_rules(agent_leader_lease(cluster))),
        _binding("RoleBinding", f"{base}:agent-leader", "Role", user, ns=AGENT_NAMESPACE),
        namespace(es),
        _role(f"{base}:agent-work", es, work_rules),
        _binding("RoleBinding", f"{base}:agent-work", "Role", user, ns=es),
    ]


def token_id(member: str) -> str:
    """The public half of a Pull member's bootstrap token (`[a-z0-9]{6}`), fixed per member so its region's RBAC
    can name the one Secret (`bootstrap-token-<id>`) it may write; the secret half is made per join."""
    return hashlib.sha256(f"karmada-hub:{member}".encode()).hexdigest()[:6]


BOOTSTRAP_GROUP = "system:bootstrappers:karmada:default-cluster-token"
"""The extra group of every bootstrap token the program makes (register's default token group)."""
TOKEN_TTL_SECONDS = 3600
AGENT_CERT_SECONDS = 30 * 24 * 3600
"""What the join asks for; kube-controller-manager caps it (`--cluster-signing-duration`) and certRotation renews
at a fifth of the life left (karmada default 0.2), so the agent renews every ~24 days."""


def bootstrap_rbac() -> list[dict[str, Any]]:
    """Hub: what a bootstrap token may ask of the CSR API: create and read CSRs (kube-apiserver's built-in
    `system:node-bootstrapper`), as artifacts/deploy/bootstrap-token-configuration.yaml (v1.18.2) binds it for the
    token group, and nothing else of that file. Not the `clusteragent`/`selfclusteragent` approver roles: the
    upstream approver that reads them (agentcsrapproving) is switched off, because it cannot tie a token to a
    member (karmada-io/karmada#7147); the hub's own approver (csr_approver_docs.py) decides. Not the
    `system:karmada:agent-rbac-generator` binding (`*/*/*`) and not the anonymous `cluster-info` Role."""
    rbac = "rbac.authorization.k8s.io"
    bootstrappers = {"apiGroup": rbac, "kind": "Group", "name": BOOTSTRAP_GROUP}
    labels = {"karmada.io/bootstrapping": "rbac-defaults"}
    obj = _binding("ClusterRoleBinding", "system:karmada:agent-bootstrap", "ClusterRole", bootstrappers,
                   labels=labels)
    obj["roleRef"]["name"] = "system:node-bootstrapper"
    return [obj]


def bootstrap_token_secret(token_id: str, token_secret: str, expiration: str) -> dict[str, Any]:
    """Hub: `kube-system/bootstrap-token-<id>` (k8s.io/cluster-bootstrap token/api types.go): authentication
    only (no signing: nothing reads cluster-info), the program's one extra group, `expiration` RFC 3339 UTC.
    Made by PullJoin at apply time; the secret half never enters a stack's state. The hub's admission policy
    refuses any other content (csr_approver_docs.token_policy) and its approver deletes it an hour after creation."""
    if not re.fullmatch(r"[a-z0-9]{6}", token_id) or not re.fullmatch(r"[a-z0-9]{16}", token_secret):
        raise ValueError("a bootstrap token is [a-z0-9]{6}.[a-z0-9]{16}")
    return {
        "apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
        "metadata": {"name": f"bootstrap-token-{token_id}", "namespace": "kube-system", "labels": _labels()},
        "data": {k: _b64(v) for k, v in {
            "token-id": token_id, "token-secret": token_secret, "expiration": expiration,
            "usage-bootstrap-authentication": "true", "auth-extra-groups": BOOTSTRAP_GROUP,
            "description": "karmada-hub Pull join (one hour)"}.items()},
    }


AGENT_BOOTSTRAP_SECRET = "karmada-agent-bootstrap"


def agent_bootstrap_secret(token: str, server: str, ca_pem: str) -> dict[str, Any]:
    """Member: what the join Job reads (the token, the hub URL, the hub CA it pins); deleted once joined."""
    return _opaque_secret(AGENT_BOOTSTRAP_SECRET, AGENT_NAMESPACE, {"token": token, "server": server, "ca.crt": ca_pem})


def _role(name: str, ns: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": name, "namespace": ns},
            "rules": rules}


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


JOIN_NAME = "karmada-agent-join"
RESTART_NAME = "karmada-agent-restart"
JOIN_SCRIPT = "pull_join.py"
RESTART_SCHEDULE = "*/15 * * * *"
GENERATION_ANNOTATION = "karmada-hub.io/join-generation"
HUB_TRUST_ANNOTATION = "karmada-hub.io/hub-trust"
"""On the join Job's pod template: `hub_trust` of the hub URL and CA the member must trust, so a new one replaces the
Job and it runs again (PullJoin, replaced by the same change, has written a new bootstrap Secret by then)."""


def hub_trust(hub_url: str, hub_ca_pem: str) -> str:
    """A short fingerprint of what a Pull member trusts: the hub URL and its CA (whitespace-insensitive)."""
    material = hub_url.rstrip("/") + "\n" + "".join(hub_ca_pem.split())
    return hashlib.sha256(material.encode()).hexdigest()[:16]


def _script_pod(name: str, sa: str, argv: list[str], source: str, extra_annotations: dict[str, str] | None = None,
                restart_policy: str = "OnFailure") -> dict[str, Any]:
    """A pod template running agents/pull_join.py from the ConfigMap with the pinned Python image."""
    return {
        "metadata": {"labels": {"app": name}, "annotations": {**agent_script.pod_annotations(source),
                                                               **(extra_annotations or {})}},
        "spec": {
            "serviceAccountName": sa,
            "restartPolicy": restart_policy,
            "securityContext": _pod_security(),
            "containers": [agent_script.container(
                name.removeprefix("karmada-agent-"), JOIN_SCRIPT, argv,
                {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}},
                env=[{"name": "HOME", "value": "/tmp"}], mounts=[{"name": "tmp", "mountPath": "/tmp"}])],
            "volumes": [agent_script.volume(JOIN_NAME), {"name": "tmp", "emptyDir": {}}],
        },
    }


def join_args(cluster: str) -> list[str]:
    return ["join", f"--cluster-name={cluster}", f"--namespace={AGENT_NAMESPACE}",
            f"--bootstrap-secret={AGENT_BOOTSTRAP_SECRET}", f"--kubeconfig-secret={AGENT_KUBECONFIG_SECRET}",
            f"--cert-seconds={AGENT_CERT_SECONDS}", "--timeout=600"]


def restart_args() -> list[str]:
    return ["restart", f"--namespace={AGENT_NAMESPACE}", f"--kubeconfig-secret={AGENT_KUBECONFIG_SECRET}",
            f"--deployment={AGENT_NAME}", f"--selector=app={AGENT_NAME}"]


def join_objects(cluster: str, source: str, generation: int, trust: Any = None) -> list[dict[str, Any]]:
    """Member: the join's own service account (get both Secrets, update the kubeconfig, delete the bootstrap copy,
    create: a create cannot be limited by name), the script, and the Job.

    A new `generation` (joinGeneration), `trust` (`hub_trust` of the hub URL and CA; may be an Output) or script
    changes the Job's template, so Pulumi replaces it and it runs again (and exits at once while the member's
    credential is still good for that hub)."""
    secret = lambda names, verbs: {"apiGroups": [""], "resources": ["secrets"], "resourceNames": names,  # noqa: E731
                                   "verbs": verbs}
    rules = [secret([AGENT_KUBECONFIG_SECRET, AGENT_BOOTSTRAP_SECRET], ["get"]),
             secret([AGENT_KUBECONFIG_SECRET], ["update"]),  # a stale kubeconfig is replaced
             secret([AGENT_BOOTSTRAP_SECRET], ["delete"]),  # the token's member copy, once joined
             {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]}]
    job = {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": JOIN_NAME, "namespace": AGENT_NAMESPACE, "labels": _labels({"app": JOIN_NAME})},
        "spec": {"backoffLimit": 6, "activeDeadlineSeconds": 1800,
                 "template": _script_pod(JOIN_NAME, JOIN_NAME, join_args(cluster), source,
                                         {GENERATION_ANNOTATION: str(generation),
                                          **({HUB_TRUST_ANNOTATION: trust} if trust is not None else {})})},
    }
    return [
        _service_account(JOIN_NAME, AGENT_NAMESPACE),
        _role(JOIN_NAME, AGENT_NAMESPACE, rules),
        _binding("RoleBinding", JOIN_NAME, "Role", _sa_subject(JOIN_NAME, AGENT_NAMESPACE), ns=AGENT_NAMESPACE),
        agent_script.configmap({"name": JOIN_NAME, "namespace": AGENT_NAMESPACE, "labels": _labels()}, JOIN_SCRIPT,
                               source),
        job,
    ]


def restart_objects(source: str) -> list[dict[str, Any]]:
    """Member: every 15 minutes, roll the agent when a container runs a certificate older than the Secret's
    (the agent reads its kubeconfig only at start; certRotation rewrites the Secret). Its account may read that
    Secret and the agent's pods, and get/patch the agent Deployment, nothing else."""
    rules = [
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": [AGENT_KUBECONFIG_SECRET], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": [AGENT_NAME], "verbs": ["get", "patch"]},
    ]
    cron = {
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": RESTART_NAME, "namespace": AGENT_NAMESPACE, "labels": _labels({"app": RESTART_NAME})},
        "spec": {"schedule": RESTART_SCHEDULE, "concurrencyPolicy": "Forbid", "successfulJobsHistoryLimit": 1,
                 "failedJobsHistoryLimit": 3,
                 "jobTemplate": {"spec": {"backoffLimit": 1, "activeDeadlineSeconds": 300,
                                          "template": _script_pod(RESTART_NAME, RESTART_NAME, restart_args(), source,
                                                                  restart_policy="Never")}}},
    }
    return [
        _service_account(RESTART_NAME, AGENT_NAMESPACE),
        _role(RESTART_NAME, AGENT_NAMESPACE, rules),
        _binding("RoleBinding", RESTART_NAME, "Role", _sa_subject(RESTART_NAME, AGENT_NAMESPACE),
                 ns=AGENT_NAMESPACE),
        cron,
    ]


def pull_member_objects(cluster: str, version: str, args: list[str], source: str,
                        generation: int = 1, trust: Any = None,
                        client_env: Sequence[dict[str, str]] = ()) -> list[dict[str, Any]]:
    """Member side of a Pull join, in apply order: namespace, the agent's account (all-access in its member, as
    upstream: it applies whatever the hub propagates), the join, the agent, its PDB, the certificate pickup.

    `args` is the agent's whole flag list (`flags.agent_args`; `--karmada-kubeconfig` must be
    `AGENT_KUBECONFIG_PATH`); `source` is agents/pull_join.py. No credential is rendered here: the join makes
    the agent's key in the member and writes `karmada-kubeconfig` itself."""
    return [
        namespace(AGENT_NAMESPACE),
        _service_account(AGENT_SA, AGENT_NAMESPACE),
        _cluster_role(AGENT_NAME, _all_access_rules(), _labels()),
        _binding("ClusterRoleBinding", AGENT_NAME, "ClusterRole", _sa_subject(AGENT_SA, AGENT_NAMESPACE),
                 labels=_labels()),
        *join_objects(cluster, source, generation, trust),
        agent_deployment(cluster, version, args, client_env=client_env),
        agent_pod_disruption_budget(),
        *restart_objects(source),
    ]


def agent_deployment(cluster: str, version: str, args: list[str], replicas: int = AGENT_REPLICAS,
                     client_env: Sequence[dict[str, str]] = ()) -> dict[str, Any]:
    """Member: the karmada-agent Deployment (image `docker.io/karmada/karmada-agent:<version>`).

    The agent talks to its own member with the in-cluster SA token (so the token stays mounted) and to the hub
    with the mounted kubeconfig Secret, which the join Job writes (the pods wait for it; a missing file would make
    the agent fall back to its in-cluster config as if the member were the hub). Only `/healthz` exists on the
    probe port (no `/readyz`), for both probes. `client_env`: client-go's HTTP/2 health check, when the stack sets
    it (flags.FailoverSettings.client_env): how soon a lease renewal on a connection to a dead hub server fails.
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
                # the join writes the kubeconfig Secret in the member; karmada-agent-restart rolls the pods
                "metadata": {"labels": labels, "annotations": {rollouts.ELSEWHERE_ANNOTATION: AGENT_KUBECONFIG_SECRET}},
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
                        "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                                *client_env],
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


# ------------------------------------------------------------------------------------- CAPI management


CAPI_READER_PREFIX = "karmada-hub-"


def capi_reader_objects(stack: str, members: list[MemberConfig]) -> list[dict[str, Any]]:
    """Management cluster (not applied by the program: `hubctl capi-access <stack>` prints them for its operator):
    the one identity a stack reads its CAPI members' kubeconfigs with. A ServiceAccount `karmada-hub-<stack>` (in
    the namespace of the stack's first CAPI member) with a long-lived token Secret, and in every namespace of the
    stack's CAPI members a Role that may `get` exactly its members' `<cluster>-kubeconfig` Secrets (what
    MemberCluster's `Secret.get` reads, key `value`), bound to it. Nothing else: no list, no other Secret (not
    another region's members, not the infrastructure provider's credentials in the same namespace), so a leaked
    region config reaches its own members only (security review 2, C3). Rotate by deleting the token Secret."""
    from components.config import CapiCredentials

    capi = [m for m in members if isinstance(m.credentials, CapiCredentials)]
    if not capi:
        raise ValueError(f"stack {stack} reads no member from Cluster API")
    name = f"{CAPI_READER_PREFIX}{stack}"
    home = capi[0].credentials.namespace  # type: ignore[union-attr]
    by_ns: dict[str, list[str]] = {}
    for m in capi:
        creds = m.credentials
        assert isinstance(creds, CapiCredentials)
        by_ns.setdefault(creds.namespace, []).append(f"{creds.cluster}-kubeconfig")
    labels = {"app.kubernetes.io/part-of": "karmada-hub", "karmada-hub.io/stack": stack}
    out: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": home,
                                                                    "labels": labels}},
        {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
         "metadata": {"name": f"{name}-token", "namespace": home, "labels": labels,
                      "annotations": {"kubernetes.io/service-account.name": name}}},
    ]
    for ns in sorted(by_ns):
        out.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                    "metadata": {"name": name, "namespace": ns, "labels": labels},
                    "rules": [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": sorted(by_ns[ns]),
                               "verbs": ["get"]}]})
        out.append(_binding("RoleBinding", name, "Role", _sa_subject(name, home), ns=ns, labels=labels))
    return out
