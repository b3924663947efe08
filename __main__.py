"""karmada-hub: one highly available Karmada hub for a Cluster API fleet on Hetzner.

Thin on purpose: load and check the stack's config, let its role pick the components, export.
`all-in-one` builds everything; `hub` the hub cluster, the control plane (with its etcd backups) and the
fleet's DNS owner; `region` one region's members, policies and traffic against the hub stack's outputs
(StackReference).
"""

import sys

import pulumi
import pulumi_kubernetes as k8s

from components.config import ConfigError, FleetConfig
from components.fleet.member import MemberCluster, capi_provider
from components.fleet.policies import FleetPolicies
from components.fleet.policy_docs import cluster_taint_policy
from components.hetzner.hub_cluster import HubCluster
from components.karmada.bootstrap import KarmadaBootstrap
from components.karmada.control_plane import KarmadaControlPlane, ca_bundle
from components.kube import tls
from components.operations import preflight
from components.operations.etcd_backup import EtcdBackup
from components.traffic.dns import FleetDns
from components.traffic.docs import ingress_namespace
from components.traffic.regional import RegionalTraffic


def main() -> None:
    try:
        config = FleetConfig.load()
        preflight.check(config, f"stacks/Pulumi.{pulumi.get_stack()}.yaml")
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)

    host = karmada = None
    after: list[pulumi.Resource] = []
    if config.role in ("all-in-one", "hub"):
        hub = HubCluster("hub", config)
        control_plane = KarmadaControlPlane("karmada", config, hub)
        bootstrap = KarmadaBootstrap(
            "karmada-bootstrap", config.karmada.version, control_plane.provider,
            ca_bundle(control_plane.pki.ca.cert_pem), webhook=control_plane.webhook,
            aggregated_apiserver=control_plane.aggregated, extra=[cluster_taint_policy(), ingress_namespace()],
        )
        control_plane.start_controllers(bootstrap.ready)
        host, karmada, after = hub.provider, control_plane.provider, bootstrap.ready
        karmada_url, karmada_ca = control_plane.external_url, control_plane.pki.ca
        pulumi.export("hubApiEndpoint", hub.api_endpoint)
        pulumi.export("hubLoadBalancerIpv4", hub.lb_ipv4)
        pulumi.export("hubKubeconfig", hub.kubeconfig)
        pulumi.export("karmadaApiEndpoint", karmada_url)
        pulumi.export("karmadaKubeconfig", control_plane.admin_kubeconfig)
        pulumi.export("karmadaCaCertPem", karmada_ca.cert_pem)
        # Region stacks sign their pull agents' client certs with it; it stays a secret in the hub's state.
        pulumi.export("karmadaCaKeyPem", karmada_ca.key_pem)
        pulumi.export("fleetContract", preflight.hub_contract(config))
        if config.karmada.etcd.backup is not None:
            EtcdBackup("etcd-backup", config, host, control_plane.pki.etcd_ca, [control_plane.etcd])
        if config.dns is not None:
            FleetDns("dns", config, host, karmada, karmada_url, karmada_ca, after)
    if config.role == "region":
        assert config.hub_stack is not None
        ref = pulumi.StackReference(config.hub_stack.stack)
        ref.require_output("fleetContract").apply(lambda contract: _agree_with_hub(config, contract))
        karmada = k8s.Provider("k8s-karmada", kubeconfig=ref.require_output("karmadaKubeconfig"),
                               enable_server_side_apply=True)
        karmada_url = ref.require_output("karmadaApiEndpoint")
        karmada_ca = tls.KeyPair(cert_pem=ref.require_output("karmadaCaCertPem"),
                                 key_pem=pulumi.Output.secret(ref.require_output("karmadaCaKeyPem")))
        if any(m.scheduler_estimator for m in config.members):  # estimators run on the hub's host cluster
            host = k8s.Provider("k8s-host", kubeconfig=pulumi.Output.secret(ref.require_output("hubKubeconfig")),
                                enable_server_side_apply=True)
    if config.role in ("all-in-one", "region"):
        capi = capi_provider(config)
        for member in config.members:
            if config.role == "region" and member.region != config.region:
                continue
            MemberCluster(f"member-{member.name}", config, member, karmada, karmada_url, karmada_ca, after, capi,
                          host_provider=host)
        FleetPolicies("policies", config, karmada, after)
        regions = list(config.regions) if config.role == "all-in-one" else [config.region]
        traffic = RegionalTraffic("traffic", config, regions, karmada, after)
        pulumi.export("regionalLoadBalancers", traffic.lb_ipv4)


def _agree_with_hub(config: FleetConfig, contract: dict) -> None:
    """Region stacks only: stop the run with one line if this stack disagrees with its hub's promises."""
    assert config.hub_stack is not None
    try:
        preflight.check_hub_contract(config, contract, f"stacks/Pulumi.{pulumi.get_stack()}.yaml",
                                     config.hub_stack.stack)
    except ConfigError as err:
        raise pulumi.RunError(str(err)) from None


main()
