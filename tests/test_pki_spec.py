"""Tests for components/karmada/pki_spec.py: trust domains, identities and SANs, checked both on the
specs and on real certificates minted from them and verified by `cryptography`'s X.509 verifier."""

from __future__ import annotations

import datetime as dt
import ipaddress

import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from cryptography.x509.verification import PolicyBuilder, Store, VerificationError

from components.karmada import flags as f
from components.karmada import pki_spec as p
from tests.integration.etcd_harness import mint_ca, mint_leaf

LB = ["203.0.113.10", "2001:db8::10"]
DNS = ["api.hub.dev.example.com"]


def specs(replicas: int = 3) -> dict[str, p.CertSpec]:
    out = {s.name: s for s in p.cert_specs(LB, DNS, replicas)}
    assert len(out) == len(p.cert_specs(LB, DNS, replicas)), "spec names must be unique"
    return out


def test_three_cas_with_upstream_names() -> None:
    cas = {c.name: c for c in p.ca_specs()}
    assert {c.common_name for c in cas.values()} == {"karmada", "karmada-etcd-ca", "front-proxy-ca"}
    assert cas["etcd-ca"].file == "etcd/ca" and cas["ca"].file == "ca"
    for s in specs().values():
        assert s.signer in cas, s.name


def test_trust_domains_are_separate() -> None:
    s = specs()
    for name in ("etcd-server", "etcd-peer", "apiserver-etcd-client", "aggregated-apiserver-etcd-client"):
        assert s[name].signer == p.ETCD_CA.name, name
    etcd_signed = {n for n, spec in s.items() if spec.signer == p.ETCD_CA.name}
    assert etcd_signed == {"etcd-server", "etcd-peer", "apiserver-etcd-client", "aggregated-apiserver-etcd-client",
                           "etcd-member-client"}
    assert s["front-proxy-client"].signer == p.FRONT_PROXY_CA.name
    assert [n for n, spec in s.items() if spec.signer == p.FRONT_PROXY_CA.name] == ["front-proxy-client"]


def test_usages() -> None:
    s = specs()
    for name in ("etcd-server", "etcd-peer"):  # peers dial each other with the same cert
        assert s[name].is_server and s[name].is_client
    for name in ("apiserver", "aggregated-apiserver", "webhook"):
        assert s[name].is_server and not s[name].is_client, name
    estimator = p.estimator_cert_spec("dev-fsn1-a")
    assert estimator.is_server and not estimator.is_client
    for name in ("apiserver-etcd-client", "front-proxy-client", "admin", "controller-manager",
                 "kube-controller-manager", "scheduler-estimator-client", "etcd-member-client"):
        assert s[name].is_client and not s[name].is_server, name
        assert not s[name].dns_names and not s[name].ip_addresses, name
    allowed = {"server_auth", "client_auth", "digital_signature", "key_encipherment"}
    assert all(set(spec.usages) <= allowed for spec in s.values())


def test_identities() -> None:
    s = specs()
    assert (s["admin"].common_name, s["admin"].organization) == ("system:admin", ("system:masters",))
    assert s["kube-controller-manager"].common_name == "system:kube-controller-manager"
    assert s["front-proxy-client"].common_name == p.FRONT_PROXY_CLIENT_CN
    for name, cn in (("controller-manager", "system:karmada:karmada-controller-manager"),
                     ("scheduler", "system:karmada:karmada-scheduler"),
                     ("webhook-client", "system:karmada:karmada-webhook"),
                     ("aggregated-apiserver-client", "system:karmada:karmada-aggregated-apiserver")):
        assert s[name].common_name == cn
    agent = p.agent_cert_spec("dev-hel1-a")
    assert agent.common_name == "system:karmada:agent:dev-hel1-a"
    assert agent.organization == ("system:karmada:agents",)
    assert agent.is_client and not agent.is_server and agent.signer == p.KARMADA_CA.name
    with pytest.raises(ValueError):
        p.agent_cert_spec("Not_A_Label")


