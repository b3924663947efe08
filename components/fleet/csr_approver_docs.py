"""The hub's agent CSR approver and the bootstrap-token admission policy: who may become a Pull agent.

Two API servers are involved:

- host (the hub's k3s, `karmada-system`): the approver Deployment (agents/agent_csr_approver.py), its script
  ConfigMap, its client certificate Secret (Karmada CA), a PDB;
- karmada: its RBAC (`system:karmada:agent-csr-approver`: read CSRs, write their approval for the
  kube-apiserver-client signer, nothing else) and a ValidatingAdmissionPolicy over bootstrap-token Secrets.

The approver replaces karmada-controller-manager's agentcsrapproving (switched off by `--controllers`,
flags/controller_manager.py): a join is approved only for the member whose token asked, a renewal only by the agent
itself, and every member's bootstrap token is deleted an hour after its creation. The admission policy makes a
token's content the hub's rule, not the writer's: whoever writes `kube-system/bootstrap-token-*` (a region identity
may write its own members' by name), the Secret must authenticate only (no signing usage), carry exactly the
program's one group and an expiration (for tokencleaner), and keep its content once created. Plain dicts; the
certificate arrives as an argument.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from components.fleet import member_docs as docs
from components.karmada import flags
from components.kube import agent_script
from components.kube.flows import Dial, Listener, Workload

NAME = "karmada-agent-csr-approver"
NAMESPACE = flags.NAMESPACE
USER = "system:karmada:agent-csr-approver"
"""CN of its client certificate; the karmada-apiserver RBAC below names this user."""
SCRIPT_KEY = "agent_csr_approver.py"
CONFIGMAP = NAME
CERT_SECRET = f"{NAME}-karmada-client"
CERT_DIR = "/etc/karmada-hub/pki"
HEALTH_PORT = 8080
REPLICAS = 2
"""Two replicas on different servers, no leader election: an approval is an update with the CSR's
resourceVersion, so the second replica's is refused (409) and it sees the decision on its next pass."""
PERIOD_SECONDS = 5
SIGNER = "kubernetes.io/kube-apiserver-client"

MAX_TOKEN_SECONDS = 3600
"""The longest a bootstrap token may live after its creation (the admission policy's limit)."""
TOKEN_POLICY = "karmada-hub-bootstrap-tokens"

_LABELS = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "karmada-hub"}


def _meta(name: str, namespace: str | None = None, labels: Mapping[str, str] = _LABELS) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": dict(labels)}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def karmada_rbac(members: list[str]) -> list[dict[str, Any]]:
    """karmada-apiserver: list and watch CSRs, update their approval, approve for the client signer only
    (k8s.io/kubernetes v1.35.4 plugin/pkg/admission/certificates/approval/admission.go: approving needs `approve`
    on `signers` named by the signer, IsAuthorizedForSignerName); get and delete
    the Pull members' bootstrap-token Secrets by name (the hour's cleanup), no other Secret."""
    name = "karmada-hub:agent-csr-approver"
    tokens = [f"bootstrap-token-{docs.token_id(m)}" for m in sorted(members)]
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": _meta(name, "kube-system"),
         "rules": [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": tokens,
                    "verbs": ["get", "delete"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": _meta(name, "kube-system"),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": _meta(name), "rules": [
            {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"],
             "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests/approval"],
             "verbs": ["update"]},
            {"apiGroups": ["certificates.k8s.io"], "resources": ["signers"], "resourceNames": [SIGNER],
             "verbs": ["approve"]},
        ]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": _meta(name),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER}]},
    ]


def member_args(members: list[str]) -> list[str]:
    """`--member=<member>:<token id>` for every Pull member, sorted: the one binding of token to member."""
    return [f"--member={m}:{docs.token_id(m)}" for m in sorted(members)]


def args(members: list[str], server: str | None = None) -> list[str]:
    if not members:
        raise ValueError("the approver serves at least one Pull member")
    return [
        f"--server={server or flags.apiserver_url()}",
        f"--ca-file={CERT_DIR}/ca.crt",
        f"--cert-file={CERT_DIR}/tls.crt",
        f"--key-file={CERT_DIR}/tls.key",
        *member_args(members),
        f"--max-token-seconds={MAX_TOKEN_SECONDS}",
        f"--period={PERIOD_SECONDS}",
        f"--health-port={HEALTH_PORT}",
    ]


def script_configmap(source: str) -> dict[str, Any]:
    return agent_script.configmap(_meta(CONFIGMAP, NAMESPACE), SCRIPT_KEY, source)


