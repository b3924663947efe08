"""NetworkPolicies on the host cluster: from the rendered policies, who may reach which pod on which port.

The reachability matrix is computed with NetworkPolicy's own semantics (`tests/support/netpol.py`) over every
rendered pod on the host, two intruder pods (one in `default`, one in `karmada-system` with labels no component
has), addresses inside and outside each allowed range and another pod address, against every container port
of every pod in a policed namespace plus a port nobody opens. It must equal the declared flow list
(`components/kube/flows.flows` over `components/trust/network_policy.host_workloads`) both ways: every needed
connection allowed, nothing else. Every rendered pod in a policed namespace must be declared, with exactly its
container ports. Mutated policies (default deny removed, a rule dropped, a selector widened, the deny turned
egress-only) and a mutated flow list must each fail the comparison.
"""

from __future__ import annotations

import copy
import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pytest

from components.fleet import csr_approver_docs
from components.kube import flows
from components.trust import network_policy
from tests.support import netpol
from tests.support.rendered import objects
from tests.support.tools import load_stack

PROBE_PORT = 65000
"""A port no container opens: nothing may reach it."""

Cell = tuple[str, str, int]
"""(source: workload key or address, destination workload key, port)."""


def _host(plan: Any) -> list[dict[str, Any]]:
    return [o for t, o in objects(plan) if t == "host"]


