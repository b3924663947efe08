"""components/kube/tls.py, the signing: what each CA, leaf and signed CSR asks pulumi_tls for (key algorithm,
usages, validity, renewal window, subject, SANs), checked on the registered inputs and on the certificates the
offline plan's mocks mint from them (real X.509, verified against their CA with `cryptography`).
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable
from typing import Any

import pulumi
import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockMonitor

from components.kube import cert_schedule, tls
from hubctl.mocks import PlanMocks, unwrap


class _Capture(MockMonitor):
    def __init__(self) -> None:
        super().__init__(PlanMocks())
        self.requests: list[Any] = []

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        self.requests.append(request)
        return super().RegisterResource(request)


def run(program: Callable[[pulumi.ResourceOptions], dict[str, Any]]) -> tuple[dict[str, dict[str, Any]], Any]:
    """Register what `program` makes under the plan's mocks: (resource name -> inputs, what it returned with every
    Output resolved)."""
    monitor = _Capture()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    result: dict[str, Any] = {}
    try:
        pulumi.runtime.settings.reset_options()
        pulumi.runtime.set_mocks(monitor.mocks, project="karmada-hub", stack="test", preview=False, monitor=monitor)

        @pulumi.runtime.test
        def body() -> Any:
            made = program(pulumi.ResourceOptions())
            outputs = {k: v for k, v in made.items() if isinstance(v, pulumi.Output)}

            def keep(values: list[Any]) -> None:
                result.update({k: v for k, v in made.items() if not isinstance(v, pulumi.Output)})
                result.update(dict(zip(outputs, values, strict=True)))

            return pulumi.Output.all(*outputs.values()).apply(keep)

        body()
    finally:
        pulumi.runtime.settings.reset_options()
        loop.close()
        asyncio.set_event_loop(None)
    inputs = {r.name: unwrap(rpc.deserialize_properties(r.object, keep_unknowns=True)) for r in monitor.requests
              if r.type != "pulumi:pulumi:Stack"}
    return inputs, result


def _cert(pem: str) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem.encode())


def test_a_ca_is_an_ecdsa_p256_self_signed_ca_with_a_staggered_renewal() -> None:
    inputs, out = run(lambda opts: {"pair": (pair := tls.ca("karmada-ca", "karmada", 87600, opts, "karmada-org")),
                                    "cert": pair.cert_pem, "key": pair.key_pem})
    assert inputs["karmada-ca-key"] == {"algorithm": "ECDSA", "ecdsaCurve": "P256"}
    ca = inputs["karmada-ca"]
    assert ca["isCaCertificate"] is True and ca["setSubjectKeyId"] is True
    assert ca["allowedUses"] == ["cert_signing", "crl_signing", "digital_signature", "key_encipherment"]
    assert ca["validityPeriodHours"] == 87600
    assert ca["earlyRenewalHours"] == cert_schedule.renewal_hours("karmada-ca", 87600, ca=True)
    assert ca["subject"] == {"commonName": "karmada", "organization": "karmada-org"}
    pair = out["pair"]
    assert (pair.name, pair.signer, pair.kind) == ("karmada-ca", "karmada", "ca")
    assert pair.early_renewal_hours == ca["earlyRenewalHours"] and pair.key is not None
    cert = _cert(out["cert"])
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "karmada"
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert isinstance(cert.public_key(), ec.EllipticCurvePublicKey) and cert.public_key().curve.name == "secp256r1"
    assert "PRIVATE KEY" in out["key"]


def test_a_leaf_is_signed_by_its_ca_for_its_names_and_uses_only() -> None:
    def program(opts: pulumi.ResourceOptions) -> dict[str, Any]:
        ca = tls.ca("etcd-ca", "karmada-etcd-ca", 87600, opts)
        leaf = tls.leaf("etcd-server", ca, "karmada-etcd-server", tls.USES["peer"], 8760, opts, "org",
                        dns_names=["etcd.example"], ip_addresses=["127.0.0.1"])
        plain = tls.leaf("admin", ca, "system:admin", tls.USES["client"], 720, opts)
        return {"leaf": leaf, "plain": plain, "ca_cert": ca.cert_pem, "leaf_cert": leaf.cert_pem}

    inputs, out = run(program)
    csr = inputs["etcd-server-csr"]
    assert csr["dnsNames"] == ["etcd.example"] and csr["ipAddresses"] == ["127.0.0.1"]
    assert csr["subject"] == {"commonName": "karmada-etcd-server", "organization": "org"}
    assert "dnsNames" not in inputs["admin-csr"] and "ipAddresses" not in inputs["admin-csr"]
    assert inputs["admin-csr"]["subject"] == {"commonName": "system:admin"}
    assert inputs["etcd-server-key"] == inputs["admin-key"] == {"algorithm": "ECDSA", "ecdsaCurve": "P256"}
    signed = inputs["etcd-server"]
    assert signed["allowedUses"] == ["digital_signature", "key_encipherment", "server_auth", "client_auth"]
    assert signed["validityPeriodHours"] == 8760 and signed["setSubjectKeyId"] is True
    assert signed["earlyRenewalHours"] == cert_schedule.renewal_hours("etcd-server", 8760, ca=False)
    assert inputs["admin"]["allowedUses"] == ["digital_signature", "key_encipherment", "client_auth"]
    assert inputs["admin"]["validityPeriodHours"] == 720
    leaf = out["leaf"]
    assert (leaf.name, leaf.signer, leaf.kind) == ("etcd-server", "karmada-etcd-ca", "leaf")
    ca_cert, cert = _cert(out["ca_cert"]), _cert(out["leaf_cert"])
    cert.verify_directly_issued_by(ca_cert)
    assert set(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == {
        ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["etcd.example"]
    assert cert.not_valid_after_utc - cert.not_valid_before_utc == dt.timedelta(hours=8760)


def _csr(cn: str) -> tuple[str, ec.EllipticCurvePrivateKey]:
    from cryptography.hazmat.primitives import hashes, serialization

    key = ec.generate_private_key(ec.SECP256R1())
    csr = (x509.CertificateSigningRequestBuilder()
           .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])).sign(key, hashes.SHA256()))
    return csr.public_bytes(serialization.Encoding.PEM).decode(), key


def test_a_csr_is_signed_as_it_is_and_only_the_certificate_comes_back() -> None:
    from cryptography.hazmat.primitives import serialization

    csr, key = _csr("karmada-hub:region:eu")

    def program(opts: pulumi.ResourceOptions) -> dict[str, Any]:
        ca = tls.ca("host-client-ca", "k3s-client-ca", 87600, opts)
        cert = tls.sign_csr("region-eu-host", ca, csr, tls.USES["client"], 4380, opts)
        return {"cert": cert, "ca_cert": ca.cert_pem, "public": tls.public_key_pem(ca)}

    inputs, out = run(program)
    signed = inputs["region-eu-host"]
    assert signed["allowedUses"] == ["digital_signature", "key_encipherment", "client_auth"]
    assert signed["validityPeriodHours"] == 4380 and signed["setSubjectKeyId"] is True
    assert signed["earlyRenewalHours"] == cert_schedule.renewal_hours("region-eu-host", 4380, ca=False)
    assert signed["certRequestPem"] == csr and "PRIVATE KEY" in signed["caPrivateKeyPem"]
    assert sorted(inputs) == ["host-client-ca", "host-client-ca-key", "region-eu-host"], \
        "signing a CSR makes no key or request of its own"
    cert = _cert(out["cert"])
    cert.verify_directly_issued_by(_cert(out["ca_cert"]))
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "karmada-hub:region:eu"
    fmt = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    assert cert.public_key().public_bytes(*fmt) == key.public_key().public_bytes(*fmt), "the key stays its owner's"
    assert "PUBLIC KEY" in out["public"]


@pytest.mark.parametrize(("kind", "uses"), [
    ("server", ["digital_signature", "key_encipherment", "server_auth"]),
    ("client", ["digital_signature", "key_encipherment", "client_auth"]),
    ("peer", ["digital_signature", "key_encipherment", "server_auth", "client_auth"]),
])
def test_the_use_sets(kind: str, uses: list[str]) -> None:
    assert tls.USES[kind] == uses
    assert tls.CA_USES == ["cert_signing", "crl_signing", "digital_signature", "key_encipherment"]


def test_a_key_pair_without_a_certificate_is_a_leaf_and_immutable() -> None:
    import dataclasses

    pair = tls.KeyPair(cert_pem=None, key_pem=None)  # type: ignore[arg-type]
    assert pair.kind == "leaf" and (pair.name, pair.signer, pair.early_renewal_hours) == ("", "", 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        pair.name = "x"  # type: ignore[misc]
