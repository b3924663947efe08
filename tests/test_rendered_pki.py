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


def test_apiserver_serving_cert_has_lb_and_service_names(rendered_dev: Any) -> None:
    cert, _ = _certs(rendered_dev)["karmada-pki-apiserver"]
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    ips = {str(i) for i in san.get_values_for_type(x509.IPAddress)}
    names = set(san.get_values_for_type(x509.DNSName))
    lb = unwrap(next(r for r in rendered_dev.records if r.name == "hub-api-lb").outputs)["ipv4"]
    assert lb in ips and ipaddress.ip_address(lb)
    assert {"api.hub.dev.example.com", "karmada-apiserver.karmada-system.svc.cluster.local"} <= names


def test_etcd_peer_cert_covers_every_member(rendered_dev: Any) -> None:
    cert, _ = _certs(rendered_dev)["karmada-pki-etcd-peer"]
    names = set(cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
                .get_values_for_type(x509.DNSName))
    for i in range(3):
        assert f"etcd-{i}.etcd.karmada-system.svc.cluster.local" in names
