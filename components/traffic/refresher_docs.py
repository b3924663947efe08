"""Status refresher documents: the hub-side loop that makes a dead member's address leave DNS.

Karmada v1.18.2 alone never removes an unreachable member's address from an Ingress/Service
template's aggregated status (docs/traffic-failover.md §2, with the upstream lines). The refresher
(`agents/status_refresher.py`) closes that link: it annotates templates whose status a stuck Work of
an unready cluster still feeds, which makes Karmada re-aggregate without it; external-dns then drops
the address. Two API servers are involved:

- host (the hub's k3s): the Deployment, its ConfigMap (the script), its client certificate Secret, PDB;
- karmada: the ClusterRole/Binding for its user, `system:karmada:status-refresher`.

Plain dicts, no Pulumi; the certificate arrives as an argument.
"""

from __future__ import annotations

from typing import Any

from components.karmada import flags
from components.kube import agent_script
from components.kube.flows import Dial, Listener, Workload
from components.traffic.docs import EXTERNAL_DNS_NAMESPACE

NAME = "status-refresher"
NAMESPACE = EXTERNAL_DNS_NAMESPACE
"""Beside external-dns: both are the DNS half of failover, and neither needs the host API."""
USER = "system:karmada:status-refresher"
"""CN of its client certificate; the karmada-apiserver RBAC below names this user."""
SCRIPT_KEY = "status_refresher.py"
CONFIGMAP = NAME
CERT_SECRET = f"{NAME}-karmada-client"
CERT_DIR = "/etc/karmada-hub/pki"
HEALTH_PORT = 8080
REPLICAS = 2
"""Two replicas on different servers: a hub node loss must not pause the refresher for the ~5 min it
takes Kubernetes to reschedule. They need no leader election: both compute the same annotation value,
and a merge patch that changes nothing is a no-op in the API server."""

_LABELS = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "karmada-hub"}


def _meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": dict(_LABELS)}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def karmada_rbac() -> list[dict[str, Any]]:
    """karmada-apiserver: read Clusters and Works, get and patch the two template kinds it refreshes."""
    name = "karmada-hub:status-refresher"
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _meta(name),
            "rules": [
                {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters"], "verbs": ["get", "list"]},
                {"apiGroups": ["work.karmada.io"], "resources": ["works"], "verbs": ["list"]},
                {"apiGroups": [""], "resources": ["services"], "verbs": ["get", "patch"]},
                {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses"], "verbs": ["get", "patch"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta(name),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER}],
        },
    ]


def script_configmap(source: str) -> dict[str, Any]:
    """host: the program itself."""
    return agent_script.configmap(_meta(CONFIGMAP, NAMESPACE), SCRIPT_KEY, source)


def cert_secret(ca_pem: str, cert_pem: str, key_pem: str) -> dict[str, Any]:
    """host: the Karmada CA and the refresher's client certificate and key."""
    return agent_script.client_cert_secret(_meta(CERT_SECRET, NAMESPACE), ca_pem, cert_pem, key_pem,
                                           "status refresher secret")


def args(period_seconds: int, server: str | None = None) -> list[str]:
    """The command line of agents/status_refresher.py; `server` defaults to the in-cluster karmada-apiserver."""
    if period_seconds < 1:
        raise ValueError("period_seconds must be >= 1")
    return [
        f"--server={server or flags.apiserver_url()}",
        f"--ca-file={CERT_DIR}/ca.crt",
        f"--cert-file={CERT_DIR}/tls.crt",
        f"--key-file={CERT_DIR}/tls.key",
        f"--period={period_seconds}",
        f"--health-port={HEALTH_PORT}",
    ]


def deployment(period_seconds: int, source: str) -> dict[str, Any]:
    """host: two replicas on different servers. `source` only feeds the template's checksum annotation, so
    a new script version rolls the pods (a ConfigMap change alone would not)."""
    probe = {"httpGet": {"path": "/healthz", "port": "health"}, "periodSeconds": 10, "timeoutSeconds": 3}
    container = agent_script.container(
        NAME, SCRIPT_KEY, args(period_seconds),
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
    """host: keep one refresher through a node drain."""
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": _meta(NAME, NAMESPACE),
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app.kubernetes.io/name": NAME}}}}


def flows() -> Workload:
    """host: its health listener (probes only) and its one dial, the in-cluster karmada-apiserver."""
    return Workload(namespace=NAMESPACE, name=NAME, pod_labels={"app.kubernetes.io/name": NAME},
                    listeners=(Listener("health", HEALTH_PORT),),
                    dials=(Dial(flags.NAMESPACE, flags.APISERVER_SERVICE, "https"),))

