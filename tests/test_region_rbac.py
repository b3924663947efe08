"""The RBAC and NetworkPolicy builders as functions: what a region's identity is granted (derived from what its
stack renders: members by sync mode, estimators, tenants, DNS), the exact Role/Binding documents, the flows and
the policies that follow from workload declarations, and the host's list of policed workloads.

tests/test_region_identity.py and tests/test_network_policies.py check the same against a rendered plan and a
reachability model; these are the fast tests the mutation run (target `netpol-rbac`) runs per mutant.
"""

from __future__ import annotations

from typing import Any

import pytest

from components.fleet import member_docs
from components.kube import flows as f
from components.operations.region_intents import RegionIntent, region_intents
from components.trust import network_policy as netpol
from components.trust import region_rbac as r
from tests.support.tools import load_stack

# ------------------------------------------------------------------------------------------ region RBAC


@pytest.fixture(scope="module")
def intents() -> dict[str, RegionIntent]:
    return {i.region: i for i in region_intents(load_stack("prod-hub"), "prod-hub")}


def test_identity_names(intents: dict[str, RegionIntent]) -> None:
    """The user is the one the hub signs into the region's certificates: its accepted CSR's, with the key id; a
    region without one has no user and no RBAC at all."""
    fsn = intents["eu-fsn"]
    assert fsn.csr is not None and r.region_user(fsn) == fsn.csr.user
    assert fsn.csr.user.startswith("karmada-hub:region:eu-fsn:") and len(fsn.csr.user) == len(
        "karmada-hub:region:eu-fsn:") + 12
    unsigned = RegionIntent(fsn.stack, fsn.region, fsn.config)
    assert r.region_user(unsigned) is None
    assert r.karmada_rbac(unsigned) == [] and r.host_rbac(unsigned) == []
    assert r.karmada_grants(unsigned) == r.karmada_grants(fsn), "the grants do not depend on the key"
    assert r.role_name("eu-fsn") == "karmada-hub:region:eu-fsn"
    assert r.bootstrap_token_secret_name("m") == f"bootstrap-token-{member_docs.token_id('m')}"
    assert r.VERBS == ("get", "list", "watch", "create", "patch", "delete")
    assert r.BOOTSTRAP_NAMESPACE == "kube-system"


def test_karmada_grants_follow_members_tenants_and_traffic(intents: dict[str, RegionIntent]) -> None:
    for intent in intents.values():
        grants = r.karmada_grants(intent)
        assert grants == sorted(set(grants))
        secrets = {(g.namespace, g.name) for g in grants if g.resource == "secrets"}
        expected: set[tuple[str, str]] = set()
        for m in intent.members:
            if m.sync_mode == "Push":
                expected |= {("karmada-cluster", m.name), ("karmada-cluster", f"{m.name}-impersonator")}
            else:
                expected.add(("kube-system", r.bootstrap_token_secret_name(m.name)))
        assert secrets == expected and all(g.group == "" for g in grants if g.resource == "secrets")
        policies = [g for g in grants if g.resource != "secrets"]
        assert {g.group for g in policies} == {"policy.karmada.io"}
        assert {g.resource for g in policies} <= {"propagationpolicies", "overridepolicies", "federatedresourcequotas"}
        override = [g for g in policies if g.namespace == "ingress-nginx"]
        assert [(g.resource, g.name) for g in override] == [
            ("overridepolicies", f"ingress-nginx-controller-publish-status-{intent.region}")]
        assert {g.namespace for g in policies} == {"ingress-nginx", *(t.namespace for t in intent.tenants)}
    fsn = {(g.resource, g.namespace, g.name) for g in r.karmada_grants(intents["eu-fsn"])}
    assert ("propagationpolicies", "payments", "payments-shared") in fsn
    assert ("federatedresourcequotas", "shop", "shop") in fsn


def test_a_region_without_members_gets_only_its_tenants(intents: dict[str, RegionIntent]) -> None:
    """The fleet's members are all elsewhere (the tenants placed without a region preference, so they still have
    somewhere to go): no member Secret, no ingress override, no host grant, not even the region ConfigMap."""
    intent = intents["eu-fsn"]
    config = intent.config
    members = [m.model_copy(update={"region": "eu-hel"}) for m in config.members]
    tenants = [t.model_copy(update={"placement": t.placement.model_copy(update={"preferred_regions": []})})
               for t in config.tenants]
    regions = {**config.regions, "eu-hel": config.regions["eu-fsn"]}
    empty = RegionIntent(intent.stack, intent.region, config.model_copy(update={
        "members": members, "tenants": tenants, "regions": regions}), intent.csr)
    assert empty.members == [] and config.dns is not None
    grants = r.karmada_grants(empty)
    assert [(g.resource, g.namespace, g.name) for g in grants] == [
        ("federatedresourcequotas", "shop", "shop"), ("overridepolicies", "payments", "payments-regional"),
        ("overridepolicies", "shop", "shop-regional"), ("propagationpolicies", "payments", "payments"),
        ("propagationpolicies", "payments", "payments-shared"), ("propagationpolicies", "shop", "shop")]
    assert r.host_grants(empty) == [] and r.host_rbac(empty) == []


