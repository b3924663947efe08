"""Region identities: each region's own key, the certificates the hub signs for it, and nothing else.

Region side: the region's operator makes its key locally (`hubctl region-key <stack>`): the key goes into the
region stack's encrypted config (`karmada-hub:identityKey`) and the CSR it prints is committed in the region's
file (`karmada-hub:identityCsr`). No key is ever made from a resource name, so none is computable offline.

Hub side (`issue_region_identities`): for every region whose file carries an accepted CSR
(components/kube/region_csr.py checks it when the hub reads the file), the hub signs the CSR's key twice, with the
Karmada CA (client auth at the karmada-apiserver) and with the k3s client CA (client auth at the host cluster),
under the user name *it* chooses: `karmada-hub:region:<region>:<key id>`. `RegionCertificate` is the signer: a
dynamic resource whose certificate covers one validity window (`region_csr.cert_window`), so every hub `up` in a
new window re-signs (30-day certificates, a new one every 10 days). Only the certificates are exported
(`regionIdentities`): a StackReference stores every output of the referenced stack in the referencing stack's
state, so the hub exports nothing any region must not hold.

First deploy of a region: `hubctl region-key <stack>`, commit the CSR, `up` the hub, `up` the region. The region
refuses a certificate whose public key is not its committed CSR's (one line). Rotation and revocation:
docs/security.md.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, Resource, ResourceProvider

from components.kube import cert_schedule, tls
from components.kube.kubeconfig import kubeconfig
from components.kube.region_csr import (
    REGION_CERT_DAYS,
    cert_window,
    check_region_csr,
    sign_region_certificate,
    validity,
)
from components.operations.region_intents import RegionIntent

KARMADA_CERT = "karmadaCertPem"
HOST_CERT = "hostCertPem"
USER = "user"
KIND = "RegionCertificate"
"""The `kind` input that marks a RegionCertificate among the dynamic resources (the offline planner signs it)."""


def certificate_outputs(props: Mapping[str, Any]) -> dict[str, Any]:
    """What a RegionCertificate computes from its inputs: the certificate and its validity. Used by the provider's
    `create` and by the offline planner (hubctl/mocks.py)."""
    window = dt.datetime.fromisoformat(str(props["window"]))
    start, end = validity(window)
    cert = sign_region_certificate(str(props["csrPem"]), str(props["region"]), str(props["caCertPem"]),
                                   str(props["caKeyPem"]), window)
    return {"certPem": cert, "validityStartTime": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "validityEndTime": end.strftime("%Y-%m-%dT%H:%M:%SZ")}


_REPLACE_ON = ("region", "csrPem", "caCertPem", "window", "user")


class _RegionCertificateProvider(ResourceProvider):
    def create(self, props: dict[str, Any]) -> CreateResult:
        outs = {k: v for k, v in props.items() if k != "caKeyPem"}  # the CA key stays an input only
        return CreateResult(id_=f"{props['region']}-{props['signer']}-{props['window'][:10]}",
                            outs={**outs, **certificate_outputs(props)})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        replaces = [k for k in _REPLACE_ON if olds.get(k) != news.get(k)]
        return DiffResult(changes=bool(replaces), replaces=replaces, delete_before_replace=False)


class RegionCertificate(Resource):
    """One region certificate from one CA for one window; a new window, CSR or CA replaces it (a new certificate;
    the old one stays valid until its own end, for the region's running `up`)."""

    certPem: pulumi.Output[str]  # noqa: N815 (a dynamic resource's outputs are its property names)

    def __init__(self, name: str, region: str, user: str, csr_pem: str, signer: tls.KeyPair, window: dt.datetime,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(_RegionCertificateProvider(), name, {
            "kind": KIND, "region": region, "user": user, "signer": signer.name, "csrPem": csr_pem,
            "caCertPem": signer.cert_pem, "caKeyPem": pulumi.Output.secret(signer.key_pem),
            "window": window.isoformat(), "validityDays": REGION_CERT_DAYS,
            "certPem": None, "validityStartTime": None, "validityEndTime": None,
        }, opts)


def issue_region_identities(intents: Sequence[RegionIntent], karmada_ca: tls.KeyPair, host_client_ca: tls.KeyPair,
                            parent: pulumi.Resource) -> dict[str, dict[str, Any]]:
    """Region -> its two certificates and its user name, for every region whose CSR is committed; public values."""
    out: dict[str, dict[str, Any]] = {}
    opts = pulumi.ResourceOptions(parent=parent)
    window = cert_window(cert_schedule.program_now())
    for intent in intents:
        if intent.csr is None:
            pulumi.log.warn(f"region {intent.region}: stacks/Pulumi.{intent.stack}.yaml has no identityCsr yet; "
                            f"run `hubctl region-key {intent.stack}` and commit the CSR it prints there")
            continue
        csr, user = intent.csr, intent.csr.user
        out[intent.region] = {
            USER: user,
            KARMADA_CERT: RegionCertificate(f"region-{intent.region}-karmada", intent.region, user, csr.pem,
                                            karmada_ca, window, opts).certPem,
            HOST_CERT: RegionCertificate(f"region-{intent.region}-host", intent.region, user, csr.pem,
                                         host_client_ca, window, opts).certPem,
        }
    return out


def same_public_key(cert_pem: str, csr_pem: str) -> bool:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    fmt = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    cert_key = x509.load_pem_x509_certificate(cert_pem.encode()).public_key()
    own = x509.load_pem_x509_csr(csr_pem.encode()).public_key()
    return cert_key.public_bytes(*fmt) == own.public_bytes(*fmt)


class RegionIdentity(pulumi.ComponentResource):
    """This region stack's kubeconfigs for both API servers: the hub's certificates for its committed CSR with
    the key from its own config (`identityKey`)."""

    karmada_kubeconfig: pulumi.Output[str]
    host_kubeconfig: pulumi.Output[str]

    def __init__(self, name: str, region: str, stack_file: str, hub_stack: str, csr_pem: str,
                 key_pem: pulumi.Input[str], issued: pulumi.Input[Mapping[str, Any]], karmada_url: pulumi.Input[str],
                 karmada_ca_pem: pulumi.Input[str], host_url: pulumi.Input[str], host_ca_pem: pulumi.Input[str],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        """`csr_pem`: this stack's committed identityCsr; `key_pem`: its identityKey (secret); `issued`: the
        hub's `regionIdentities`."""
        super().__init__("karmada-hub:index:RegionIdentity", name, None, opts)
        user = check_region_csr(csr_pem, region).user
        where = f"{stack_file}: karmada-hub:identityCsr: {hub_stack}"

        def cert_of(identities: Mapping[str, Any], which: str) -> str:
            mine = (identities or {}).get(region)
            if not mine:
                raise pulumi.RunError(f"{where} has not signed this region's identity yet; up the hub stack first")
            cert = str(mine[which])
            if not same_public_key(cert, csr_pem):
                raise pulumi.RunError(f"{where} signed a {which} certificate for another key than this stack's "
                                      "committed CSR; up the hub stack with this commit first")
            return cert

        def kube(url: pulumi.Input[str], ca: pulumi.Input[str], which: str) -> pulumi.Output[str]:
            cert = pulumi.Output.from_input(issued).apply(lambda d: cert_of(d, which))
            return pulumi.Output.secret(pulumi.Output.all(url, ca, cert, pulumi.Output.secret(key_pem)).apply(
                lambda a: kubeconfig(user, a[0], a[1], a[2], a[3])))

        self.karmada_kubeconfig = kube(karmada_url, karmada_ca_pem, KARMADA_CERT)
        self.host_kubeconfig = kube(host_url, host_ca_pem, HOST_CERT)
        self.register_outputs({"user": user})
