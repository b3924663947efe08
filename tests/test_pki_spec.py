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
