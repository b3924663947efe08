"""The drill's probe service: its own namespace, a Deployment, Service, Ingress `drill.<domain>` and a
Duplicated PropagationPolicy onto exactly two members (the victim and a survivor in another region).

The image is the Kubernetes e2e `agnhost netexec` (answers 200 on `/`), already used by the runbook.
"""

from __future__ import annotations

from typing import Any

NAMESPACE = "karmada-hub-drill"
NAME = "drill"
IMAGE = "registry.k8s.io/e2e-test-images/agnhost:2.53"
PORT = 8080
LABELS = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "karmada-hub", "karmada-hub.io/drill": "true"}


def host(domain: str) -> str:
    return f"{NAME}.{domain}"


def binding_name() -> str:
    """Karmada names a template's ResourceBinding `<name>-<kind>` lower-cased (pkg/util/names GenerateBindingName)."""
    return f"{NAME}-deployment"


def documents(domain: str, victim: str, survivor: str, replicas: int = 2) -> list[dict[str, Any]]:
    meta = {"name": NAME, "namespace": NAMESPACE, "labels": dict(LABELS)}
    selector = {"app.kubernetes.io/name": NAME}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE, "labels": dict(LABELS)}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": {
            "replicas": replicas, "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": {**selector, "karmada-hub.io/drill": "true"}}, "spec": {
                "containers": [{
                    "name": "agnhost", "image": IMAGE, "args": ["netexec", f"--http-port={PORT}"],
                    "ports": [{"containerPort": PORT}],
                    "readinessProbe": {"httpGet": {"path": "/", "port": PORT}, "periodSeconds": 2},
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}},
                    "securityContext": {"allowPrivilegeEscalation": False, "runAsNonRoot": True,
                                        "runAsUser": 65532, "capabilities": {"drop": ["ALL"]},
                                        "seccompProfile": {"type": "RuntimeDefault"}},
                }]}}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": {
            "selector": selector, "ports": [{"port": 80, "targetPort": PORT, "protocol": "TCP"}]}},
        {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
         "metadata": {**meta, "annotations": {"karmada-hub.io/probe-path": "/"}}, "spec": {
             "ingressClassName": "nginx",
             "rules": [{"host": host(domain), "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {
                 "service": {"name": NAME, "port": {"number": 80}}}}]}}]}},
        {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy", "metadata": meta, "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": NAME},
                                  {"apiVersion": "v1", "kind": "Service", "name": NAME},
                                  {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": NAME}],
            "placement": {"clusterAffinity": {"clusterNames": sorted([victim, survivor])},
                          "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}}},
    ]
