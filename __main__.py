"""karmada-hub: one highly available Karmada hub for a Cluster API fleet on Hetzner.

Thin on purpose: load and check the stack's config, let its role pick the components, export.
"""

import sys

import pulumi

from components import preflight
from components.config import ConfigError, FleetConfig
from components.hub_cluster import HubCluster


def main() -> None:
    try:
        config = FleetConfig.load()
        preflight.check(config, f"stacks/Pulumi.{pulumi.get_stack()}.yaml")
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)

    if config.role in ("all-in-one", "hub"):
        hub = HubCluster("hub", config)
        pulumi.export("hubApiEndpoint", hub.api_endpoint)
        pulumi.export("hubLoadBalancerIpv4", hub.lb_ipv4)
        pulumi.export("hubKubeconfig", hub.kubeconfig)


main()