def test_mounted_files_match_flag_paths() -> None:
    for spec in [*specs().values(), *p.ca_specs()]:
        if spec.file is not None:
            assert f"{spec.file}.crt" in f.PATHS, spec.name
    for spec in specs().values():
        if spec.file is not None:
            assert f"{spec.file}.key" in f.PATHS, spec.name
    assert f"{p.SA_KEY.file}.key" in f.PATHS and f"{p.SA_KEY.file}.pub" in f.PATHS
    # every PKI file a flag names is issued by some spec (or is a CA key / the SA pair)
    # issued by the components that need them: MemberCluster (one per estimator), EtcdBackup, EtcdMaintenance,
    # KarmadaAddons
    per_member = [p.estimator_cert_spec("dev-fsn1-a"), p.etcd_backup_cert_spec(), p.etcd_maintenance_cert_spec(),
                  *p.search_cert_specs(), *p.dashboard_cert_specs()]
    issued = {f"{s.file}.{ext}" for s in [*specs().values(), *p.ca_specs(), *per_member] if s.file
              for ext in ("crt", "key")}
    issued |= {f"{p.SA_KEY.file}.key", f"{p.SA_KEY.file}.pub"}
    pki_keys = {k for k in f.PATHS if k.endswith((".crt", ".key", ".pub"))}
    assert pki_keys <= issued, sorted(pki_keys - issued)


@pytest.mark.parametrize("replicas", [1, 3, 5])
def test_etcd_sans_cover_every_member(replicas: int) -> None:
    s = specs(replicas)
    for pod in f.etcd_member_names(replicas):
        host = f.etcd_member_fqdn(pod)
        assert s["etcd-peer"].covers(host) and s["etcd-server"].covers(host)
        assert host in s["etcd-peer"].dns_names, "explicit names let etcd's peer SAN check forward-resolve"
    for spec in (s["etcd-peer"], s["etcd-server"]):
        assert spec.covers("localhost") and spec.covers("127.0.0.1")
        assert spec.covers("etcd-9.etcd.karmada-system.svc")  # wildcard, short form
        assert not spec.covers("etcd-0.etcd.other.svc.cluster.local")
    assert s["etcd-server"].covers(f"{f.ETCD_CLIENT_SERVICE}.karmada-system.svc.cluster.local")
    assert not s["etcd-peer"].covers(f"{f.ETCD_CLIENT_SERVICE}.karmada-system.svc.cluster.local")


def test_apiserver_sans() -> None:
    api = specs()["apiserver"]
    for host in ("kubernetes.default.svc.cluster.local", "karmada-apiserver.karmada-system.svc.cluster.local",
                 "karmada-apiserver.karmada-system.svc", "localhost", "127.0.0.1", "203.0.113.10", "2001:db8::10",
                 "api.hub.dev.example.com"):
        assert api.covers(host), host
    assert not api.covers("203.0.113.11") and not api.covers("evil.example.com")
    with pytest.raises(ValueError, match="dns_names"):
        p.cert_specs(["api.example.com"], [], 3)
    with pytest.raises(ValueError):
        p.cert_specs([], ["bad name"], 3)
    with pytest.raises(ValueError):
        p.cert_specs([], [], 0)


def test_webhook_and_aggregated_sans_match_service_urls() -> None:
    s = specs()
    assert s["webhook"].covers("karmada-webhook.karmada-system.svc")
    assert s["aggregated-apiserver"].covers("karmada-aggregated-apiserver.karmada-system.svc")
    estimator = p.estimator_cert_spec("dev-fsn1-a")
    assert estimator.covers("karmada-scheduler-estimator-dev-fsn1-a.karmada-system.svc")
    assert estimator.covers("karmada-scheduler-estimator-dev-fsn1-a.karmada-system.svc.cluster.local")
    assert not estimator.covers("karmada-scheduler-estimator-dev-hel1-a.karmada-system.svc")  # one member only
    with pytest.raises(ValueError, match="DNS label"):
        p.estimator_cert_spec("Not_A_Label")


