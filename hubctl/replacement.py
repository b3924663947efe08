"""Which input changes replace a resource instead of updating it, per provider, as the provider decides it.

`hubctl diff` works on two offline plans, without the engine or the providers, so it reproduces their
decision from these tables (each cites the upstream source it was read from). A real `pulumi preview`
remains the authority; `hubctl rollout` shows the engine's own answer for every stack before `up`.

Paths are input paths as plan.json spells them (camelCase, `.` between keys); a rule `spec.selector` matches
`spec.selector` and everything under it. Beyond the tables the engine itself replaces a resource whose
`replaceOnChanges` option matches, and every resource whose explicit provider is replaced.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_HCLOUD = "terraform-provider-hcloud v1.68.0"
_TLS = "terraform-provider-tls v4.2.1 internal/provider"
_RANDOM = "terraform-provider-random v3.9.0 internal/provider"
_K8S = "pulumi-kubernetes v4.32.0 provider/pkg/provider/diff.go forceNew"


@dataclass(frozen=True)
class Rule:
    paths: tuple[str, ...]
    source: str


PROVIDER_RULES: dict[str, Rule] = {
    # hcloud: SDKv2 `ForceNew: true` and plugin-framework `RequiresReplace()` plan modifiers.
    "hcloud:index/server:Server": Rule(("image", "location", "userData", "sshKeys", "datacenter"),
                                       f"{_HCLOUD} internal/server/resource.go"),
    "hcloud:index/loadBalancer:LoadBalancer": Rule(("location", "networkZone"),
                                                   f"{_HCLOUD} internal/loadbalancer/resource.go"),
    "hcloud:index/loadBalancerService:LoadBalancerService": Rule(
        ("loadBalancerId", "protocol", "listenPort"), f"{_HCLOUD} internal/loadbalancer/resource_service.go"),
    "hcloud:index/loadBalancerTarget:LoadBalancerTarget": Rule(
        ("loadBalancerId", "serverId", "labelSelector", "ip"), f"{_HCLOUD} internal/loadbalancer/resource_target.go"),
    "hcloud:index/loadBalancerNetwork:LoadBalancerNetwork": Rule(
        ("loadBalancerId", "networkId", "subnetId", "ip"), f"{_HCLOUD} internal/loadbalancer/resource_network.go"),
    "hcloud:index/network:Network": Rule(("ipRange",), f"{_HCLOUD} internal/network/resource.go"),
    "hcloud:index/networkSubnet:NetworkSubnet": Rule(("networkId", "type", "networkZone", "ipRange", "vswitchId"),
                                                     f"{_HCLOUD} internal/network/resource_subnet.go"),
    "hcloud:index/sshKey:SshKey": Rule(("publicKey",), f"{_HCLOUD} internal/sshkey/resource.go"),
    "hcloud:index/zoneRrset:ZoneRrset": Rule(("zone", "name", "type"), f"{_HCLOUD} internal/zonerrset/resource.go"),
    "hcloud:index/placementGroup:PlacementGroup": Rule((), f"{_HCLOUD} internal/placementgroup/resource.go"),
    "hcloud:index/firewall:Firewall": Rule((), f"{_HCLOUD} internal/firewall/resource.go"),
    # tls: every RequiresReplace / requireReplaceIfStateContainsPEMString attribute.
    "tls:index/privateKey:PrivateKey": Rule(("algorithm", "rsaBits", "ecdsaCurve"),
                                            f"{_TLS}/resource_private_key.go"),
    "tls:index/certRequest:CertRequest": Rule(("privateKeyPem", "dnsNames", "ipAddresses", "uris", "subject"),
                                              f"{_TLS}/resource_cert_request.go"),
    "tls:index/locallySignedCert:LocallySignedCert": Rule(
        ("caCertPem", "caPrivateKeyPem", "certRequestPem", "validityPeriodHours", "allowedUses", "isCaCertificate",
         "maxPathLength", "setSubjectKeyId"), f"{_TLS}/resource_locally_signed_cert.go"),
    "tls:index/selfSignedCert:SelfSignedCert": Rule(
        ("privateKeyPem", "validityPeriodHours", "allowedUses", "dnsNames", "ipAddresses", "uris", "isCaCertificate",
         "maxPathLength", "setSubjectKeyId", "setAuthorityKeyId", "subject"), f"{_TLS}/resource_self_signed_cert.go"),
    # random: RequiresReplace (and keepers' RequiresReplaceIfValuesNotNull).
    "random:index/randomPassword:RandomPassword": Rule(
        ("keepers", "length", "special", "upper", "lower", "number", "numeric", "minNumeric", "minUpper", "minLower",
         "minSpecial", "overrideSpecial"), f"{_RANDOM}/resource_password.go"),
    "random:index/randomBytes:RandomBytes": Rule(("keepers", "length"), f"{_RANDOM}/resource_bytes.go"),
}

_SELECTOR = ("spec.selector",)
K8S_FORCE_NEW: dict[tuple[str, str], tuple[str, ...]] = {
    ("apps/v1", "Deployment"): _SELECTOR,
    ("apps/v1", "DaemonSet"): _SELECTOR,
    ("apps/v1", "StatefulSet"): ("spec.podManagementPolicy", "spec.revisionHistoryLimit", "spec.selector",
                                 "spec.serviceName", "spec.volumeClaimTemplates"),
    ("batch/v1", "Job"): ("spec.completions", "spec.parallelism", "spec.selector", "spec.template"),
    ("v1", "PersistentVolumeClaim"): ("spec.accessModes", "spec.selector", "spec.storageClassName", "spec.volumeName"),
    ("v1", "ResourceQuota"): ("spec.scopes",),
    ("v1", "Service"): ("spec.clusterIP",),
    ("v1", "Secret"): ("type",),
    ("policy/v1beta1", "PodDisruptionBudget"): ("spec",),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): ("roleRef",),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): ("roleRef",),
    ("storage.k8s.io/v1", "StorageClass"): ("parameters", "provisioner"),
}
"""pulumi-kubernetes' forceNew table (kinds this program can render); policy/v1 PDBs and CronJobs are not in it,
so they update in place. `metadata.name` and `metadata.namespace` replace every kind."""
K8S_ALWAYS = ("metadata.name", "metadata.namespace")

READINESS_RULE = Rule(("url", "caPem"), "components/hetzner/readiness.py _ReadinessProvider.diff")
"""The readiness gate (a dynamic resource) replaces on a new endpoint or CA and ignores every other input."""

PROVIDER_CASCADE_SOURCE = ("pulumi-kubernetes v4.32.0 provider.go DiffConfig (an unknown kubeconfig replaces the "
                           "provider) and pulumi step_generator.go (a replaced provider replaces its resources)")


def _matches(path: str, rule: str) -> bool:
    return path == rule or path.startswith((rule + ".", rule + "["))


def is_readiness_gate(resource_type: str, inputs: Mapping[str, Any]) -> bool:
    return resource_type == "pulumi-python:dynamic:Resource" and "url" in inputs and "caPem" in inputs


def _mutable(provider_inputs: Mapping[str, Any] | None, flag: str) -> bool:
    value = (provider_inputs or {}).get(flag)
    return value is True or str(value).lower() == "true"


def kubernetes_rules(inputs: Mapping[str, Any], provider_inputs: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The force-new paths of one Kubernetes object (provider.go forceNewProperties)."""
    api, kind = str(inputs.get("apiVersion", "")), str(inputs.get("kind", ""))
    paths = list(K8S_ALWAYS)
    immutable = inputs.get("immutable") is True
    if api == "v1" and kind == "Secret":
        if not _mutable(provider_inputs, "enableSecretMutable") or immutable:
            paths += ["type", "stringData", "data"]
        else:
            paths += ["type"]
    elif api == "v1" and kind == "ConfigMap":
        if not _mutable(provider_inputs, "enableConfigMapMutable") or immutable:
            paths += ["binaryData", "data"]
    else:
        paths += K8S_FORCE_NEW.get((api, kind), ())
    return tuple(paths)