def test_host_grants_follow_estimators_and_dns(intents: dict[str, RegionIntent]) -> None:
    intent = intents["eu-fsn"]
    grants = r.host_grants(intent)
    assert grants == sorted(grants)
    assert [(g.group, g.resource, g.namespace, g.name) for g in grants] == [
        ("", "configmaps", "external-dns", "traffic-region-eu-fsn"),
        *[("", "secrets", "karmada-system", f"karmada-scheduler-estimator-{m.name}-member-token")
          for m in intent.members]]
    members = [m.model_copy(update={"scheduler_estimator": i == 0}) for i, m in enumerate(intent.members)]
    no_dns = RegionIntent(intent.stack, intent.region, intent.config.model_copy(update={"dns": None,
                                                                                        "members": members}))
    assert [g.name for g in r.host_grants(no_dns)] == [
        f"karmada-scheduler-estimator-{members[0].name}-member-token"]


def test_rbac_documents_one_role_per_namespace_bound_to_the_user_alone() -> None:
    grants = [r.Grant("", "secrets", "ns-b", "s2"), r.Grant("", "secrets", "ns-b", "s1"),
              r.Grant("policy.karmada.io", "overridepolicies", "ns-b", "o"), r.Grant("", "namespaces", "", "n"),
              r.Grant("", "configmaps", "ns-a", "c")]
    docs = r._rbac("karmada-hub:region:x", "karmada-hub:region:x:0123456789ab", grants)
    labels = {"app.kubernetes.io/part-of": "karmada-hub"}
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role"}
    verbs = ["get", "list", "watch", "create", "patch", "delete"]

    def binding(kind: str, ns: str | None) -> dict[str, Any]:
        meta = {"name": "karmada-hub:region:x", "labels": labels, **({"namespace": ns} if ns else {})}
        return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": f"{kind}Binding", "metadata": meta,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": "karmada-hub:region:x"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                              "name": "karmada-hub:region:x:0123456789ab"}]}

    assert docs == [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "karmada-hub:region:x", "labels": labels},
         "rules": [{"apiGroups": [""], "resources": ["namespaces"], "resourceNames": ["n"], "verbs": verbs}]},
        binding("ClusterRole", None),
        {**role, "metadata": {"name": "karmada-hub:region:x", "labels": labels, "namespace": "ns-a"},
         "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["c"], "verbs": verbs}]},
        binding("Role", "ns-a"),
        {**role, "metadata": {"name": "karmada-hub:region:x", "labels": labels, "namespace": "ns-b"},
         "rules": [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["s1", "s2"], "verbs": verbs},
                   {"apiGroups": ["policy.karmada.io"], "resources": ["overridepolicies"], "resourceNames": ["o"],
                    "verbs": verbs}]},
        binding("Role", "ns-b"),
    ]
    assert docs[2]["metadata"] is not docs[3]["metadata"]
    assert r._rbac("n", "u", []) == []


def test_karmada_and_host_rbac_are_the_users_grants(intents: dict[str, RegionIntent]) -> None:
    intent = intents["eu-hel"]
    assert intent.csr is not None
    user = intent.csr.user
    assert r.karmada_rbac(intent) == r._rbac("karmada-hub:region:eu-hel", user, r.karmada_grants(intent))
    assert r.host_rbac(intent) == r._rbac("karmada-hub:region:eu-hel", user, r.host_grants(intent))
    assert {d["metadata"]["name"] for d in r.karmada_rbac(intent)} == {"karmada-hub:region:eu-hel"}
    assert {s["name"] for d in r.host_rbac(intent) for s in d.get("subjects", [])} == {user}


