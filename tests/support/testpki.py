"""Throwaway TLS material for tests that serve or dial TLS on loopback: CAs and leaves (EC P-256, valid for a
day), the PKI the readiness tests share (the `pki` fixture in tests/conftest.py), and `k3s_tls`, a serving
context like k3s's."""

from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.support.httpfake import server_tls


@dataclass
class Pair:
    cert_pem: str
    key_pem: str
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey


def _pem_key(key: ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def make_ca(cn: str) -> Pair:
    """A self-signed CA (EC P-256, valid for a day)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                     crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return Pair(cert.public_bytes(serialization.Encoding.PEM).decode(), _pem_key(key), cert, key)


def make_leaf(ca: Pair, cn: str, server: bool, dns_names: tuple[str, ...] = (), ips: tuple[str, ...] = (),
              orgs: tuple[str, ...] = ()) -> Pair:
    """A leaf of `ca` for serving (`server`: its SANs are `dns_names` and `ips`, 127.0.0.1 when both are empty)
    or for a client (no SANs; `orgs` are its groups)."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    subject = [*(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs),
               x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(subject))
        .issuer_name(ca.cert.subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server
                                              else ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False)
    )
    if server:
        names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
        names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips or ([] if dns_names else ["127.0.0.1"])]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    cert = builder.sign(ca.key, hashes.SHA256())
    return Pair(cert.public_bytes(serialization.Encoding.PEM).decode(), _pem_key(key), cert, key)


@dataclass
class Pki:
    server_ca: Pair
    client_ca: Pair
    server: Pair
    client: Pair
    other_ca: Pair
    rogue_server: Pair
    """Serving cert for 127.0.0.1 from a CA the client does not trust."""


def readiness_pki() -> Pki:
    """Two CAs the readiness client trusts (server, client), one it does not, and their leaves."""
    server_ca, client_ca, other_ca = make_ca("server-ca"), make_ca("client-ca"), make_ca("other-ca")
    return Pki(server_ca, client_ca, make_leaf(server_ca, "apiserver", True),
               make_leaf(client_ca, "system:admin", False), other_ca, make_leaf(other_ca, "apiserver", True))


def k3s_tls(pki: Pki, tmp: Path, serving: Pair | None = None) -> ssl.SSLContext:
    """Serving TLS like k3s with anonymous auth off: `serving` (default: the cert for 127.0.0.1) and a client
    certificate from the client CA required."""
    serving = serving or pki.server
    serial = serving.cert.serial_number
    files = {tmp / f"{serial}.crt": serving.cert_pem, tmp / f"{serial}.key": serving.key_pem,
             tmp / "client-ca.crt": pki.client_ca.cert_pem}
    for path, pem in files.items():
        path.write_text(pem)
    return server_tls(*map(str, files), require_client_cert=True)