def _policies(host: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [dict(o) for o in host if o["kind"] == "NetworkPolicy"]


def _pods(host: Sequence[Mapping[str, Any]]) -> dict[str, netpol.Pod]:
    pods = {}
    for i, (key, template) in enumerate(netpol.pod_templates(host)):
        ns = key.split("/", 1)[0]
        pods[key] = netpol.Pod(namespace=ns, labels=dict(template["metadata"]["labels"]), ip=f"10.42.{i}.10",
                               ports=netpol.container_ports(template), name=key)
    return pods


INTRUDERS = {
    "default/intruder": netpol.Pod(namespace="default", labels={"app": "intruder"}, ip="10.42.200.1"),
    "karmada-system/debug": netpol.Pod(namespace="karmada-system", labels={"app": "debug"}, ip="10.42.200.2"),
}


def _addresses(declared: Iterable[flows.Flow]) -> list[str]:
    """One address inside each allowed range, plus ones inside none: the internet, another pod, another node."""
    out = {"192.0.2.250", "10.42.250.9", "10.43.0.1"}
    for f in declared:
        try:
            net = ipaddress.ip_network(f.src)
        except ValueError:
            continue  # a workload, not a range
        out.add(str(net.network_address + (1 if net.num_addresses > 1 else 0)))
    return sorted(out)


def reachability(policies: Sequence[Mapping[str, Any]], ns_labels: Mapping[str, Mapping[str, str]],
                 pods: Mapping[str, netpol.Pod], addresses: Sequence[str], policed: Iterable[str]) -> set[Cell]:
    """Every (source, destination, port) the policies allow, destinations in the policed namespaces only."""
    sources: dict[str, netpol.Source] = {**pods, **INTRUDERS, **{a: netpol.Address(a) for a in addresses}}
    out: set[Cell] = set()
    for dst_key, dst in pods.items():
        if dst.namespace not in policed:
            continue
        for port in sorted({p for p, _ in dst.ports.values()} | {PROBE_PORT}):
            for src_key, src in sources.items():
                if netpol.allowed(policies, ns_labels, src, dst, port):  # src == dst: another replica
                    out.add((src_key, dst_key, port))
    return out


def expected(declared: Iterable[flows.Flow], addresses: Sequence[str]) -> set[Cell]:
    out: set[Cell] = set()
    for f in declared:
        try:
            net = ipaddress.ip_network(f.src)
        except ValueError:
            out.add((f.src, f.dst, f.port))
            continue
        out.update((a, f.dst, f.port) for a in addresses if ipaddress.ip_address(a) in net)
    return out


def _setup(plan: Any, stack: str) -> tuple[list[dict[str, Any]], dict[str, dict[str, str]], dict[str, netpol.Pod],
                                           list[flows.Flow], list[str], list[str]]:
    config = load_stack(stack)
    host = _host(plan)
    prefix = "karmada-scheduler-estimator-"
    estimators = sorted(o["metadata"]["name"].removeprefix(prefix) for o in host
                        if o["kind"] == "Deployment" and o["metadata"]["name"].startswith(prefix))
    approver = any(o["kind"] == "Deployment" and o["metadata"]["name"] == csr_approver_docs.NAME for o in host)
    workloads = network_policy.host_workloads(config, estimators, approver)
    declared = flows.flows(workloads)
    policed = network_policy.namespaces(config)
    elsewhere = [w for w in workloads if w.runs_elsewhere]  # a user's Prometheus: stand-in pods with its labels
    ns_labels = netpol.namespace_labels([o for o in host if o["kind"] == "Namespace"],
                                        extra=["default", *(w.namespace for w in elsewhere)])
    pods = _pods(host)
    for i, w in enumerate(elsewhere):
        pods[w.key] = netpol.Pod(namespace=w.namespace, labels=dict(w.pod_labels), ip=f"10.42.210.{i + 1}", name=w.key)
    return _policies(host), ns_labels, pods, declared, _addresses(declared), policed


def _diff(got: set[Cell], want: set[Cell]) -> list[str]:
    return ([f"missing {c}" for c in sorted(want - got)] + [f"extra {c}" for c in sorted(got - want)])


@pytest.fixture(params=["dev", "prod-hub"])
def rendered(request: pytest.FixtureRequest, rendered_dev: Any, rendered_prod_hub: Any) -> tuple[Any, str]:
    return (rendered_dev if request.param == "dev" else rendered_prod_hub), request.param


# ------------------------------------------------------------------------------------------ the real plans


def test_reachability_equals_the_declared_flows_both_ways(rendered: tuple[Any, str]) -> None:
    plan, stack = rendered
    policies, ns_labels, pods, declared, addresses, policed = _setup(plan, stack)
    assert {p["metadata"]["namespace"] for p in policies if p["metadata"]["name"] == flows.DEFAULT_DENY} == set(policed)
    got = reachability(policies, ns_labels, pods, addresses, policed)
    assert _diff(got, expected(declared, addresses)) == []
    # what the flow list says, spelled out for the core of the control plane
    etcd_clients = {s for s, d, p in got if d == "karmada-system/etcd" and p == 2379}
    assert etcd_clients >= {"karmada-system/karmada-apiserver", "karmada-system/karmada-aggregated-apiserver"}
    # etcd's plain-HTTP metrics: the node (probes) and, with monitoring on, the user's Prometheus only
    assert {s for s, d, p in got if d == "karmada-system/etcd" and p == 2381} == {"monitoring/prometheus"}
    assert ("karmada-system/karmada-apiserver", "karmada-system/karmada-webhook", 8443) in got
    assert not any(s in INTRUDERS for s, _, _ in got)


def test_every_rendered_pod_in_a_policed_namespace_is_declared_with_its_ports(rendered: tuple[Any, str]) -> None:
    plan, stack = rendered
    config = load_stack(stack)
    _, _, pods, _, _, policed = _setup(plan, stack)
    estimators = [k.rsplit("karmada-scheduler-estimator-", 1)[1] for k in pods if "scheduler-estimator-" in k]
    approver = any(k.endswith("/" + csr_approver_docs.NAME) for k in pods)
    declared = {w.key: w for w in network_policy.host_workloads(config, estimators, approver)}
    problems = []
    for key, pod in pods.items():
        if pod.namespace not in policed:
            continue
        workload = declared.get(key)
        if workload is None:
            problems.append(f"{key}: no flow declaration (declare it, list it in components/trust/network_policy.py)")
            continue
        selected = [k for k, p in pods.items() if p.namespace == pod.namespace
                    and netpol.selector_matches({"matchLabels": dict(workload.pod_labels)}, p.labels)]
        if selected != [key]:
            problems.append(f"{key}: its declared pod labels select {selected}")
        if {p for p, _ in pod.ports.values()} != {x.port for x in workload.listeners}:
            problems.append(f"{key}: container ports {sorted(p for p, _ in pod.ports.values())} != declared "
                            f"{sorted(x.port for x in workload.listeners)}")
    assert problems == []
    rendered = {k for k in declared if not declared[k].runs_elsewhere}
    assert rendered <= set(pods), f"declared but not rendered: {sorted(rendered - set(pods))}"


def test_probes_from_the_node_always_pass(rendered: tuple[Any, str]) -> None:
    plan, stack = rendered
    policies, ns_labels, pods, _, _, _ = _setup(plan, stack)
    for pod in pods.values():
        for port, _ in pod.ports.values():
            assert netpol.allowed(policies, ns_labels, netpol.Node(), pod, port)


# ------------------------------------------------------------------------------------------ mutations


def _mutated_diff(plan: Any, stack: str, mutate: Any) -> list[str]:
    policies, ns_labels, pods, declared, addresses, policed = _setup(plan, stack)
    policies = copy.deepcopy(policies)
    mutate(policies)
    return _diff(reachability(policies, ns_labels, pods, addresses, policed), expected(declared, addresses))


def _named(policies: list[dict[str, Any]], name: str, ns: str = "karmada-system") -> dict[str, Any]:
    return next(p for p in policies if p["metadata"]["name"] == name and p["metadata"]["namespace"] == ns)


def test_without_default_deny_unpoliced_pods_are_open(rendered_dev: Any) -> None:
    def drop(policies: list[dict[str, Any]]) -> None:
        policies.remove(_named(policies, flows.DEFAULT_DENY))

    diff = _mutated_diff(rendered_dev, "dev", drop)
    # the descheduler has no clients (nobody dials or scrapes it), so only the default deny closes it
    assert "extra ('default/intruder', 'karmada-system/karmada-descheduler', 10358)" in diff
    assert all(d.startswith("extra") for d in diff)


def test_an_egress_only_deny_isolates_nothing(rendered_dev: Any) -> None:
    def egress(policies: list[dict[str, Any]]) -> None:
        _named(policies, flows.DEFAULT_DENY)["spec"]["policyTypes"] = ["Egress"]

    assert "extra ('default/intruder', 'karmada-system/karmada-descheduler', 10358)" in _mutated_diff(
        rendered_dev, "dev", egress)


def test_a_dropped_rule_is_a_missing_flow(rendered_dev: Any) -> None:
    def drop_client_rule(policies: list[dict[str, Any]]) -> None:
        etcd = _named(policies, "etcd-ingress")
        etcd["spec"]["ingress"] = [r for r in etcd["spec"]["ingress"] if r["ports"][0]["port"] != 2379]

    diff = _mutated_diff(rendered_dev, "dev", drop_client_rule)
    assert "missing ('karmada-system/karmada-apiserver', 'karmada-system/etcd', 2379)" in diff


def test_a_widened_selector_is_an_extra_flow(rendered_dev: Any) -> None:
    def widen(policies: list[dict[str, Any]]) -> None:
        etcd = _named(policies, "etcd-ingress")
        etcd["spec"]["ingress"][0]["from"][0] = {"podSelector": {}}

    diff = _mutated_diff(rendered_dev, "dev", widen)
    assert "extra ('karmada-system/debug', 'karmada-system/etcd', 2379)" in diff
    assert "extra ('default/intruder', 'karmada-system/etcd', 2379)" not in diff  # podSelector alone: same namespace


def test_a_missing_port_list_opens_every_port(rendered_dev: Any) -> None:
    def no_ports(policies: list[dict[str, Any]]) -> None:
        del _named(policies, "karmada-webhook-ingress")["spec"]["ingress"][0]["ports"]

    assert ("extra ('karmada-system/karmada-apiserver', 'karmada-system/karmada-webhook', 8080)"
            in _mutated_diff(rendered_dev, "dev", no_ports))


def test_an_undeclared_need_is_reported_missing(rendered_dev: Any) -> None:
    policies, ns_labels, pods, declared, addresses, policed = _setup(rendered_dev, "dev")
    wanted = expected(declared, addresses) | {("karmada-system/karmada-scheduler", "karmada-system/etcd", 2379)}
    assert _diff(reachability(policies, ns_labels, pods, addresses, policed), wanted) == [
        "missing ('karmada-system/karmada-scheduler', 'karmada-system/etcd', 2379)"]


# ------------------------------------------------------------------------------- the semantics themselves


NS_LABELS = netpol.namespace_labels([{"metadata": {"name": "a", "labels": {"team": "x"}}},
                                     {"metadata": {"name": "b"}}])
DST = netpol.Pod("a", {"app": "db"}, "10.42.0.2", ports={"sql": (5432, "TCP"), "dns": (53, "UDP")})


def _policy(spec: dict[str, Any], ns: str = "a") -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": ns}, "spec": spec}


def test_semantics_isolation_and_defaults() -> None:
    client = netpol.Pod("a", {"app": "web"}, "10.42.0.3")
    assert netpol.allowed([], NS_LABELS, client, DST, 5432)  # nothing selects it: open
    deny = _policy({"podSelector": {}})  # policyTypes default to Ingress
    assert not netpol.allowed([deny], NS_LABELS, client, DST, 5432)
    assert netpol.allowed([deny], NS_LABELS, netpol.Node(), DST, 5432)
    egress_only = _policy({"podSelector": {}, "egress": [{}], "policyTypes": ["Egress"]})
    assert netpol.allowed([egress_only], NS_LABELS, client, DST, 5432)
    with_egress = _policy({"podSelector": {}, "egress": [{}]})  # Ingress and Egress by default
    assert not netpol.allowed([with_egress], NS_LABELS, client, DST, 5432)
    other_ns = _policy({"podSelector": {}}, ns="b")
    assert netpol.allowed([other_ns], NS_LABELS, client, DST, 5432)
    open_rule = _policy({"podSelector": {}, "ingress": [{}]})
    assert netpol.allowed([open_rule], NS_LABELS, netpol.Address("192.0.2.1"), DST, 1)


def test_semantics_ports() -> None:
    client = netpol.Pod("a", {"app": "web"}, "10.42.0.3")
    named = _policy({"podSelector": {}, "ingress": [{"ports": [{"port": "sql"}]}]})
    assert netpol.allowed([named], NS_LABELS, client, DST, 5432)
    assert not netpol.allowed([named], NS_LABELS, client, DST, 5433)
    udp = _policy({"podSelector": {}, "ingress": [{"ports": [{"port": 53, "protocol": "UDP"}]}]})
    assert netpol.allowed([udp], NS_LABELS, client, DST, 53, "UDP")
    assert not netpol.allowed([udp], NS_LABELS, client, DST, 53, "TCP")
    ranged = _policy({"podSelector": {}, "ingress": [{"ports": [{"port": 5000, "endPort": 6000}]}]})
    assert netpol.allowed([ranged], NS_LABELS, client, DST, 5432)
    assert not netpol.allowed([ranged], NS_LABELS, client, DST, 6001)
    any_tcp = _policy({"podSelector": {}, "ingress": [{"ports": [{"protocol": "TCP"}]}]})
    assert netpol.allowed([any_tcp], NS_LABELS, client, DST, 1) and not netpol.allowed(
        [any_tcp], NS_LABELS, client, DST, 53, "UDP")


def test_semantics_peers() -> None:
    web_a = netpol.Pod("a", {"app": "web"}, "10.42.0.3")
    web_b = netpol.Pod("b", {"app": "web"}, "10.42.1.3")
    other_b = netpol.Pod("b", {"app": "batch"}, "10.42.1.4")
    same_ns = _policy({"podSelector": {}, "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "web"}}}]}]})
    assert netpol.allowed([same_ns], NS_LABELS, web_a, DST, 5432)
    assert not netpol.allowed([same_ns], NS_LABELS, web_b, DST, 5432)
    both = _policy({"podSelector": {}, "ingress": [{"from": [{
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "b"}},
        "podSelector": {"matchLabels": {"app": "web"}}}]}]})
    assert netpol.allowed([both], NS_LABELS, web_b, DST, 5432)
    assert not netpol.allowed([both], NS_LABELS, other_b, DST, 5432) and not netpol.allowed(
        [both], NS_LABELS, web_a, DST, 5432)
    either = _policy({"podSelector": {}, "ingress": [{"from": [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "b"}}},
        {"podSelector": {"matchLabels": {"app": "web"}}}]}]})
    assert netpol.allowed([either], NS_LABELS, other_b, DST, 5432) and netpol.allowed(
        [either], NS_LABELS, web_a, DST, 5432)
    expressions = _policy({"podSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]},
                           "ingress": [{"from": [{"namespaceSelector": {"matchExpressions": [
                               {"key": "team", "operator": "Exists"}]}}]}]})
    assert netpol.allowed([expressions], NS_LABELS, web_a, DST, 5432)
    assert not netpol.allowed([expressions], NS_LABELS, web_b, DST, 5432)
    block = _policy({"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "198.51.100.0/24",
                                                                           "except": ["198.51.100.128/25"]}}]}]})
    assert netpol.allowed([block], NS_LABELS, netpol.Address("198.51.100.7"), DST, 5432)
    assert not netpol.allowed([block], NS_LABELS, netpol.Address("198.51.100.200"), DST, 5432)
    assert not netpol.allowed([block], NS_LABELS, web_a, DST, 5432)


