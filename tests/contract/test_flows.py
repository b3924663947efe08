"""The NetworkPolicy flow list (components/kube/flows.py declarations, listed in components/trust/network_policy.py)
agrees with the runtime contract (docs/upstream-contract.md) both ways, on the host's policed namespaces:

- every socket a container's binary opens (contract Listeners, at the rendered flags) is a declared listener of
  its workload, and every declared listener is one the binary opens;
- every in-cluster connection a binary opens (contract Connections, resolved from the rendered container and
  followed through its Service to the pods and target port) is a declared dial, and every declared dial between
  workloads is one a binary opens.

So a workload that adds a listener or a dial in its contract and forgets its flow declaration (or the reverse)
fails here; tests/test_network_policies.py then holds the rendered NetworkPolicies to the declarations.
"""

from __future__ import annotations

from components.fleet import csr_approver_docs
from components.kube import flows
from components.kube.contract import Listener, hostport
from components.trust import network_policy
from tests.contract import checks
from tests.contract.fleet import Container, Fleet
from tests.support.tools import load_stack

STACK = {"dev": "dev", "prod": "prod-hub"}

Flow = tuple[str, str, int]


def _key(c: Container) -> str:
    return f"{c.pod.namespace}/{c.pod.owner.name}"


def _policed(fleet: Fleet) -> tuple[list[flows.Workload], list[str]]:
    if fleet.name == "dev-hetzner":
        from tests.conftest import to_hetzner_mode
        from tests.support.tools import stack_values

        raw, _ = stack_values("dev")
        to_hetzner_mode(raw["dns"])
        config = load_stack("dev", dns=raw["dns"])
    else:
        config = load_stack(STACK[fleet.name])
    prefix = "karmada-scheduler-estimator-"
    estimators = sorted(o.name.removeprefix(prefix) for o in fleet.where("host", "Deployment")
                        if o.name.startswith(prefix))
    approver = any(o.name == csr_approver_docs.NAME for o in fleet.where("host", "Deployment"))
    return network_policy.host_workloads(config, estimators, approver), network_policy.namespaces(config)


LOOPBACK = ("localhost", "127.0.0.1", "[::1]")


def _loopback(c: Container, listener: Listener) -> bool:
    """Bound to the pod's loopback (a sidecar's socket): no NetworkPolicy sees it."""
    view, flag = c.view(), listener.source_flag
    raw = (view.env(flag) if listener.port_from == "env-hostport" else view.flag(flag)) if flag else None
    value = listener.default if raw is None else raw
    if listener.port_from in ("hostport", "env-hostport"):
        bound = hostport(value)
        return bound is not None and bound[0] in LOOPBACK
    return False


def contract_listeners(fleet: Fleet, policed: list[str]) -> dict[str, set[int]]:
    """Every port a policed binary opens on the pod's address, per workload."""
    out: dict[str, set[int]] = {}
    for c in fleet.containers():
        if c.pod.api == "host" and c.pod.namespace in policed:
            out.setdefault(_key(c), set()).update(port for listener, port, _ in checks._listening(c)
                                                  if not _loopback(c, listener))
    return out


def contract_dials(fleet: Fleet, policed: list[str]) -> set[Flow]:
    """(source workload, destination workload, target port) for every in-cluster connection a policed binary
    opens to a policed pod (localhost sidecars stay in the pod; the hub's public name is not a pod dial)."""
    out: set[Flow] = set()
    for c in fleet.containers():
        if c.pod.api != "host" or c.pod.namespace not in policed or c.contract is None:
            continue
        for conn in c.contract.connections:
            if conn.external or conn.resolve is None:
                continue
            for ep in conn.resolve(c.view()):
                named = checks._svc_name(ep.host)
                if named is None:
                    continue
                name, ns, pod_name = named
                services = fleet.where("host", "Service", name, ns)
                if not services or ns not in policed:
                    continue
                backends, target, why = checks._service_backends(fleet, "host", services[0].body, ep.port, pod_name)
                assert not why, f"{c.where}: {why}"
                out |= {(_key(c), _key(b), int(target)) for b in backends if target is not None}
    return out


def declared_dials(workloads: list[flows.Workload]) -> set[Flow]:
    """Dials between workloads the program runs (a user's Prometheus has no contract here: its scrape targets are
    checked against the listeners in tests/test_monitoring.py)."""
    elsewhere = {w.key for w in workloads if w.runs_elsewhere}
    return {(f.src, f.dst, f.port) for f in flows.flows(workloads)
            if "/" in f.src and not f.src[0].isdigit() and f.src not in elsewhere}


def test_listeners_agree_with_the_contract(fleet: Fleet) -> None:
    workloads, policed = _policed(fleet)
    declared = {w.key: {x.port for x in w.listeners} for w in workloads if not w.runs_elsewhere}
    assert contract_listeners(fleet, policed) == declared


def test_dials_agree_with_the_contract(fleet: Fleet) -> None:
    workloads, policed = _policed(fleet)
    got, want = contract_dials(fleet, policed), declared_dials(workloads)
    assert sorted(got - want) == [] and sorted(want - got) == [], (sorted(got - want), sorted(want - got))


def test_the_comparison_is_not_vacuous(dev_fleet: Fleet) -> None:
    _, policed = _policed(dev_fleet)
    got = contract_dials(dev_fleet, policed)
    apiserver = "karmada-system/karmada-apiserver"
    assert {(apiserver, "karmada-system/etcd", 2379), (apiserver, "karmada-system/karmada-webhook", 8443),
            (apiserver, "karmada-system/karmada-aggregated-apiserver", 443),
            ("karmada-system/karmada-scheduler", "karmada-system/karmada-scheduler-estimator-dev-fsn1-a", 10352),
            ("karmada-system/karmada-controller-manager", apiserver, 5443)} <= got, sorted(got)


def test_an_undeclared_dial_and_an_unopened_listener_are_found(dev_fleet: Fleet) -> None:
    import dataclasses

    workloads, policed = _policed(dev_fleet)
    scheduler = next(w for w in workloads if w.key == "karmada-system/karmada-scheduler")
    fewer = [dataclasses.replace(w, dials=w.dials[:1]) if w is scheduler else w for w in workloads]
    got = contract_dials(dev_fleet, policed)
    assert ("karmada-system/karmada-scheduler", "karmada-system/karmada-scheduler-estimator-dev-fsn1-a", 10352) in (
        got - declared_dials(fewer))

    def metrics_elsewhere(f: Fleet) -> None:
        obj = f.one("host", "Deployment", "karmada-scheduler").body
        c = obj["spec"]["template"]["spec"]["containers"][0]
        c["args"] = [a if not a.startswith("--metrics-bind-address") else "--metrics-bind-address=$(POD_IP):9090"
                     for a in c["args"]]

    listeners = contract_listeners(dev_fleet.mutated(metrics_elsewhere), policed)
    declared = {w.key: {x.port for x in w.listeners} for w in workloads}
    assert listeners["karmada-system/karmada-scheduler"] - declared["karmada-system/karmada-scheduler"] == {9090}
