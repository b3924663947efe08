"""karmada-hub: one highly available Karmada hub for a Cluster API fleet on Hetzner.

Thin on purpose: load and check the stack's config, let its role pick the components, export.
"""

import sys

import pulumi

from components import preflight
from components.config import ConfigError, FleetConfig
from components.documents.fleet import cluster_taint_policy
from components.hub_cluster import HubCluster
from components.karmada.bootstrap import KarmadaBootstrap
from components.karmada.control_plane import KarmadaControlPlane, ca_bundle


def main() -> None:
    try:
        config = FleetConfig.load()
        preflight.check(config, f"stacks/Pulumi.{pulumi.get_stack()}.yaml")
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)

    if config.role in ("all-in-one", "hub"):
        hub = HubCluster("hub", config)
        control_plane = KarmadaControlPlane("karmada", config, hub)
        bootstrap = KarmadaBootstrap(
            "karmada-bootstrap", config.karmada.version, control_plane.provider, ca_bundle(control_plane.pki.ca.cert_pem),
            webhook=control_plane.webhook, aggregated_apiserver=control_plane.aggregated,
            extra=[cluster_taint_policy()],
        )
        control_plane.start_controllers(bootstrap.ready)
        pulumi.export("hubApiEndpoint", hub.api_endpoint)
        pulumi.export("hubLoadBalancerIpv4", hub.lb_ipv4)
        pulumi.export("hubKubeconfig", hub.kubeconfig)
        pulumi.export("karmadaApiEndpoint", control_plane.external_url)
        pulumi.export("karmadaKubeconfig", control_plane.admin_kubeconfig)
        pulumi.export("karmadaCaCertPem", control_plane.pki.ca.cert_pem)


main()
