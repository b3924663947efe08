"""FleetPolicies: each tenant's namespace, placement, regional overrides and fleet-wide quota on the hub."""

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
        regions = list(config.regions)
        for tenant in config.tenants:
            ns = apply("karmada", fleet.tenant_namespace(tenant), base)
            in_ns = pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(depends_on=[*after, ns]))
            prioritised = tenant.priority_class is not None or tenant.critical is not None
            policy_opts = pulumi.ResourceOptions.merge(in_ns, pulumi.ResourceOptions(
                depends_on=list(fleet_objects or []))) if prioritised and fleet_objects else in_ns
            apply("karmada", fleet.propagation_policy(tenant, regions, list(config.members), config.failover),
                  policy_opts)
            supporting = fleet.supporting_policy(tenant, regions, list(config.members), config.failover)
            if supporting is not None:
                apply("karmada", supporting, in_ns)
            critical = fleet.critical_policy(tenant, regions, list(config.members), config.failover)
            if critical is not None:
                apply("karmada", critical, policy_opts)
            apply("karmada", fleet.override_policy(tenant, config.regions), in_ns)
            if tenant.quota is not None:
                apply("karmada", fleet.federated_resource_quota(tenant), in_ns)
        self.register_outputs({"tenants": [t.name for t in config.tenants]})
