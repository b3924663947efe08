"""KarmadaBootstrap: what must exist inside the karmada-apiserver before Karmada can work.

Namespaces, the CRDs of the pinned release (with the conversion webhook on the two binding CRDs),
the `v1alpha1.cluster.karmada.io` APIService and its ExternalName Service, the webhook
configurations (fail-closed, so they are created only after karmada-webhook is serving), RBAC
upstream installs, and the ClusterTaintPolicy that turns a NotReady member into a NoExecute taint.
The pure document functions are here; the component only orders them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi

from components.karmada import crds, flags
from components.kube.objects import apply
from components.kube.pod_security import RESTRICTED

WEBHOOK_BASE = f"https://karmada-webhook.{flags.NAMESPACE}.svc:443"

_MUTATING = (
    ("propagationpolicy.karmada.io", "policy.karmada.io", "propagationpolicies", ("CREATE", "UPDATE"), "Namespaced"),
    ("clusterpropagationpolicy.karmada.io", "policy.karmada.io", "clusterpropagationpolicies", ("CREATE", "UPDATE"),
     "Cluster"),
    ("overridepolicy.karmada.io", "policy.karmada.io", "overridepolicies", ("CREATE", "UPDATE"), "Namespaced"),
    ("resourcebinding.karmada.io", "work.karmada.io", "resourcebindings", ("CREATE",), "Namespaced"),
    ("clusterresourcebinding.karmada.io", "work.karmada.io", "clusterresourcebindings", ("CREATE",), "Cluster"),
    ("work.karmada.io", "work.karmada.io", "works", ("CREATE", "UPDATE"), "Namespaced"),
    ("autoscaling.karmada.io", "autoscaling.karmada.io", "federatedhpas", ("CREATE", "UPDATE"), "Namespaced"),
    ("multiclusterservice.karmada.io", "networking.karmada.io", "multiclusterservices", ("CREATE", "UPDATE"),
     "Namespaced"),
)
_VALIDATING = (
    ("propagationpolicy.karmada.io", "policy.karmada.io", "propagationpolicies", ("CREATE", "UPDATE"), "Namespaced"),
    ("clusterpropagationpolicy.karmada.io", "policy.karmada.io", "clusterpropagationpolicies", ("CREATE", "UPDATE"),
     "Cluster"),
    ("overridepolicy.karmada.io", "policy.karmada.io", "overridepolicies", ("CREATE", "UPDATE"), "Namespaced"),
    ("clusteroverridepolicy.karmada.io", "policy.karmada.io", "clusteroverridepolicies", ("CREATE", "UPDATE"),
     "Cluster"),
    ("config.karmada.io", "config.karmada.io", "resourceinterpreterwebhookconfigurations", ("CREATE", "UPDATE"),
     "Cluster"),
    ("resourceinterpretercustomization.karmada.io", "config.karmada.io", "resourceinterpretercustomizations",
     ("CREATE", "UPDATE"), "Cluster"),
    ("federatedresourcequota.karmada.io", "policy.karmada.io", "federatedresourcequotas", ("CREATE", "UPDATE"),
     "Namespaced"),
    ("multiclusteringress.karmada.io", "networking.karmada.io", "multiclusteringresses", ("CREATE", "UPDATE"),
     "Namespaced"),
    ("federatedhpa.karmada.io", "autoscaling.karmada.io", "federatedhpas", ("CREATE", "UPDATE"), "Namespaced"),
    ("cronfederatedhpa.karmada.io", "autoscaling.karmada.io", "cronfederatedhpas", ("CREATE", "UPDATE"),
     "Namespaced"),
    ("multiclusterservice.karmada.io", "networking.karmada.io", "multiclusterservices", ("CREATE", "UPDATE"),
     "Namespaced"),
    ("resourcebinding.karmada.io", "work.karmada.io", "resourcebindings", ("CREATE", "UPDATE"), "Namespaced"),
    ("clustertaintpolicy.karmada.io", "policy.karmada.io", "clustertaintpolicies", ("CREATE", "UPDATE"), "Cluster"),
)
"""Webhook name, group, resource, operations, scope (artifacts/deploy/webhook-configuration.yaml, v1.18.2)."""


def _path(kind: str, resource: str) -> str:
    singular = {"propagationpolicies": "propagationpolicy", "clusterpropagationpolicies": "clusterpropagationpolicy",
                "overridepolicies": "overridepolicy", "clusteroverridepolicies": "clusteroverridepolicy",
                "resourcebindings": "resourcebinding", "clusterresourcebindings": "clusterresourcebinding",
                "works": "work", "federatedhpas": "federatedhpa", "cronfederatedhpas": "cronfederatedhpa",
                "multiclusterservices": "multiclusterservice", "multiclusteringresses": "multiclusteringress",
                "federatedresourcequotas": "federatedresourcequota",
                "resourceinterpreterwebhookconfigurations": "resourceinterpreterwebhookconfiguration",
                "resourceinterpretercustomizations": "resourceinterpretercustomization",
                "clustertaintpolicies": "clustertaintpolicy"}[resource]
    return f"/{kind}-{singular}"


def _webhook(name: str, group: str, resource: str, ops: Sequence[str], scope: str, kind: str,
             ca_bundle: Any) -> dict[str, Any]:
    return {
        "name": name,
        "rules": [{"operations": list(ops), "apiGroups": [group], "apiVersions": ["*"], "resources": [resource],
                   "scope": scope}],
        "clientConfig": {"url": WEBHOOK_BASE + _path(kind, resource), "caBundle": ca_bundle},
        "failurePolicy": "Fail",
        "sideEffects": "NoneOnDryRun" if (kind, resource) == ("validate", "resourcebindings") else "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 10 if resource == "resourceinterpretercustomizations" else 3,
    }


def webhook_configurations(ca_bundle: Any) -> list[dict[str, Any]]:
    """MutatingWebhookConfiguration `mutating-config` and ValidatingWebhookConfiguration `validating-config`."""
    mutating = [_webhook(*w, kind="mutate", ca_bundle=ca_bundle) for w in _MUTATING]
    validating = [_webhook(*w, kind="validate", ca_bundle=ca_bundle) for w in _VALIDATING]
    validating.append({
        "name": "resourcedeletionprotection.karmada.io",
        "rules": [{"operations": ["DELETE"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"],
                   "scope": "*"}],
        "objectSelector": {"matchExpressions": [
            {"key": "resourcetemplate.karmada.io/deletion-protected", "operator": "Exists"}]},
        "clientConfig": {"url": WEBHOOK_BASE + "/validate-resourcedeletionprotection", "caBundle": ca_bundle},
        "failurePolicy": "Fail", "sideEffects": "None", "admissionReviewVersions": ["v1"], "timeoutSeconds": 3,
    })
    meta = {"labels": {"app.kubernetes.io/part-of": "karmada"}}
    return [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
         "metadata": {"name": "mutating-config", **meta}, "webhooks": mutating},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
         "metadata": {"name": "validating-config", **meta}, "webhooks": validating},
    ]


def aggregated_api(ca_bundle: Any) -> list[dict[str, Any]]:
    """APIService v1alpha1.cluster.karmada.io and the ExternalName Service it points at."""
    svc = "karmada-aggregated-apiserver"
    return [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": svc, "namespace": flags.NAMESPACE},
         "spec": {"type": "ExternalName", "externalName": f"{svc}.{flags.NAMESPACE}.svc.{flags.CLUSTER_DOMAIN}"}},
        {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
         "metadata": {"name": "v1alpha1.cluster.karmada.io", "labels": {"app.kubernetes.io/part-of": "karmada"}},
         "spec": {"group": "cluster.karmada.io", "version": "v1alpha1", "groupPriorityMinimum": 2000,
                  "versionPriority": 10, "caBundle": ca_bundle,
                  "service": {"name": svc, "namespace": flags.NAMESPACE, "port": 443}}},
    ]


def namespaces() -> list[dict[str, Any]]:
    """karmada-apiserver's own namespaces (Karmada never propagates them). No pod runs in the karmada-apiserver;
    they carry Pod Security `restricted` like every namespace the program creates for itself."""
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n, "labels": dict(RESTRICTED)}}
            for n in (flags.NAMESPACE, flags.CLUSTER_NAMESPACE)]


def rbac() -> list[dict[str, Any]]:
    """Upstream's aggregation roles and cluster-proxy-admin, plus a lease Role for kube-controller-manager's
    leader election in karmada-system. The bootstrap ClusterRole `system:kube-controller-manager` already
    grants that in every namespace in the Kubernetes versions this was read in; the Role is kept because the
    rule could not be re-read at the pinned v1.35.2 (docs/upstream-contract.md), and it grants nothing more."""
    groups = ["autoscaling.karmada.io", "multicluster.x-k8s.io", "networking.karmada.io", "policy.karmada.io",
              "work.karmada.io"]
    read = ["get", "list", "watch"]
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "karmada-view", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
         "rules": [{"apiGroups": groups, "resources": ["*"], "verbs": read}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "karmada-edit", "labels": {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
         "rules": [{"apiGroups": groups, "resources": ["*"],
                    "verbs": [*read, "create", "update", "patch", "delete", "deletecollection"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "cluster-proxy-admin"},
         "rules": [{"apiGroups": ["cluster.karmada.io"], "resources": ["clusters/proxy"], "verbs": ["*"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "cluster-proxy-admin"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-proxy-admin"},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:admin"}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": "kube-controller-manager-leader-election", "namespace": flags.NAMESPACE},
         "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                    "verbs": ["get", "create", "update"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "kube-controller-manager-leader-election", "namespace": flags.NAMESPACE},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                     "name": "kube-controller-manager-leader-election"},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                       "name": "system:kube-controller-manager"}]},
    ]


def descheduler_rbac(user: str) -> list[dict[str, Any]]:
    """Least privilege for karmada-descheduler in karmada-apiserver, from the calls it makes at v1.18.2 (upstream
    gives it an admin certificate instead):

    - resourcebindings get/list/watch/update: its informer, and `Update` of `spec.clusters` (descheduler.go
      updateScheduleResult);
    - clusters get/list/watch: its informer and the startup List (establishEstimatorConnections);
    - services get in karmada-system: the estimator address lookup (pkg/estimator/client/service.go resolveCluster)
      — NotFound makes it dial `<prefix>-<cluster>.karmada-system.svc.cluster.local`; Forbidden would abort the
      connection, so this verb is required even though no such Service exists there;
    - events create/patch/update: record.EventSinkImpl on the binding and on its resource template;
    - leases get/create/update on `karmada-descheduler` in karmada-system: leader election (create cannot be
      limited by name, so create is namespace-wide)."""
    rbac_api = "rbac.authorization.k8s.io/v1"
    name = "karmada-descheduler"
    subject = [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]
    labels = {"app.kubernetes.io/part-of": "karmada"}
    return [
        {"apiVersion": rbac_api, "kind": "ClusterRole", "metadata": {"name": name, "labels": labels},
         "rules": [
             {"apiGroups": ["work.karmada.io"], "resources": ["resourcebindings"],
              "verbs": ["get", "list", "watch", "update"]},
             {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters"], "verbs": ["get", "list", "watch"]},
             {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch", "update"]},
         ]},
        {"apiVersion": rbac_api, "kind": "ClusterRoleBinding", "metadata": {"name": name, "labels": labels},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
         "subjects": subject},
        {"apiVersion": rbac_api, "kind": "Role", "metadata": {"name": name, "namespace": flags.NAMESPACE,
                                                              "labels": labels},
         "rules": [
             {"apiGroups": [""], "resources": ["services"], "verbs": ["get"]},
             {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
             {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": [name],
              "verbs": ["get", "update"]},
         ]},
        {"apiVersion": rbac_api, "kind": "RoleBinding", "metadata": {"name": name, "namespace": flags.NAMESPACE,
                                                                     "labels": labels},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
         "subjects": subject},
    ]


class KarmadaBootstrap(pulumi.ComponentResource):
    """Objects inside the karmada-apiserver, ordered so that one first `pulumi up` converges."""

    ready: list[pulumi.Resource]
    """What the controllers and members must wait for (CRDs, APIService, webhook configurations)."""

    def __init__(self, name: str, version: str, provider: pulumi.ProviderResource, ca_bundle: pulumi.Output[str],
                 webhook: pulumi.Resource, aggregated_apiserver: pulumi.Resource,
                 extra: Sequence[dict[str, Any]] = (), opts: pulumi.ResourceOptions | None = None,
                 protect: bool = False) -> None:
        super().__init__("karmada-hub:index:KarmadaBootstrap", name, None, opts)
        base = pulumi.ResourceOptions(parent=self, provider=provider)
        # protect (hub.protect): deleting a CRD deletes every object of its kind; a namespace, everything in it
        kept = pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(protect=protect))
        ns = [apply("karmada", o, kept) for o in namespaces()]
        after_ns = pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(depends_on=ns))
        kept_after_ns = pulumi.ResourceOptions.merge(after_ns, pulumi.ResourceOptions(protect=protect))
        crd_resources = [apply("karmada", crds.with_conversion_webhook(crd, ca_bundle), kept_after_ns)
                         for crd in crds.load_crds(version)]
        for obj in rbac():
            apply("karmada", obj, after_ns)
        svc_obj, apiservice_obj = aggregated_api(ca_bundle)
        ext_svc = apply("karmada", svc_obj, after_ns)
        apiservice = apply("karmada", apiservice_obj, pulumi.ResourceOptions.merge(
            after_ns, pulumi.ResourceOptions(depends_on=[ext_svc, aggregated_apiserver])))
        mutating_obj, validating_obj = webhook_configurations(ca_bundle)
        # Fail-closed webhooks: only once karmada-webhook serves (its Deployment is awaited to Ready).
        after_webhook = pulumi.ResourceOptions.merge(after_ns, pulumi.ResourceOptions(
            depends_on=[*crd_resources, webhook]))
        mutating = apply("karmada", mutating_obj, after_webhook)
        validating = apply("karmada", validating_obj, after_webhook)
        self.ready = [*crd_resources, apiservice, mutating, validating]
        after_all = pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(depends_on=self.ready))
        self.extra = [apply("karmada", obj, after_all) for obj in extra]
        self.register_outputs({"crds": len(crd_resources)})