@pytest.mark.parametrize(("pattern", "host", "ok"), [
    ("*.etcd.ns.svc", "etcd-0.etcd.ns.svc", True),
    ("*.etcd.ns.svc", "a.b.etcd.ns.svc", False),
    ("*.etcd.ns.svc", "etcd.ns.svc", False),
    ("Etcd-0.Example", "etcd-0.example.", True),
    ("etcd-0.example", "etcd-1.example", False),
])
def test_hostname_matches(pattern: str, host: str, ok: bool) -> None:
    assert p.hostname_matches(pattern, host) is ok


# --------------------------------------------------------------------------- real certificates


@pytest.fixture(scope="module")
def etcd_and_api() -> dict[str, x509.Certificate]:
    s = specs()
    etcd_ca, etcd_key = mint_ca(p.ETCD_CA)
    ca, ca_key = mint_ca(p.KARMADA_CA)
    out = {"etcd-ca": etcd_ca, "ca": ca}
    for name, (signer, key) in {"etcd-server": (etcd_ca, etcd_key), "etcd-peer": (etcd_ca, etcd_key),
                                "apiserver": (ca, ca_key), "admin": (ca, ca_key)}.items():
        out[name] = x509.load_pem_x509_certificate(mint_leaf(s[name], signer, key)[0])
    return out


def _server_ok(ca: x509.Certificate, leaf: x509.Certificate, host: str) -> bool:
    try:
        ip = ipaddress.ip_address(host)
        subject: x509.DNSName | x509.IPAddress = x509.IPAddress(ip)
    except ValueError:
        subject = x509.DNSName(host)
    verifier = PolicyBuilder().store(Store([ca])).time(dt.datetime.now(dt.UTC)).build_server_verifier(subject)
    try:
        verifier.verify(leaf, [])
    except VerificationError:
        return False
    return True


def test_minted_certs_verify_for_the_names_components_dial(etcd_and_api: dict[str, x509.Certificate]) -> None:
    c = etcd_and_api
    for pod in f.etcd_member_names(3):
        assert _server_ok(c["etcd-ca"], c["etcd-server"], f.etcd_member_fqdn(pod))
        assert _server_ok(c["etcd-ca"], c["etcd-peer"], f.etcd_member_fqdn(pod))
    assert _server_ok(c["etcd-ca"], c["etcd-server"], "etcd-client.karmada-system.svc.cluster.local")
    assert _server_ok(c["ca"], c["apiserver"], "203.0.113.10")
    assert _server_ok(c["ca"], c["apiserver"], "api.hub.dev.example.com")
    assert not _server_ok(c["ca"], c["apiserver"], "other.example.com")
    assert not _server_ok(c["ca"], c["etcd-server"], "etcd-client.karmada-system.svc.cluster.local"), \
        "a cert from the etcd CA must not be trusted under the Karmada CA"


def test_minted_client_cert_verifies_as_client(etcd_and_api: dict[str, x509.Certificate]) -> None:
    # cryptography's client verifier enforces the web-PKI rule that clients carry a SAN; Kubernetes
    # authenticates by subject instead, so check signature, EKU and subject directly.
    c = etcd_and_api
    c["admin"].verify_directly_issued_by(c["ca"])
    with pytest.raises((ValueError, InvalidSignature)):
        c["admin"].verify_directly_issued_by(c["etcd-ca"])
    ekus = c["admin"].extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(ekus) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    server_ekus = c["apiserver"].extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.CLIENT_AUTH not in list(server_ekus)
    subject = c["admin"].subject
    assert subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "system:admin"
    assert subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "system:masters"


# ------------------------------------------------------------------------------------------ the table, pinned


