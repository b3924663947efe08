"""Turn a Kubernetes object (a plain dict from a pure document function) into its typed Pulumi resource.

Documents are built and tested as plain data; this is the one place that maps `apiVersion`/`kind`
onto pulumi_kubernetes classes, so every component applies objects the same way. Kinds without a
generated class (Karmada CRs, the aggregated `Cluster`) become `CustomResource`s.
"""

from __future__ import annotations

import re
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

_CLASSES: dict[tuple[str, str], Any] = {
    ("v1", "Namespace"): k8s.core.v1.Namespace,
    ("v1", "Secret"): k8s.core.v1.Secret,
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
    ("v1", "Service"): k8s.core.v1.Service,
    ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount,
    ("v1", "PersistentVolumeClaim"): k8s.core.v1.PersistentVolumeClaim,
    ("apps/v1", "Deployment"): k8s.apps.v1.Deployment,
    ("apps/v1", "StatefulSet"): k8s.apps.v1.StatefulSet,
    ("batch/v1", "CronJob"): k8s.batch.v1.CronJob,
    ("policy/v1", "PodDisruptionBudget"): k8s.policy.v1.PodDisruptionBudget,
    ("networking.k8s.io/v1", "NetworkPolicy"): k8s.networking.v1.NetworkPolicy,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): k8s.rbac.v1.ClusterRole,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): k8s.rbac.v1.ClusterRoleBinding,
    ("rbac.authorization.k8s.io/v1", "Role"): k8s.rbac.v1.Role,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): k8s.rbac.v1.RoleBinding,
    ("scheduling.k8s.io/v1", "PriorityClass"): k8s.scheduling.v1.PriorityClass,
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): k8s.apiextensions.v1.CustomResourceDefinition,
    ("apiregistration.k8s.io/v1", "APIService"): k8s.apiregistration.v1.APIService,
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"):
        k8s.admissionregistration.v1.MutatingWebhookConfiguration,
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"):
        k8s.admissionregistration.v1.ValidatingWebhookConfiguration,
}
_SECRET_FIELDS = ("data", "stringData")


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def logical_name(prefix: str, obj: dict[str, Any]) -> str:
    """`<prefix>-<kind>-<namespace>-<name>`: unique per API server, stable across runs."""
    meta = obj["metadata"]
    parts = [prefix, obj["kind"].lower(), meta.get("namespace", ""), meta["name"]]
    return "-".join(p for p in parts if p).replace(":", "-").replace(".", "-")


def apply(prefix: str, obj: Any, opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """Create the resource for `obj` (whose values may be Outputs). Secret payloads are always secret."""
    api_version, kind = obj["apiVersion"], obj["kind"]
    name = logical_name(prefix, obj)
    cls = _CLASSES.get((api_version, kind))
    fields = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    if kind == "Secret":
        fields = {k: (pulumi.Output.secret(v) if k in _SECRET_FIELDS else v) for k, v in fields.items()}
    if cls is None:
        return k8s.apiextensions.CustomResource(name, api_version=api_version, kind=kind, opts=opts, **fields)
    return cls(name, opts=opts, **{_snake(k): v for k, v in fields.items()})


def apply_rendered(prefix: str, render: Any, args: list[Any], opts: pulumi.ResourceOptions,
                   placeholder: str = "placeholder") -> pulumi.CustomResource:
    """Apply `render(*args)` where args are Outputs (tokens, kubeconfigs): the object's kind and name come
    from rendering placeholders, every other field from the real values once they are known."""
    skeleton = render(*[placeholder] * len(args))
    rendered = pulumi.Output.all(*args).apply(lambda values: render(*values))
    obj = {k: (skeleton[k] if k in ("apiVersion", "kind", "metadata") else rendered.apply(lambda o, k=k: o[k]))
           for k in skeleton}
    return apply(prefix, obj, opts)


def with_secret_checksum(obj: dict[str, Any], secrets: list[Any]) -> dict[str, Any]:
    """The workload with the checksum of exactly the Secrets its pods mount (`kube.rollouts`).

    `secrets` are the Secret documents as applied (values may be Outputs, or each document an Output, as for
    `apply_rendered`). The digest is unsecret: it is a sha256 over material that always includes a key or a
    random token, and a readable value keeps previews showing *that* a pod template changes."""
    from components.kube import rollouts

    def name(doc: Any) -> str:
        if isinstance(doc, pulumi.Output):
            raise TypeError("pass (name, Output[document]) for rendered Secrets")
        return doc[0] if isinstance(doc, tuple) else doc["metadata"]["name"]

    names = rollouts.require_exact(obj, [name(d) for d in secrets])
    if not names:
        return obj
    docs = [d[1] if isinstance(d, tuple) else d for d in secrets]
    digest = pulumi.Output.unsecret(pulumi.Output.from_input(docs).apply(rollouts.checksum_of))
    return rollouts.annotated(obj, names, digest)