def replace_reason(resource_type: str, path: str, inputs: Mapping[str, Any], options: Mapping[str, Any],
                   provider_inputs: Mapping[str, Any] | None = None) -> str | None:
    """Why a change at `path` replaces the resource (a short citation), or None when it updates in place."""
    for rule in options.get("replaceOnChanges") or ():
        if rule == "*" or _matches(path, str(rule)):
            return f"replaceOnChanges {rule}"
    if resource_type.startswith("kubernetes:") and not resource_type.startswith("kubernetes:providers"):
        for rule in kubernetes_rules(inputs, provider_inputs):
            if _matches(path, rule):
                kind = inputs.get("kind", "object")
                if rule in ("data", "stringData", "binaryData"):
                    return f"{kind} {rule} is immutable to pulumi-kubernetes unless enable{kind}Mutable; {_K8S}"
                return f"{kind} {rule}: {_K8S}"
        return None
    if is_readiness_gate(resource_type, inputs):
        return next((f"{r}: {READINESS_RULE.source}" for r in READINESS_RULE.paths if _matches(path, r)), None)
    rule = PROVIDER_RULES.get(resource_type)
    if rule is None:
        return None
    for candidate in rule.paths:
        if _matches(path, candidate):
            return f"{candidate}: {rule.source}"
    return None


def ignored_by_provider(resource_type: str, path: str, inputs: Mapping[str, Any]) -> str | None:
    """Changes a provider's diff deliberately does not act on (the readiness gate's inputs besides url/caPem)."""
    if is_readiness_gate(resource_type, inputs) and not any(_matches(path, r) for r in READINESS_RULE.paths):
        return f"the gate only acts on url and caPem ({READINESS_RULE.source})"
    return None


def ignore_changes_match(path: str, patterns: Any) -> str | None:
    """The `ignoreChanges` entry that covers `path` (`spec.replicas`, `a[*].b`, `metadata.labels["x"]`)."""
    for raw in patterns or ():
        pattern = str(raw).replace('["', ".").replace('"]', "").replace("[*]", "")
        if pattern in ("*", "") or _matches(_strip_keys(path), pattern):
            return str(raw)
    return None


def _strip_keys(path: str) -> str:
    """`spec.containers[name=etcd].image` -> `spec.containers.image` (list keys do not appear in ignoreChanges)."""
    out, depth = [], 0
    for ch in path:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)
