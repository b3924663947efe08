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

import base64
from typing import Any

from components.karmada import flags
from components.kube import agent_script
from components.kube.flows import Dial, Listener, Workload
from components.kube.pod_security import NON_ROOT_UID, container_security_context
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
    files = {"ca.crt": ca_pem, "tls.crt": cert_pem, "tls.key": key_pem}
    empty = [k for k, v in files.items() if not v]
    if empty:
        raise ValueError(f"status refresher secret: empty {', '.join(empty)}")
    return {"apiVersion": "v1", "kind": "Secret", "metadata": _meta(CERT_SECRET, NAMESPACE), "type": "Opaque",
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in files.items()}}


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
    selector = {"app.kubernetes.io/name": NAME}
    probe = {"httpGet": {"path": "/healthz", "port": "health"}, "periodSeconds": 10, "timeoutSeconds": 3}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(NAME, NAMESPACE),
        "spec": {
            "replicas": REPLICAS,
            "revisionHistoryLimit": 3,
            "selector": {"matchLabels": selector},
            # One at a time and no surge: with required anti-affinity a surge pod needs a free server.
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
            "template": {
                "metadata": {"labels": dict(_LABELS), "annotations": agent_script.pod_annotations(source)},
                "spec": {
                    "automountServiceAccountToken": False,
                    "securityContext": {"runAsNonRoot": True, "runAsUser": NON_ROOT_UID, "fsGroup": NON_ROOT_UID,
                                        "seccompProfile": {"type": "RuntimeDefault"}},
                    "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": selector}, "topologyKey": "kubernetes.io/hostname"}]}},
                    "containers": [{
                        "name": NAME,
                        "image": agent_script.IMAGE,
                        "imagePullPolicy": "IfNotPresent",
                        "command": agent_script.command(SCRIPT_KEY),
                        "args": args(period_seconds),
                        "env": list(agent_script.ENV),
                        "ports": [{"name": "health", "containerPort": HEALTH_PORT, "protocol": "TCP"}],
                        "livenessProbe": {**probe, "initialDelaySeconds": 10, "failureThreshold": 3},
                        "readinessProbe": {**probe, "failureThreshold": 1},
                        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}},
                        "securityContext": container_security_context(),
                        "volumeMounts": [
                            agent_script.mount(),
                            {"name": "pki", "mountPath": CERT_DIR, "readOnly": True},
                        ],
                    }],
                    "volumes": [
                        agent_script.volume(CONFIGMAP),
                        {"name": "pki", "secret": {"secretName": CERT_SECRET, "defaultMode": 0o440}},
                    ],
                },
            },
        },
    }


def pod_disruption_budget() -> dict[str, Any]:
    """host: keep one refresher through a node drain."""
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": _meta(NAME, NAMESPACE),
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app.kubernetes.io/name": NAME}}}}


def flows() -> Workload:
    """host: its health listener (probes only) and its one dial, the in-cluster karmada-apiserver."""
    return Workload(namespace=NAMESPACE, name=NAME, pod_labels={"app.kubernetes.io/name": NAME},
                    listeners=(Listener("health", HEALTH_PORT),),
                    dials=(Dial(flags.NAMESPACE, flags.APISERVER_SERVICE, "https"),))

