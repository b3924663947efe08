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


def test_apiserver_serving_cert_has_server_addresses_and_service_names(rendered_dev: Any) -> None:
    """Every address the karmada-apiserver is dialed by from outside: each server's Primary IP (the firewall
    path) and the LB's private address; not the LB's public one, which serves nothing by default."""
    cert, _ = _certs(rendered_dev)["karmada-pki-apiserver"]
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    ips = {str(i) for i in san.get_values_for_type(x509.IPAddress)}
    names = set(san.get_values_for_type(x509.DNSName))
    servers = {unwrap(r.outputs)["ipAddress"] for r in rendered_dev.records
               if r.type == "hcloud:index/primaryIp:PrimaryIp"}
    lb = unwrap(next(r for r in rendered_dev.records if r.name == "hub-api-lb").outputs)["ipv4"]
    lb_private = unwrap(next(r for r in rendered_dev.records if r.name == "hub-api-lb-network").inputs)["ip"]
    assert len(servers) == 3 and servers | {lb_private} <= ips and all(ipaddress.ip_address(i) for i in servers)
    assert lb not in ips
    assert {"api.hub.dev.example.com", "karmada-apiserver.karmada-system.svc.cluster.local"} <= names


def test_etcd_peer_cert_covers_every_member(rendered_dev: Any) -> None:
    cert, _ = _certs(rendered_dev)["karmada-pki-etcd-peer"]
    names = set(cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
                .get_values_for_type(x509.DNSName))
    for i in range(3):
        assert f"etcd-{i}.etcd.karmada-system.svc.cluster.local" in names