_S = ("digital_signature", "key_encipherment", "server_auth")
_C = ("digital_signature", "key_encipherment", "client_auth")
_B = ("digital_signature", "key_encipherment", "server_auth", "client_auth")
_M = ("system:masters",)

PKI_TABLE = [  # (name, signer, common name, organization, usages, file under flags.PKI_DIR)
    ("etcd-server", "etcd-ca", "karmada-etcd-server", (), _B, "etcd/server"),
    ("etcd-peer", "etcd-ca", "karmada-etcd-peer", (), _B, "etcd/peer"),
    ("etcd-member-client", "etcd-ca", "karmada-etcd-member-prepare", (), _C, "etcd/member-client"),
    ("apiserver-etcd-client", "etcd-ca", "karmada-apiserver-etcd-client", (), _C, "apiserver-etcd-client"),
    ("aggregated-apiserver-etcd-client", "etcd-ca", "karmada-aggregated-apiserver-etcd-client", (), _C,
     "aggregated-apiserver-etcd-client"),
    ("front-proxy-client", "front-proxy-ca", "front-proxy-client", (), _C, "front-proxy-client"),
    ("apiserver", "ca", "karmada-apiserver", (), _S, "apiserver"),
    ("aggregated-apiserver", "ca", "karmada-aggregated-apiserver", (), _S, "aggregated-apiserver"),
    ("webhook", "ca", "karmada-webhook", (), _S, "webhook"),
    ("scheduler-estimator-client", "ca", "system:karmada:karmada-scheduler-grpc", (), _C,
     "scheduler-estimator-client"),
    ("descheduler-estimator-client", "ca", "system:karmada:karmada-descheduler-grpc", (), _C,
     "descheduler-estimator-client"),
    ("controller-manager", "ca", "system:karmada:karmada-controller-manager", _M, _C, None),
    ("scheduler", "ca", "system:karmada:karmada-scheduler", _M, _C, None),
    ("webhook-client", "ca", "system:karmada:karmada-webhook", _M, _C, None),
    ("aggregated-apiserver-client", "ca", "system:karmada:karmada-aggregated-apiserver", _M, _C, None),
    ("descheduler", "ca", "system:karmada:karmada-descheduler", (), _C, None),
    ("kube-controller-manager", "ca", "system:kube-controller-manager", (), _C, None),
    ("admin", "ca", "system:admin", _M, _C, None),
]
"""Every leaf: the identity each component presents (CN and groups decide its RBAC), what it may do with it, and
the file the component mounts. A changed CN or group silently changes who may do what."""


def test_every_leaf_is_exactly_as_designed() -> None:
    got = [(s.name, s.signer, s.common_name, s.organization, s.usages, s.file) for s in p.cert_specs(LB, DNS, 3)]
    assert got == PKI_TABLE
    assert [(c.name, c.common_name, c.file) for c in p.ca_specs()] == [
        ("ca", "karmada", "ca"), ("etcd-ca", "karmada-etcd-ca", "etcd/ca"),
        ("front-proxy-ca", "front-proxy-ca", "front-proxy-ca")]
    assert (p.SA_KEY.name, p.SA_KEY.file) == ("sa", "sa")
    assert (p.FRONT_PROXY_CLIENT_CN, p.DESCHEDULER_USER) == ("front-proxy-client", "system:karmada:karmada-descheduler")
    for spec, expected in ((p.etcd_backup_cert_spec(), ("etcd-backup-client", "karmada-etcd-backup",
                                                        "etcd/backup-client")),
                           (p.etcd_maintenance_cert_spec(), ("etcd-maintenance-client", "karmada-etcd-maintenance",
                                                             "etcd/maintenance-client"))):
        assert (spec.name, spec.common_name, spec.file, spec.signer, spec.usages) == (*expected, "etcd-ca", _C)
        assert not spec.dns_names and not spec.ip_addresses and not spec.organization


