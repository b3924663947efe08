"""FleetPolicies: each tenant's placement, regional overrides and fleet-wide quota on the hub.

The tenants' namespaces belong to the hub stack (`MemberRegistry`), which creates them before any region
stack runs; a region's identity may write only the policies named here (components/trust/region_rbac.py).
"""

from __future__ import annotations

import pulumi

from components.config import FleetConfig
from components.fleet import policy_docs as fleet
from components.kube.objects import apply


class FleetPolicies(pulumi.ComponentResource):
    def __init__(self, name: str, config: FleetConfig, karmada_provider: pulumi.ProviderResource,
                 after: list[pulumi.Resource], fleet_objects: list[pulumi.Resource] | None = None,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        """`fleet_objects`: the hub's priority classes when built in the same stack; a policy naming a class that
        does not exist yet would fail to build its bindings until it does."""
        super().__init__("karmada-hub:index:FleetPolicies", name, None, opts)
        base = pulumi.ResourceOptions(parent=self, provider=karmada_provider, depends_on=after)
        for _, policy, prioritised in fleet.tenant_policies(config):
            apply("karmada", policy, pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(
                depends_on=[*after, *(fleet_objects or [])])) if prioritised and fleet_objects else base)
        self.register_outputs({"tenants": [t.name for t in config.tenants]})
