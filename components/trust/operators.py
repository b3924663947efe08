"""Operators' everyday admin identity on both API servers: revocable, unlike `system:masters`.

The program's own identity (`system:admin`, group `system:masters`) is what its providers use; RBAC cannot take
that group's rights away and Kubernetes has no revocation list, so it is the break-glass credential: only in the hub
stack's state (`hubctl kubeconfig <hub> <api> --break-glass`). Operators use `OperatorAccess` instead: per API
server a client certificate `CN=karmada-hub:operator`, `O=karmada-hub:operators:<key id>` (the key's SHA-256
prefix, as for regions: kube/region_csr.key_id), 30 days, re-issued by `up` in the last 10, and one
ClusterRoleBinding `karmada-hub:operators` that gives that group `cluster-admin`. Deleting the binding revokes every
operator certificate at once; replacing the key (`pulumi up --replace` on `operator-<api>-key`) moves the binding
to the new group, which revokes the old key's certificates (security review 2, M8).
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_tls as ptls

from components.kube import cert_schedule, tls
from components.kube.objects import apply_rendered
from components.kube.region_csr import key_id

OPERATOR_USER = "karmada-hub:operator"
OPERATOR_GROUP_PREFIX = "karmada-hub:operators:"
BINDING = "karmada-hub:operators"
OPERATOR_HOURS = 30 * 24
"""An operator certificate lives 30 days (early renewal: its last 10)."""


def operator_group(public_key_pem: str) -> str:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_public_key(public_key_pem.encode())
    return OPERATOR_GROUP_PREFIX + key_id(key)  # type: ignore[arg-type]


def operators_binding(group: str) -> dict[str, Any]:
    """Either API server: the one grant the everyday admin has, to one key's group."""
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": BINDING, "labels": {"app.kubernetes.io/part-of": "karmada-hub"}},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}]}


def _leaf(name: str, signer: tls.KeyPair, opts: pulumi.ResourceOptions) -> tuple[tls.KeyPair, pulumi.Output[str]]:
    key = tls.private_key(f"{name}-key", opts)
    group = key.public_key_pem.apply(operator_group)
    csr = ptls.CertRequest(f"{name}-csr", private_key_pem=key.private_key_pem,
                           subject=ptls.CertRequestSubjectArgs(common_name=OPERATOR_USER, organization=group),
                           opts=opts)
    early = cert_schedule.renewal_hours(name, OPERATOR_HOURS, ca=False)
    cert = ptls.LocallySignedCert(name, cert_request_pem=csr.cert_request_pem, ca_cert_pem=signer.cert_pem,
                                  ca_private_key_pem=signer.key_pem, validity_period_hours=OPERATOR_HOURS,
                                  early_renewal_hours=early, allowed_uses=list(tls.USES["client"]),
                                  set_subject_key_id=True, opts=opts)
    pair = tls.KeyPair(cert_pem=cert.cert_pem, key_pem=pulumi.Output.secret(key.private_key_pem), key=key, name=name,
                       certificate=cert, early_renewal_hours=early, signer=signer.signer)
    return pair, group


class OperatorAccess(pulumi.ComponentResource):
    """The operator certificates (Karmada CA, k3s client CA) and their bindings on both API servers."""

    certificates: list[tls.KeyPair]

    def __init__(self, name: str, karmada_ca: tls.KeyPair, host_client_ca: tls.KeyPair,
                 karmada_provider: pulumi.ProviderResource, host_provider: pulumi.ProviderResource,
                 karmada_after: list[pulumi.Resource], host_after: list[pulumi.Resource],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("karmada-hub:index:OperatorAccess", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.certificates = []
        for api, ca, provider, after in (("karmada", karmada_ca, karmada_provider, karmada_after),
                                         ("host", host_client_ca, host_provider, host_after)):
            pair, group = _leaf(f"operator-{api}", ca, child)
            self.certificates.append(pair)
            apply_rendered(api, operators_binding, [group], pulumi.ResourceOptions(
                parent=self, provider=provider, depends_on=after))
        self.register_outputs({})
