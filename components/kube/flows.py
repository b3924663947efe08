"""Network flows as data: what each workload listens on and whom it dials, and the NetworkPolicies that follow.

Every workload the program runs in a policed namespace of the host cluster declares, beside its own documents,
a `Workload`: its pods (namespace + the labels that select them), its `Listener`s (every port a container
opens) and its `Dial`s (the in-cluster listeners it connects to), plus the outside address ranges allowed to
reach a listener (`external`). From the declarations alone:

- `flows()` is the list of connections that must work, and nothing else may;
- `network_policies()` renders a default-deny-ingress policy per namespace and, per workload, one policy that
  admits exactly its declared clients on exactly the declared ports. A listener nobody dials (health, metrics)
  gets no rule at all: kubelet probes come from the pod's own node, which NetworkPolicy always admits.

Adding a workload (or a new connection) is declaring it here-shaped in its own domain and listing it in
`components/trust/network_policy.py`; `tests/test_network_policies.py` computes, from the rendered policies,
who may reach what, and fails on any rendered pod or container port nobody declared; `tests/contract/test_flows.py`
fails when the declarations and the workload's runtime contract (listeners, connections) disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

NAME_LABEL = "kubernetes.io/metadata.name"
"""Set by the API server on every namespace (immutable), so a namespaceSelector on it names one namespace."""
DEFAULT_DENY = "default-deny-ingress"
POLICY_SUFFIX = "-ingress"


@dataclass(frozen=True)
class Listener:
    name: str
    port: int
    protocol: str = "TCP"


@dataclass(frozen=True)
class Dial:
    """A connection to `namespace/workload`'s listener called `listener`."""

    namespace: str
    workload: str
    listener: str


@dataclass(frozen=True)
class Workload:
    namespace: str
    name: str
    pod_labels: Mapping[str, str]
    """matchLabels that select exactly this workload's pods."""
    listeners: tuple[Listener, ...] = ()
    dials: tuple[Dial, ...] = ()
    external: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Listener name -> CIDRs outside the cluster allowed to reach it (a NodePort with externalTrafficPolicy
    Local keeps the client's address, so the policy can see it)."""
    runs_elsewhere: bool = False
    """Pods the program does not run but admits (a user's Prometheus, in its own namespace): only its dials count."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def listener(self, name: str) -> Listener:
        for listener in self.listeners:
            if listener.name == name:
                return listener
        raise KeyError(f"{self.key} has no listener {name!r} (it has {[x.name for x in self.listeners]})")


@dataclass(frozen=True, order=True)
class Flow:
    """One allowed connection: from a workload (`src` = its key) or an address range (`src` = a CIDR)."""

    src: str
    dst: str
    port: int
    protocol: str = "TCP"


def _index(workloads: Iterable[Workload]) -> dict[str, Workload]:
    out: dict[str, Workload] = {}
    for w in workloads:
        if w.key in out:
            raise ValueError(f"workload {w.key} is declared twice")
        out[w.key] = w
    return out


def flows(workloads: Sequence[Workload]) -> list[Flow]:
    """Every connection the declarations need, sorted; a dial to an undeclared workload or listener is an error."""
    by_key = _index(workloads)
    out: set[Flow] = set()
    for w in workloads:
        for dial in w.dials:
            target = by_key.get(f"{dial.namespace}/{dial.workload}")
            if target is None:
                raise ValueError(f"{w.key} dials {dial.namespace}/{dial.workload}, which nobody declared")
            listener = target.listener(dial.listener)
            out.add(Flow(w.key, target.key, listener.port, listener.protocol))
        for name, cidrs in w.external.items():
            listener = w.listener(name)
            out.update(Flow(cidr, w.key, listener.port, listener.protocol) for cidr in cidrs)
    return sorted(out)


def _meta(name: str, namespace: str) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/part-of": "karmada-hub"}}


def default_deny(namespace: str) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": _meta(DEFAULT_DENY, namespace),
            "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}


def _peer(client: Workload, namespace: str) -> dict[str, Any]:
    peer: dict[str, Any] = {"podSelector": {"matchLabels": dict(client.pod_labels)}}
    if client.namespace != namespace:
        peer["namespaceSelector"] = {"matchLabels": {NAME_LABEL: client.namespace}}
    return peer


def network_policies(workloads: Sequence[Workload], namespaces: Iterable[str]) -> list[dict[str, Any]]:
    """Default deny in each namespace, then one policy per workload there that has clients, admitting them on
    their listener's port only."""
    by_key = _index(workloads)
    flows(workloads)  # validates every dial
    out: list[dict[str, Any]] = []
    for namespace in sorted(set(namespaces)):
        out.append(default_deny(namespace))
        for w in sorted((w for w in workloads if w.namespace == namespace), key=lambda w: w.name):
            rules = []
            for listener in w.listeners:
                clients = sorted({c.key for c in workloads for d in c.dials
                                  if (d.namespace, d.workload, d.listener) == (w.namespace, w.name, listener.name)})
                peers = [_peer(by_key[c], namespace) for c in clients]
                peers += [{"ipBlock": {"cidr": cidr}} for cidr in w.external.get(listener.name, ())]
                if peers:
                    rules.append({"ports": [{"port": listener.port, "protocol": listener.protocol}], "from": peers})
            if rules:
                out.append({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                            "metadata": _meta(w.name + POLICY_SUFFIX, namespace),
                            "spec": {"podSelector": {"matchLabels": dict(w.pod_labels)}, "policyTypes": ["Ingress"],
                                     "ingress": rules}})
    return out
