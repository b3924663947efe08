"""NetworkPolicy semantics for tests: may this source reach this pod on this port?

Implements `networking.k8s.io/v1` as the API documents it (k8s.io/api v0.35.3 `networking/v1/types.go`,
vendored at karmada v1.18.2): a pod is isolated for ingress once any policy whose `policyTypes` include
Ingress selects it (policyTypes defaults to Ingress, plus Egress when egress rules exist); traffic to an
isolated pod is allowed if it comes from the pod's own node, or matches at least one ingress rule of one
selecting policy. A rule matches when one of its `ports` matches (none listed: every port; `port` absent:
every port of the protocol; a named port resolves against the destination's container ports; `endPort`
makes a range; protocol defaults to TCP) and one of its `from` peers matches (none listed: every source).
A peer is an `ipBlock` (cidr minus `except`), or a `podSelector` (in the policy's namespace), or a
`namespaceSelector` (every pod there), or both selectors (pods matching both). Label selectors support
matchLabels and matchExpressions In/NotIn/Exists/DoesNotExist; `{}` selects everything. Namespaces carry
the automatic `kubernetes.io/metadata.name` label. An ipBlock is matched against any source address,
pods' included (what the spec leaves to the implementation is resolved towards *allowing*, so a test that
finds no extra flow holds for the stricter implementations too).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Pod:
    namespace: str
    labels: Mapping[str, str]
    ip: str
    ports: Mapping[str, tuple[int, str]] = field(default_factory=dict)
    """Container port name -> (number, protocol), for named ports in policies."""
    name: str = ""


@dataclass(frozen=True)
class Address:
    """Traffic from outside the cluster (after a NodePort with externalTrafficPolicy Local: the client's IP)."""

    ip: str


@dataclass(frozen=True)
class Node:
    """Traffic from the destination pod's own node (kubelet probes)."""


Source = Pod | Address | Node


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    if selector is None:
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise ValueError(f"unknown selector operator {op}")
    return True


def policy_types(spec: Mapping[str, Any]) -> list[str]:
    if spec.get("policyTypes"):
        return list(spec["policyTypes"])
    return ["Ingress", *(["Egress"] if spec.get("egress") else [])]


def _port_matches(ports: Sequence[Mapping[str, Any]] | None, dst: Pod, port: int, protocol: str) -> bool:
    if not ports:
        return True
    for p in ports:
        if p.get("protocol", "TCP") != protocol:
            continue
        wanted = p.get("port")
        if wanted is None:
            return True
        if isinstance(wanted, str) and not wanted.isdigit():
            named = dst.ports.get(wanted)
            if named is not None and named == (port, protocol):
                return True
            continue
        lo = int(wanted)
        hi = int(p.get("endPort", lo))
        if lo <= port <= hi:
            return True
    return False


def _peer_matches(peer: Mapping[str, Any], policy_ns: str, src: Source,
                  namespace_labels: Mapping[str, Mapping[str, str]]) -> bool:
    if "ipBlock" in peer:
        if isinstance(src, Node):
            return False
        addr = ipaddress.ip_address(src.ip)
        block = peer["ipBlock"]
        if addr not in ipaddress.ip_network(block["cidr"]):
            return False
        return not any(addr in ipaddress.ip_network(e) for e in block.get("except") or [])
    if not isinstance(src, Pod):
        return False
    ns_sel, pod_sel = peer.get("namespaceSelector"), peer.get("podSelector")
    if ns_sel is None and pod_sel is None:
        raise ValueError(f"empty peer {peer}")
    if ns_sel is None:
        in_namespace = src.namespace == policy_ns
    else:
        in_namespace = selector_matches(ns_sel, namespace_labels.get(src.namespace, {}))
    return in_namespace and selector_matches(pod_sel, src.labels)


def allowed(policies: Iterable[Mapping[str, Any]], namespace_labels: Mapping[str, Mapping[str, str]], src: Source,
            dst: Pod, port: int, protocol: str = "TCP") -> bool:
    selecting = [p for p in policies
                 if p["metadata"].get("namespace", "default") == dst.namespace
                 and selector_matches(p["spec"].get("podSelector") or {}, dst.labels)
                 and "Ingress" in policy_types(p["spec"])]
    if not selecting:
        return True
    if isinstance(src, Node):
        return True
    for policy in selecting:
        ns = policy["metadata"].get("namespace", "default")
        for rule in policy["spec"].get("ingress") or []:
            if not _port_matches(rule.get("ports"), dst, port, protocol):
                continue
            peers = rule.get("from")
            if not peers or any(_peer_matches(peer, ns, src, namespace_labels) for peer in peers):
                return True
    return False


def namespace_labels(namespaces: Iterable[Mapping[str, Any]], extra: Iterable[str] = ()) -> dict[str, dict[str, str]]:
    """Labels as the API server stores them: the rendered ones plus `kubernetes.io/metadata.name`."""
    out: dict[str, dict[str, str]] = {}
    for ns in namespaces:
        name = ns["metadata"]["name"]
        out[name] = {**(ns["metadata"].get("labels") or {}), "kubernetes.io/metadata.name": name}
    for name in extra:
        out.setdefault(name, {"kubernetes.io/metadata.name": name})
    return out


def pod_templates(objects: Iterable[Mapping[str, Any]]) -> list[tuple[str, Mapping[str, Any]]]:
    """(`namespace/name`, pod template) of every workload object: Deployments, StatefulSets, DaemonSets, Jobs,
    CronJobs."""
    out = []
    for obj in objects:
        kind = obj["kind"]
        if kind in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
            template = obj["spec"]["template"]
        elif kind == "CronJob":
            template = obj["spec"]["jobTemplate"]["spec"]["template"]
        else:
            continue
        out.append((f"{obj['metadata'].get('namespace', 'default')}/{obj['metadata']['name']}", template))
    return out


def container_ports(template: Mapping[str, Any]) -> dict[str, tuple[int, str]]:
    ports = {}
    spec = template["spec"]
    for c in [*(spec.get("initContainers") or []), *spec["containers"]]:
        for p in c.get("ports") or []:
            ports[p.get("name") or str(p["containerPort"])] = (int(p["containerPort"]), p.get("protocol", "TCP"))
    return ports
