"""`KubeObject` sends the engine what pulumi-kubernetes' generated class of the same kind sends, less its type
aliases (components/kube/objects.py).

Both are registered under the SDK's mock runtime and the RegisterResource requests compared field by field:
type token, name, parent, provider, dependencies, plugin version, secret outputs and the inputs as the provider
would receive them (secret markers included).
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest
from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockMonitor

from bench.fleet import EchoMocks
from components.kube.objects import PLUGIN_VERSION, KubeObject, apply, type_token

META = {"name": "demo", "namespace": "ns", "labels": {"app.kubernetes.io/name": "demo"}}
POD = {"metadata": {"labels": {"app": "demo"}},
       "spec": {"containers": [{"name": "c", "image": "registry.example/c:1", "args": ["--v=1"]}]}}
SELECTOR = {"matchLabels": {"app": "demo"}}
RULES = [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["demo"]}]
BINDING = {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "demo"},
           "subjects": [{"kind": "ServiceAccount", "name": "demo", "namespace": "ns"}]}
WEBHOOKS = [{"name": "demo.example.io", "admissionReviewVersions": ["v1"], "sideEffects": "None",
             "clientConfig": {"url": "https://demo.example:443/validate"}}]

# (generated class, the object's fields other than apiVersion/kind/metadata)
CASES: dict[tuple[str, str], tuple[Any, dict[str, Any]]] = {
    ("v1", "Namespace"): (k8s.core.v1.Namespace, {}),
    ("v1", "Secret"): (k8s.core.v1.Secret, {"type": "Opaque", "data": {"token": "c2VjcmV0"},
                                            "stringData": {"extra": "value"}}),
    ("v1", "ConfigMap"): (k8s.core.v1.ConfigMap, {"data": {"run.py": "print('hi')\n"}, "immutable": False}),
    ("v1", "Service"): (k8s.core.v1.Service, {"spec": {"selector": {"app": "demo"},
                                                       "ports": [{"port": 443, "targetPort": 8443}]}}),
    ("v1", "ServiceAccount"): (k8s.core.v1.ServiceAccount, {"automountServiceAccountToken": False}),
    ("v1", "PersistentVolumeClaim"): (k8s.core.v1.PersistentVolumeClaim, {"spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
    ("apps/v1", "Deployment"): (k8s.apps.v1.Deployment, {"spec": {"replicas": 2, "selector": SELECTOR,
                                                                  "template": POD}}),
    ("apps/v1", "StatefulSet"): (k8s.apps.v1.StatefulSet, {"spec": {"serviceName": "demo", "selector": SELECTOR,
                                                                    "template": POD}}),
    ("batch/v1", "CronJob"): (k8s.batch.v1.CronJob, {"spec": {"schedule": "0 3 * * *", "jobTemplate": {
        "spec": {"template": POD}}}}),
    ("policy/v1", "PodDisruptionBudget"): (k8s.policy.v1.PodDisruptionBudget, {"spec": {"maxUnavailable": 1,
                                                                                        "selector": SELECTOR}}),
    ("networking.k8s.io/v1", "NetworkPolicy"): (k8s.networking.v1.NetworkPolicy, {"spec": {
        "podSelector": SELECTOR, "policyTypes": ["Ingress"]}}),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): (k8s.rbac.v1.ClusterRole, {"rules": RULES}),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): (k8s.rbac.v1.ClusterRoleBinding, BINDING),
    ("rbac.authorization.k8s.io/v1", "Role"): (k8s.rbac.v1.Role, {"rules": RULES}),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): (k8s.rbac.v1.RoleBinding, BINDING),
    ("scheduling.k8s.io/v1", "PriorityClass"): (k8s.scheduling.v1.PriorityClass, {
        "value": 1000, "globalDefault": False, "description": "demo", "preemptionPolicy": "Never"}),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): (k8s.apiextensions.v1.CustomResourceDefinition, {
        "spec": {"group": "demo.example.io", "scope": "Namespaced",
                 "names": {"kind": "Demo", "plural": "demos", "singular": "demo"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object"}}}]}}),
    ("apiregistration.k8s.io/v1", "APIService"): (k8s.apiregistration.v1.APIService, {"spec": {
        "group": "cluster.karmada.io", "version": "v1alpha1", "groupPriorityMinimum": 2000,
        "versionPriority": 10, "service": {"name": "demo", "namespace": "ns", "port": 443}}}),
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"):
        (k8s.admissionregistration.v1.MutatingWebhookConfiguration, {"webhooks": WEBHOOKS}),
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"):
        (k8s.admissionregistration.v1.ValidatingWebhookConfiguration, {"webhooks": WEBHOOKS}),
    ("batch/v1", "Job"): (None, {"spec": {"template": POD}}),
    ("policy.karmada.io/v1alpha1", "PropagationPolicy"): (None, {"spec": {
        "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}]}}),
}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _generated(name: str, obj: dict[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """What the program registered before KubeObject: the generated class, or pulumi-kubernetes' generic
    CustomResource for a kind without one."""
    cls, _ = CASES[(obj["apiVersion"], obj["kind"])]
    fields = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    if obj["kind"] == "Secret":
        fields = {k: (pulumi.Output.secret(v) if k in ("data", "stringData") else v) for k, v in fields.items()}
    if cls is None:
        return k8s.apiextensions.CustomResource(name, api_version=obj["apiVersion"], kind=obj["kind"], opts=opts,
                                                **fields)
    return cls(name, opts=opts, **{_snake(k): v for k, v in fields.items()})


class _Capture(MockMonitor):
    def __init__(self) -> None:
        super().__init__(EchoMocks())
        self.requests: list[Any] = []

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        self.requests.append(request)
        return super().RegisterResource(request)


def _registered(make: Any, obj: dict[str, Any]) -> tuple[Any, Any]:
    """The RegisterResource request of `make(name, obj, opts)`, with a provider, a parent and a dependency."""
    monitor = _Capture()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        pulumi.runtime.settings.reset_options()
        pulumi.runtime.set_mocks(monitor.mocks, project="karmada-hub", stack="test", preview=False, monitor=monitor)
        made: dict[str, Any] = {}

        @pulumi.runtime.test
        def program() -> Any:
            provider = k8s.Provider("k8s-host", kubeconfig="{}")
            parent = pulumi.ComponentResource("karmada-hub:index:Demo", "parent")
            before = KubeObject("before", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}},
                                pulumi.ResourceOptions(provider=provider))
            made["resource"] = make("demo", obj, pulumi.ResourceOptions(
                parent=parent, provider=provider, depends_on=[before]))
            return made["resource"].urn

        program()
    finally:
        pulumi.runtime.settings.reset_options()
        loop.close()
        asyncio.set_event_loop(None)
    (request,) = [r for r in monitor.requests if r.name.startswith("demo") and r.custom]
    return request, made["resource"]


def _wire(request: Any) -> dict[str, Any]:
    return {
        "type": request.type, "name": request.name, "custom": request.custom, "parent": request.parent,
        "provider": request.provider.rsplit("::", 1)[0], "dependencies": sorted(request.dependencies),
        "version": request.version, "pluginDownloadURL": request.pluginDownloadURL,
        "additionalSecretOutputs": list(request.additionalSecretOutputs),
        "inputs": rpc.deserialize_properties(request.object, keep_unknowns=True),
        "protect": request.protect, "deleteBeforeReplace": request.deleteBeforeReplace,
        "ignoreChanges": list(request.ignoreChanges), "replaceOnChanges": list(request.replaceOnChanges),
    }


@pytest.mark.parametrize("kind", list(CASES), ids=lambda k: f"{k[0]}/{k[1]}")
def test_kube_object_registers_what_the_generated_class_registers(kind: tuple[str, str]) -> None:
    api_version, name = kind
    obj = {"apiVersion": api_version, "kind": name, "metadata": dict(META), **CASES[kind][1]}
    ours, resource = _registered(lambda n, o, opts: KubeObject(n, o, opts), obj)
    theirs, _ = _registered(_generated, obj)
    assert _wire(ours) == _wire(theirs)
    assert ours.type == type_token(api_version, name) and ours.version == PLUGIN_VERSION
    assert not ours.aliases  # the one difference: the generated classes' aliases to older API versions
    assert {f for f in obj if f != "metadata"} <= set(vars(resource))  # every top-level field is an output


def test_secret_payloads_are_secret_and_data_is_an_output_without_inputs() -> None:
    """A service-account-token Secret is applied without `data`; the cluster fills it, and the program reads it
    (components/fleet/member.py), so `data` is an output property whether or not it was an input."""
    token_secret = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
                    "metadata": {"name": "t", "namespace": "ns",
                                 "annotations": {"kubernetes.io/service-account.name": "demo"}}}
    request, resource = _registered(lambda n, o, opts: apply("demo", o, opts), token_secret)
    assert list(request.additionalSecretOutputs) == ["data", "stringData"]
    assert "data" not in rpc.deserialize_properties(request.object)
    assert isinstance(resource.output("data"), pulumi.Output)
    request, _ = _registered(lambda n, o, opts: apply("demo", o, opts), {**token_secret, "data": {"k": "dg=="}})
    assert rpc.is_rpc_secret(rpc.deserialize_properties(request.object, keep_unknowns=True)["data"])


def test_type_tokens() -> None:
    assert type_token("v1", "Secret") == "kubernetes:core/v1:Secret"
    assert type_token("apps/v1", "Deployment") == "kubernetes:apps/v1:Deployment"
    assert type_token("cluster.karmada.io/v1alpha1", "Cluster") == "kubernetes:cluster.karmada.io/v1alpha1:Cluster"