def test_grants_are_read_from_the_rendered_objects() -> None:
    assert r._grant({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
                     "metadata": {"name": "p", "namespace": "t"}}) == r.Grant("policy.karmada.io",
                                                                              "propagationpolicies", "t", "p")
    assert r._grant({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t"}}) == r.Grant(
        "", "namespaces", "", "t")
    for kind, plural in (("OverridePolicy", "overridepolicies"), ("FederatedResourceQuota", "federatedresourcequotas"),
                         ("Secret", "secrets"), ("ConfigMap", "configmaps")):
        assert r._grant({"apiVersion": "v1", "kind": kind, "metadata": {"name": "x", "namespace": "y"}}).resource \
            == plural
    assert r.Grant("a", "b", "c", "d") < r.Grant("a", "b", "c", "e")


# ------------------------------------------------------------------------------------------ flows


def _w(ns: str, name: str, listeners: tuple[f.Listener, ...] = (), dials: tuple[f.Dial, ...] = (),
       external: dict[str, tuple[str, ...]] | None = None) -> f.Workload:
    return f.Workload(ns, name, {"app": name}, listeners, dials, external or {})


API = _w("sys", "api", (f.Listener("https", 443), f.Listener("metrics", 8080)), external={"https": ("10.0.0.0/8",)})
ETCD = _w("sys", "etcd", (f.Listener("client", 2379), f.Listener("peer", 2380, "TCP")),
          (f.Dial("sys", "etcd", "peer"),))
CLIENT = _w("sys", "client", dials=(f.Dial("sys", "api", "https"), f.Dial("sys", "etcd", "client")))
DNS = _w("dns", "controller", (f.Listener("udp", 53, "UDP"),), (f.Dial("sys", "api", "https"),))
API = f.Workload(API.namespace, API.name, API.pod_labels, API.listeners, (f.Dial("sys", "etcd", "client"),),
                 API.external)


def test_flows_are_exactly_the_declared_dials_and_external_ranges() -> None:
    assert f.flows([API, ETCD, CLIENT, DNS]) == [
        f.Flow("10.0.0.0/8", "sys/api", 443),
        f.Flow("dns/controller", "sys/api", 443),
        f.Flow("sys/api", "sys/etcd", 2379),
        f.Flow("sys/client", "sys/api", 443),
        f.Flow("sys/client", "sys/etcd", 2379),
        f.Flow("sys/etcd", "sys/etcd", 2380),
    ]
    assert f.Flow("a", "b", 1).protocol == "TCP" and f.Listener("x", 1).protocol == "TCP"
    udp = _w("x", "c", dials=(f.Dial("x", "s", "dns"),))
    assert f.flows([udp, _w("x", "s", (f.Listener("dns", 53, "UDP"),))]) == [f.Flow("x/c", "x/s", 53, "UDP")]


def test_a_dial_or_listener_nobody_declared_is_an_error() -> None:
    with pytest.raises(ValueError, match="sys/client dials sys/api, which nobody declared"):
        f.flows([CLIENT, ETCD])
    with pytest.raises(KeyError, match=r"sys/api has no listener 'grpc' \(it has \['https', 'metrics'\]\)"):
        f.flows([API, ETCD, _w("sys", "x", dials=(f.Dial("sys", "api", "grpc"),))])
    with pytest.raises(KeyError, match="has no listener 'admin'"):
        f.flows([_w("sys", "api", external={"admin": ("10.0.0.0/8",)})])
    with pytest.raises(ValueError, match="workload sys/etcd is declared twice"):
        f.flows([ETCD, ETCD])
    with pytest.raises(ValueError, match="declared twice"):
        f.network_policies([ETCD, ETCD], ["sys"])
    with pytest.raises(ValueError, match="nobody declared"):
        f.network_policies([CLIENT], ["sys"])


def test_policies_admit_exactly_the_declared_clients_on_their_ports() -> None:
    labels = {"app.kubernetes.io/part-of": "karmada-hub"}
    docs = f.network_policies([API, ETCD, CLIENT, DNS], ["sys", "dns", "sys"])
    assert [d["metadata"]["name"] for d in docs] == ["default-deny-ingress", "default-deny-ingress", "api-ingress",
                                                     "etcd-ingress"]
    assert docs[0] == {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                       "metadata": {"name": "default-deny-ingress", "namespace": "dns", "labels": labels},
                       "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}
    assert docs[1]["metadata"]["namespace"] == "sys"
    assert docs[2] == {
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": "api-ingress", "namespace": "sys", "labels": labels},
        "spec": {"podSelector": {"matchLabels": {"app": "api"}}, "policyTypes": ["Ingress"], "ingress": [
            {"ports": [{"port": 443, "protocol": "TCP"}],
             "from": [{"podSelector": {"matchLabels": {"app": "controller"}},
                       "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "dns"}}},
                      {"podSelector": {"matchLabels": {"app": "client"}}},
                      {"ipBlock": {"cidr": "10.0.0.0/8"}}]},
        ]}}
    assert docs[3]["spec"]["ingress"] == [
        {"ports": [{"port": 2379, "protocol": "TCP"}], "from": [{"podSelector": {"matchLabels": {"app": "api"}}},
                                                               {"podSelector": {"matchLabels": {"app": "client"}}}]},
        {"ports": [{"port": 2380, "protocol": "TCP"}], "from": [{"podSelector": {"matchLabels": {"app": "etcd"}}}]},
    ]
    assert docs[2]["spec"]["podSelector"]["matchLabels"] is not API.pod_labels
    assert f.network_policies([], []) == []
    assert f.default_deny("n")["metadata"]["name"] == f.DEFAULT_DENY == "default-deny-ingress"
    assert (f.NAME_LABEL, f.POLICY_SUFFIX) == ("kubernetes.io/metadata.name", "-ingress")


# ------------------------------------------------------------------------------------------ the host's list


def test_the_host_polices_its_namespaces_and_admits_the_api_clients() -> None:
    dev = load_stack("dev")
    hub = dev.hub
    assert netpol.apiserver_clients(dev) == [*[str(c) for c in hub.firewall.api_cidrs],
                                             *[str(c) for c in hub.firewall.karmada_cidrs], str(hub.network.cidr)]
    assert netpol.POLICED_NAMESPACES == ("karmada-system", "external-dns")
    assert netpol.namespaces(dev) == ["karmada-system", "external-dns"]
    assert netpol.namespaces(dev.model_copy(update={"dns": None})) == ["karmada-system"]
    keys = {w.key for w in netpol.host_workloads(dev, ["m1"])}
    assert dev.dns is not None and dev.dns.self_hosted_mode
    assert keys == {
        "karmada-system/etcd", "karmada-system/etcd-backup", "karmada-system/etcd-defrag",
        "karmada-system/karmada-aggregated-apiserver", "karmada-system/karmada-apiserver",
        "karmada-system/karmada-controller-manager", "karmada-system/karmada-dashboard-api",
        "karmada-system/karmada-dashboard-web", "karmada-system/karmada-descheduler",
        "karmada-system/karmada-hub-exporter", "karmada-system/karmada-scheduler",
        "karmada-system/karmada-scheduler-estimator-m1", "karmada-system/karmada-search",
        "karmada-system/karmada-webhook",
        "karmada-system/kube-controller-manager", "external-dns/status-refresher", "external-dns/traffic-failover",
        "monitoring/prometheus"}, "mode self-hosted runs no external-dns"
    approver = {w.key for w in netpol.host_workloads(dev, ["m1"], approver=True)}
    assert approver - keys == {"karmada-system/karmada-agent-csr-approver"} and keys <= approver
    hetzner = dev.model_copy(update={"dns": dev.dns.model_copy(update={"mode": "hetzner", "self_hosted": None})})
    assert {w.key for w in netpol.host_workloads(hetzner, ["m1"])} - keys == {"external-dns/external-dns"}
    plain = dev.model_copy(update={"karmada": dev.karmada.model_copy(update={
        "addons": dev.karmada.addons.model_copy(update={
            "search": dev.karmada.addons.search.model_copy(update={"enabled": False}),
            "dashboard": dev.karmada.addons.dashboard.model_copy(update={"enabled": False})})})})
    assert keys - {w.key for w in netpol.host_workloads(plain, ["m1"])} == {
        "karmada-system/karmada-search", "karmada-system/karmada-dashboard-api", "karmada-system/karmada-dashboard-web"}
    bare = dev.model_copy(update={"dns": None, "monitoring": dev.monitoring.model_copy(update={"enabled": False}),
                                  "karmada": dev.karmada.model_copy(update={"etcd": dev.karmada.etcd.model_copy(
                                      update={"backup": None})})})
    bare_keys = {w.key for w in netpol.host_workloads(bare, [])}
    assert "karmada-system/etcd-defrag" in bare_keys
    assert not bare_keys & {"karmada-system/etcd-backup", "external-dns/external-dns", "monitoring/prometheus",
                            "karmada-system/karmada-hub-exporter", "karmada-system/karmada-scheduler-estimator-m1"}
    api = next(w for w in netpol.host_workloads(dev, []) if w.key == "karmada-system/karmada-apiserver")
    assert sorted({c for cidrs in api.external.values() for c in cidrs}) == sorted(netpol.apiserver_clients(dev))
    policies = netpol.host_network_policies(dev, ["m1"])
    assert policies == f.network_policies(netpol.host_workloads(dev, ["m1"]), netpol.namespaces(dev))
    assert netpol.host_network_policies(dev, ["m1"], approver=True) == f.network_policies(
        netpol.host_workloads(dev, ["m1"], approver=True), netpol.namespaces(dev))
    assert netpol.host_network_policies(dev, ["m1"], approver=True) != policies


def test_declarations_are_values_and_run_here_unless_said() -> None:
    import dataclasses

    for value in (f.Listener("x", 1), f.Dial("a", "b", "c"), _w("a", "b")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            value.namespace = "x"  # type: ignore[misc]
    assert _w("a", "b").runs_elsewhere is False, "a declared workload is one the program runs (and must render)"