def cert_secret(ca_pem: str, cert_pem: str, key_pem: str) -> dict[str, Any]:
    """host: the Karmada CA and the approver's client certificate and key."""
    return agent_script.client_cert_secret(_meta(CERT_SECRET, NAMESPACE), ca_pem, cert_pem, key_pem,
                                           "agent CSR approver secret")


def deployment(members: list[str], source: str) -> dict[str, Any]:
    probe = {"httpGet": {"path": "/healthz", "port": "health"}, "periodSeconds": 10, "timeoutSeconds": 3}
    container = agent_script.container(
        "approver", SCRIPT_KEY, args(members),
        {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}},
        ports=[{"name": "health", "containerPort": HEALTH_PORT, "protocol": "TCP"}],
        liveness={**probe, "initialDelaySeconds": 10, "failureThreshold": 3},
        readiness={**probe, "failureThreshold": 1},
        mounts=[{"name": "pki", "mountPath": CERT_DIR, "readOnly": True}])
    volumes = [agent_script.volume(CONFIGMAP),
               {"name": "pki", "secret": {"secretName": CERT_SECRET, "defaultMode": 0o440}}]
    return agent_script.deployment(_meta(NAME, NAMESPACE), {"app.kubernetes.io/name": NAME}, REPLICAS,
                                   agent_script.pod_template(_LABELS, source, [container], volumes))


def pod_disruption_budget() -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": _meta(NAME, NAMESPACE),
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app.kubernetes.io/name": NAME}}}}


def flows() -> Workload:
    """host: its health listener (probes only) and its one dial, the in-cluster karmada-apiserver."""
    return Workload(namespace=NAMESPACE, name=NAME, pod_labels={"app.kubernetes.io/name": NAME},
                    listeners=(Listener("health", HEALTH_PORT),),
                    dials=(Dial(flags.NAMESPACE, flags.APISERVER_SERVICE, "https"),))


# --------------------------------------------------------------------------------------- token admission


def _b64(value: str) -> str:
    return base64.b64encode(value.encode()).decode()


def token_policy() -> list[dict[str, Any]]:
    """karmada-apiserver: a ValidatingAdmissionPolicy (GA since Kubernetes 1.30) and its binding over every
    create and update of a `bootstrap.kubernetes.io/token` Secret in kube-system, by anyone (system:masters
    included: admission is not authorization). CEL sees a Secret's `data` values as their base64 text (checked on
    kube-apiserver v1.35.4) and has no base64 decoder there, so values are compared in that form, and a token's
    lifetime is not read from its `expiration`: the approver deletes every member's token an hour after its
    creation (`creationTimestamp`, which the writer does not choose), and tokencleaner deletes it at its
    expiration if that is earlier. A token's content is fixed once created."""
    match = {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                                "resources": ["secrets"]}],
             "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}
    data = "has(object.data) && "
    validations = [
        {"expression": data + "'expiration' in object.data",
         "message": "a bootstrap token carries data.expiration (RFC 3339), so tokencleaner removes it",
         "reason": "Invalid"},
        {"expression": data + f"'auth-extra-groups' in object.data && object.data['auth-extra-groups'] == "
                              f"'{_b64(docs.BOOTSTRAP_GROUP)}'",
         "message": f"a bootstrap token's only extra group is {docs.BOOTSTRAP_GROUP}", "reason": "Forbidden"},
        {"expression": data + "'usage-bootstrap-authentication' in object.data && "
                              f"object.data['usage-bootstrap-authentication'] == '{_b64('true')}' && "
                              "object.data.all(k, !k.startsWith('usage-') || k == 'usage-bootstrap-authentication')",
         "message": "a bootstrap token authenticates and does nothing else (no usage-bootstrap-signing)",
         "reason": "Forbidden"},
        {"expression": "request.operation != 'UPDATE' || (has(object.data) == has(oldObject.data) && "
                       "(!has(object.data) || object.data == oldObject.data))",
         "message": "a bootstrap token's content is fixed once created (delete it and make a new one)",
         "reason": "Forbidden"},
    ]
    return [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
         "metadata": _meta(TOKEN_POLICY, labels={"app.kubernetes.io/part-of": "karmada-hub"}),
         "spec": {"failurePolicy": "Fail", "matchConstraints": match,
                  "matchConditions": [{"name": "bootstrap-token", "expression": "has(object.type) && "
                                       "object.type == 'bootstrap.kubernetes.io/token'"}],
                  "validations": validations}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
         "metadata": _meta(TOKEN_POLICY, labels={"app.kubernetes.io/part-of": "karmada-hub"}),
         "spec": {"policyName": TOKEN_POLICY, "validationActions": ["Deny"]}},
    ]
