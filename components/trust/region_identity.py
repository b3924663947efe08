"""Region identities: each region stack's own key, a certificate the hub signs for it, and nothing else.

Region side (`RegionIdentity`): the stack makes an ECDSA key and a CSR for `karmada-hub:region:<region>` (no
organization, so no groups) and exports the CSR as `identityCsrPem`. The key stays in that stack's state.

Hub side (`issue_region_identities`): for every region stack whose file carries `identityCsr`, the hub signs that
CSR twice, with the Karmada CA (client auth at the karmada-apiserver) and with the k3s client CA (client auth at
the host cluster), and exports only the certificates (`regionIdentities`). A StackReference stores every output
of the referenced stack in the referencing stack's state, so the hub exports nothing any region must not hold:
no CA key, no admin kubeconfig, no other region's key.

First deploy of a region: `up` the region (it makes its key and CSR, exports the CSR and stops before anything
that needs the hub), commit the CSR as `karmada-hub:identityCsr`, `up` the hub, `up` the region again. The region
refuses a certificate whose public key is not its own (one line). Rotation and revocation: docs/security.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_tls as ptls

from components.kube import tls
from components.kube.kubeconfig import kubeconfig
from components.operations.region_intents import RegionIntent
from components.trust.region_rbac import region_user

KARMADA_CERT = "karmadaCertPem"
HOST_CERT = "hostCertPem"


def issue_region_identities(intents: Sequence[RegionIntent], karmada_ca: tls.KeyPair, host_client_ca: tls.KeyPair,
                            hours: int, parent: pulumi.Resource) -> dict[str, dict[str, pulumi.Output[str]]]:
    """Region -> its two certificates, for every region whose CSR is committed; public values only."""
    out: dict[str, dict[str, pulumi.Output[str]]] = {}
    opts = pulumi.ResourceOptions(parent=parent)
    for intent in intents:
        if intent.identity_csr is None:
            pulumi.log.warn(f"region {intent.region}: stacks/Pulumi.{intent.stack}.yaml has no identityCsr yet; "
                            "up that stack once and commit its identityCsrPem output there")
            continue
        out[intent.region] = {
            KARMADA_CERT: tls.sign_csr(f"region-{intent.region}-karmada", karmada_ca, intent.identity_csr,
                                       tls.USES["client"], hours, opts),
            HOST_CERT: tls.sign_csr(f"region-{intent.region}-host", host_client_ca, intent.identity_csr,
                                    tls.USES["client"], hours, opts),
        }
    return out


def same_public_key(cert_pem: str, public_key_pem: str) -> bool:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    cert_key = x509.load_pem_x509_certificate(cert_pem.encode()).public_key()
    own = serialization.load_pem_public_key(public_key_pem.encode())
    fmt = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return cert_key.public_bytes(*fmt) == own.public_bytes(*fmt)


class RegionIdentity(pulumi.ComponentResource):
    """This region stack's key and CSR; with the hub's certificates, its kubeconfigs for both API servers."""

    csr_pem: pulumi.Output[str]
    karmada_kubeconfig: pulumi.Output[str] | None
    host_kubeconfig: pulumi.Output[str] | None

    def __init__(self, name: str, region: str, stack_file: str, hub_stack: str, committed: bool,
                 issued: pulumi.Input[Mapping[str, Any]], karmada_url: pulumi.Input[str],
                 karmada_ca_pem: pulumi.Input[str], host_url: pulumi.Input[str], host_ca_pem: pulumi.Input[str],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        """`committed`: this stack's file carries its identityCsr (without it the hub cannot have signed, and the
        stack stops after making its key); `issued` is the hub's `regionIdentities`."""
        super().__init__("karmada-hub:index:RegionIdentity", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        key = tls.private_key(f"region-identity-{region}", child)
        csr = ptls.CertRequest(f"region-identity-{region}-csr", private_key_pem=key.private_key_pem,
                               subject=ptls.CertRequestSubjectArgs(common_name=region_user(region)), opts=child)
        self.csr_pem = csr.cert_request_pem
        self.karmada_kubeconfig = self.host_kubeconfig = None
        if committed:
            key_pem = pulumi.Output.secret(key.private_key_pem)

            def cert_of(identities: Mapping[str, Any], which: str) -> str:
                mine = (identities or {}).get(region)
                if not mine:
                    raise pulumi.RunError(f"{stack_file}: karmada-hub:identityCsr: {hub_stack} has not signed this "
                                          "region's identity yet; up the hub stack first")
                return str(mine[which])

            def checked(cert_pem: str, public_pem: str, which: str) -> str:
                if not same_public_key(cert_pem, public_pem):
                    raise pulumi.RunError(
                        f"{stack_file}: karmada-hub:identityCsr: {hub_stack} signed a {which} certificate for another "
                        "key than this stack's; commit `pulumi stack output identityCsrPem` as identityCsr and up the "
                        "hub stack first")
                return cert_pem

            def kube(url: pulumi.Input[str], ca: pulumi.Input[str], cert: pulumi.Input[str],
                     which: str) -> pulumi.Output[str]:
                good = pulumi.Output.all(cert, key.public_key_pem).apply(lambda a: checked(a[0], a[1], which))
                return pulumi.Output.secret(pulumi.Output.all(url, ca, good, key_pem).apply(
                    lambda a: kubeconfig(region_user(region), a[0], a[1], a[2], a[3])))

            identities = pulumi.Output.from_input(issued)
            self.karmada_kubeconfig = kube(karmada_url, karmada_ca_pem,
                                           identities.apply(lambda d: cert_of(d, KARMADA_CERT)), "karmada-apiserver")
            self.host_kubeconfig = kube(host_url, host_ca_pem, identities.apply(lambda d: cert_of(d, HOST_CERT)),
                                        "host")
        self.register_outputs({"csrPem": self.csr_pem})
