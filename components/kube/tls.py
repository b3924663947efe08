"""Pulumi shell around pulumi_tls: CAs and leaf certificates as small typed bundles.

Every key is ECDSA P-256 (what k3s generates for its own CAs and what kube-apiserver, etcd and the
Karmada components all accept); private keys only ever leave here as secret Outputs. Renewal windows are
staggered per certificate name (`cert_schedule.renewal_hours`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_tls as tls

from components.kube import cert_schedule

CA_USES = ["cert_signing", "crl_signing", "digital_signature", "key_encipherment"]
USES = {
    "server": ["digital_signature", "key_encipherment", "server_auth"],
    "client": ["digital_signature", "key_encipherment", "client_auth"],
    "peer": ["digital_signature", "key_encipherment", "server_auth", "client_auth"],
}


@dataclass(frozen=True)
class KeyPair:
    """A certificate (public) with its private key (secret Output)."""

    cert_pem: pulumi.Output[str]
    key_pem: pulumi.Output[str]
    key: tls.PrivateKey | None = None
    name: str = ""
    """The certificate resource's name (what the expiry table and the alerts call it)."""
    certificate: tls.SelfSignedCert | tls.LocallySignedCert | None = None
    early_renewal_hours: int = 0
    signer: str = ""
    """Common name of the issuing CA (a CA's own)."""

    @property
    def kind(self) -> str:
        return "ca" if isinstance(self.certificate, tls.SelfSignedCert) else "leaf"


def private_key(name: str, opts: pulumi.ResourceOptions) -> tls.PrivateKey:
    return tls.PrivateKey(name, algorithm="ECDSA", ecdsa_curve="P256", opts=opts)


def ca(
    name: str, common_name: str, hours: int, opts: pulumi.ResourceOptions, organization: str | None = None
) -> KeyPair:
    key = private_key(f"{name}-key", opts)
    early = cert_schedule.renewal_hours(name, hours, ca=True)
    cert = tls.SelfSignedCert(
        name,
        private_key_pem=key.private_key_pem,
        subject=tls.SelfSignedCertSubjectArgs(common_name=common_name, organization=organization),
        is_ca_certificate=True,
        validity_period_hours=hours,
        early_renewal_hours=early,
        allowed_uses=CA_USES,
        set_subject_key_id=True,
        opts=opts,
    )
    return KeyPair(cert_pem=cert.cert_pem, key_pem=pulumi.Output.secret(key.private_key_pem), key=key, name=name,
                   certificate=cert, early_renewal_hours=early, signer=common_name)


def leaf(
    name: str,
    signer: KeyPair,
    common_name: str,
    uses: Sequence[str],
    hours: int,
    opts: pulumi.ResourceOptions,
    organization: str | None = None,
    dns_names: Sequence[str] = (),
    ip_addresses: Sequence[str | pulumi.Output[str]] = (),
) -> KeyPair:
    """A key and a certificate signed by `signer`; SANs may include Outputs (LB addresses)."""
    key = private_key(f"{name}-key", opts)
    csr = tls.CertRequest(
        f"{name}-csr",
        private_key_pem=key.private_key_pem,
        subject=tls.CertRequestSubjectArgs(common_name=common_name, organization=organization),
        dns_names=list(dns_names) or None,
        ip_addresses=list(ip_addresses) or None,
        opts=opts,
    )
    early = cert_schedule.renewal_hours(name, hours, ca=False)
    cert = tls.LocallySignedCert(
        name,
        cert_request_pem=csr.cert_request_pem,
        ca_cert_pem=signer.cert_pem,
        ca_private_key_pem=signer.key_pem,
        validity_period_hours=hours,
        early_renewal_hours=early,
        allowed_uses=list(uses),
        set_subject_key_id=True,
        opts=opts,
    )
    return KeyPair(cert_pem=cert.cert_pem, key_pem=pulumi.Output.secret(key.private_key_pem), key=key, name=name,
                   certificate=cert, early_renewal_hours=early, signer=signer.signer)


def public_key_pem(pair: KeyPair) -> pulumi.Output[str]:
    return pair.key.public_key_pem


def sign_csr(name: str, signer: KeyPair, cert_request_pem: pulumi.Input[str], uses: Sequence[str], hours: int,
             opts: pulumi.ResourceOptions) -> pulumi.Output[str]:
    """A certificate for somebody else's key: `signer` signs the CSR as is (its subject and SANs), the key stays
    wherever the CSR was made. Returns the certificate PEM (public)."""
    cert = tls.LocallySignedCert(
        name,
        cert_request_pem=cert_request_pem,
        ca_cert_pem=signer.cert_pem,
        ca_private_key_pem=signer.key_pem,
        validity_period_hours=hours,
        early_renewal_hours=cert_schedule.renewal_hours(name, hours, ca=False),
        allowed_uses=list(uses),
        set_subject_key_id=True,
        opts=opts,
    )
    return cert.cert_pem
