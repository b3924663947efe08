"""The PKI the program renders: every leaf chains to its CA, and serving certs carry the names clients dial."""

from __future__ import annotations

import ipaddress
from typing import Any

from cryptography import x509

from hubctl.mocks import unwrap
from tests.support.rendered import certs as _certs


def test_every_leaf_chains_to_its_ca(rendered_dev: Any) -> None:
    certs = _certs(rendered_dev)
    assert len(certs) >= 15
    for name, (cert, inputs) in certs.items():
        ca = x509.load_pem_x509_certificate(inputs["caCertPem"].encode())
        cert.verify_directly_issued_by(ca)  # raises on a wrong issuer or signature
        assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca, name


def test_apiserver_serving_cert_has_the_api_name_and_service_names(rendered_dev: Any) -> None:
    """What the karmada-apiserver is verified as: the API name (members, admins, region stacks), the in-cluster
    names (pods, and the program's own clients, which dial the first server's address with tls-server-name) and
    the LB's private address; not server addresses (adding a server would replace the certificate), not the LB's
    public one, which serves nothing by default."""
    cert, _ = _certs(rendered_dev)["karmada-pki-apiserver"]
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    ips = {str(i) for i in san.get_values_for_type(x509.IPAddress)}
    names = set(san.get_values_for_type(x509.DNSName))
    servers = {unwrap(r.outputs)["ipAddress"] for r in rendered_dev.records
               if r.type == "hcloud:index/primaryIp:PrimaryIp"}
    lb = unwrap(next(r for r in rendered_dev.records if r.name == "hub-api-lb").outputs)["ipv4"]
    lb_private = unwrap(next(r for r in rendered_dev.records if r.name == "hub-api-lb-network").inputs)["ip"]
    assert len(servers) == 3 and all(ipaddress.ip_address(i) for i in servers)
    assert lb_private in ips and not servers & ips and lb not in ips
    assert {"api.hub.dev.example.com", "karmada-apiserver.karmada-system.svc",
            "karmada-apiserver.karmada-system.svc.cluster.local"} <= names


def test_without_an_api_name_every_server_address_is_a_san() -> None:
    """No `hub.apiDnsName`: members and kubeconfigs use the first server's address, so every server address must
    be in the certificate (then adding a server does replace it, as the config's docstring says)."""
    from hubctl.plan import run_program
    from tests.support.tools import REPO, edited_stack

    plan = run_program(REPO, edited_stack("dev", {"hub": lambda h: h.pop("apiDnsName")}))
    cert, _ = _certs(plan)["karmada-pki-apiserver"]
    ips = {str(i) for i in cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
           .get_values_for_type(x509.IPAddress)}
    servers = {unwrap(r.outputs)["ipAddress"] for r in plan.records if r.type == "hcloud:index/primaryIp:PrimaryIp"}
    assert len(servers) == 3 and servers <= ips
    first = next(unwrap(r.outputs)["ipAddress"] for r in plan.records if r.name == "hub-ipv4-0")
    assert plan.raw_outputs["karmadaApiEndpoint"] == f"https://{first}:32443"


def test_etcd_peer_cert_covers_every_member(rendered_dev: Any) -> None:
    cert, _ = _certs(rendered_dev)["karmada-pki-etcd-peer"]
    names = set(cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
                .get_values_for_type(x509.DNSName))
    for i in range(3):
        assert f"etcd-{i}.etcd.karmada-system.svc.cluster.local" in names
