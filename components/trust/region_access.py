"""RegionAccess: in the hub stack, each region stack's identity and exactly the rights it needs.

For every region stack the hub serves: what its policies may say (region_admission.py, a ValidatingAdmissionPolicy
with the regions' members as its parameter), its certificates (region_identity.issue_region_identities, when its CSR is
committed) and its RBAC in both API servers (region_rbac), bound to the user name in those certificates,
`karmada-hub:region:<region>:<key id>`. The
karmada-side Roles live in the tenants' namespaces (MemberRegistry creates those first), `karmada-cluster`,
`kube-system` and `ingress-nginx`; the host-side Role in `karmada-system`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi

from components.config import FleetConfig
from components.kube import tls
from components.kube.objects import apply
from components.operations.region_intents import RegionIntent
from components.trust import region_admission, region_rbac
from components.trust.region_identity import issue_region_identities


class RegionAccess(pulumi.ComponentResource):
    issued: dict[str, dict[str, Any]]

    def __init__(self, name: str, config: FleetConfig, intents: Sequence[RegionIntent],
                 karmada_provider: pulumi.ProviderResource, host_provider: pulumi.ProviderResource,
                 karmada_ca: tls.KeyPair, host_client_ca: tls.KeyPair, after: Sequence[pulumi.Resource],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("karmada-hub:index:RegionAccess", name, None, opts)
        on_hub = pulumi.ResourceOptions(parent=self, provider=karmada_provider, depends_on=list(after))
        on_host = pulumi.ResourceOptions(parent=self, provider=host_provider, depends_on=list(after))
        self.issued = issue_region_identities(intents, karmada_ca, host_client_ca, self)
        if intents:  # what a region's policies may say (before any region writes one)
            for obj in [region_admission.members_configmap(intents), *region_admission.region_policy()]:
                apply("regions", obj, on_hub)
        for intent in intents:
            for obj in region_rbac.karmada_rbac(intent):
                apply(f"region-{intent.region}", obj, on_hub)
            for obj in region_rbac.host_rbac(intent):
                apply(f"region-{intent.region}", obj, on_host)
        self.register_outputs({"regions": [i.region for i in intents]})