def test_the_monitoring_flow_list_is_allowed_by_the_rendered_policies(rendered_dev: Any) -> None:
    """Issue 13's own list of what monitoring and the etcd jobs need (operations/monitoring_docs.flows, the table
    in docs/monitoring.md) holds against the policies rendered from the declarations: a pod with each flow's
    source labels reaches every rendered pod with its destination labels that listens on the port."""
    from components.operations import monitoring_docs

    config = load_stack("dev")
    policies, ns_labels, pods, _, _, policed = _setup(rendered_dev, "dev")
    backup = config.karmada.etcd.backup
    wanted = monitoring_docs.flows(config.monitoring.prometheus_namespace, config.monitoring.prometheus_pod_labels,
                                   backup.endpoint if backup else None, config.dns.mode if config.dns else None)
    checked = 0
    for i, f in enumerate(wanted):
        if f.destination_namespace not in policed or f.destination_pods is None:
            continue  # egress to object storage: ingress policies do not restrict it
        src = netpol.Pod(namespace=f.source_namespace, labels=dict(f.source_pods), ip=f"10.42.220.{i + 1}")
        job = f.why.removeprefix("scrape ") if f.why.startswith("scrape ") else ""  # estimators: a name prefix
        targets = [p for p in pods.values() if p.namespace == f.destination_namespace
                   and netpol.selector_matches({"matchLabels": dict(f.destination_pods)}, p.labels)
                   and p.labels.get("app.kubernetes.io/name", "").startswith(job)
                   and f.port in {n for n, _ in p.ports.values()}]
        assert targets, f.why
        for dst in targets:
            assert netpol.allowed(policies, ns_labels, src, dst, f.port), (f.why, dst.name, f.port)
            checked += 1
    assert checked >= 10