def test_every_serving_name_is_exactly_as_designed() -> None:
    sans = {s.name: (s.dns_names, s.ip_addresses) for s in p.cert_specs(["203.0.113.10", "203.0.113.10"],
                                                                         ["api.example.com"], 2)}
    etcd = ("etcd-0.etcd.karmada-system.svc.cluster.local", "etcd-1.etcd.karmada-system.svc.cluster.local",
            "*.etcd.karmada-system.svc", "*.etcd.karmada-system.svc.cluster.local")
    assert sans["etcd-server"] == (("localhost", "etcd-client.karmada-system", "etcd-client.karmada-system.svc",
                                    "etcd-client.karmada-system.svc.cluster.local", *etcd), ("127.0.0.1",))
    assert sans["etcd-peer"] == (("localhost", *etcd), ("127.0.0.1",))
    assert sans["apiserver"] == (("kubernetes", "kubernetes.default", "kubernetes.default.svc",
                                  "kubernetes.default.svc.cluster.local", "karmada-apiserver",
                                  "karmada-apiserver.karmada-system", "karmada-apiserver.karmada-system.svc",
                                  "karmada-apiserver.karmada-system.svc.cluster.local", "localhost",
                                  "api.example.com"), ("127.0.0.1", "203.0.113.10"))
    assert sans["aggregated-apiserver"] == (("karmada-aggregated-apiserver.karmada-system",
                                             "karmada-aggregated-apiserver.karmada-system.svc",
                                             "karmada-aggregated-apiserver.karmada-system.svc.cluster.local",
                                             "localhost"), ("127.0.0.1",))
    assert sans["webhook"] == (("karmada-webhook.karmada-system", "karmada-webhook.karmada-system.svc",
                                "karmada-webhook.karmada-system.svc.cluster.local"), ())
    assert p.APISERVER_IN_CLUSTER_NAME == "karmada-apiserver.karmada-system.svc"
    assert p.etcd_dns_names(1, "ns", "example.local") == (
        "etcd-0.etcd.ns.svc.example.local", "*.etcd.ns.svc", "*.etcd.ns.svc.example.local")
    est = p.estimator_cert_spec("m1", "ns", "example.local")
    assert (est.name, est.common_name, est.file, est.usages, est.signer) == (
        "scheduler-estimator-m1", "karmada-scheduler-estimator", "scheduler-estimator", _S, "ca")
    assert est.dns_names == ("karmada-scheduler-estimator-m1.ns", "karmada-scheduler-estimator-m1.ns.svc",
                             "karmada-scheduler-estimator-m1.ns.svc.example.local")
    assert p.estimator_service_name("m1") == "karmada-scheduler-estimator-m1"
    agent = p.agent_cert_spec("m1")
    assert (agent.name, agent.file) == ("agent-m1", None)
    with pytest.raises(ValueError, match="must be a DNS label of at most 48 chars"):
        p.estimator_cert_spec("M1")
    assert p.agent_cert_spec("a" * 48).name == "agent-" + "a" * 48
    with pytest.raises(ValueError):
        p.agent_cert_spec("a" * 49)


def test_certificate_name_matching_is_gos() -> None:
    assert p.hostname_matches("API.Example.com.", "api.example.COM")
    assert p.hostname_matches("*.etcd.svc", "etcd-0.etcd.svc.")
    assert not p.hostname_matches("*.etcd.svc", "etcd.svc") and not p.hostname_matches("*.etcd.svc", "a.b.etcd.svc")
    assert not p.hostname_matches("*.etcd.svc", ".etcd.svc")
    assert not p.hostname_matches("a*.etcd.svc", "ab.etcd.svc")


def test_specs_are_values() -> None:
    import dataclasses

    for spec in (p.KARMADA_CA, p.agent_cert_spec("m1"), p.SA_KEY):
        with pytest.raises(dataclasses.FrozenInstanceError):
            spec.name = "x"  # type: ignore[misc]
