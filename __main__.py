"""karmada-hub: one highly available Karmada hub for a Cluster API fleet on Hetzner.

Thin on purpose: load and check the stack's config, let its role build, export. `hub` builds the hub cluster,
the Karmada control plane and the fleet's DNS owner and exports `HubOutputs`; `region` builds one region's
members, policies and traffic against the hub stack's `HubOutputs`, read through a StackReference;
`all-in-one` does both in one stack (components/roles.py).
"""

import sys

import pulumi

from components import roles
from components.config import ConfigError, FleetConfig
from components.operations import preflight


def main() -> None:
    try:
        config = FleetConfig.load()
        preflight.check(config, f"stacks/Pulumi.{pulumi.get_stack()}.yaml")
        preflight.check_deployed(config, f"stacks/Pulumi.{pulumi.get_stack()}.yaml")
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)

    hub = None
    if config.role in ("all-in-one", "hub"):
        hub = roles.hub(config)
        hub.export()
    if config.role in ("all-in-one", "region"):
        if hub is None:
            assert config.hub_stack is not None, "FleetConfig guarantees hubStack for region stacks"
            hub = roles.HubOutputs.from_reference(pulumi.StackReference(config.hub_stack.stack))
        roles.region(config, hub)


main()
