"""The stack roles, and the one typed contract between a hub stack and its region stacks.

`hub(config)` builds the hub cluster, the Karmada control plane (with its etcd backups) and the fleet's DNS
owner, and returns `HubOutputs`. `region(config, hub)` builds members, tenant policies and regional traffic
against a `HubOutputs`: the one `hub()` just returned (all-in-one), or the one a region stack reads through its
StackReference (`HubOutputs.from_reference`). Every cross-stack value is declared once, in `HUB_OUTPUTS`,
with its export name and whether it is secret; the offline plan's stand-in for a StackReference
(`stand_in`) is derived from the same declaration.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.config import ConfigError, FleetConfig
from components.fleet.member import MemberCluster, capi_provider
from components.fleet.policies import FleetPolicies
from components.fleet.policy_docs import cluster_taint_policy, priority_classes
from components.hetzner.hub_cluster import HubCluster
from components.karmada.bootstrap import KarmadaBootstrap
from components.karmada.control_plane import KarmadaControlPlane, ca_bundle
from components.kube import tls
from components.operations import preflight
from components.operations.etcd_backup import EtcdBackup
from components.operations.etcd_maintenance import EtcdMaintenance
from components.operations.k3s_snapshots import K3sSnapshots
from components.operations.k3s_upgrade import K3sUpgrade
from components.operations.monitoring import HubMonitoring
from components.traffic.dns import FleetDns
from components.traffic.docs import ingress_namespace
from components.traffic.regional import RegionalTraffic


def _export(name: str, secret: bool = False) -> dict[str, Any]:
    """Field metadata: the stack output's name and whether it is secret."""
    return {"export": name, "secret": secret}


@dataclass(frozen=True)
class LocalHub:
    """In-process handles when the hub is built by this very stack (all-in-one): its providers already wait
    for readiness and bootstrap, so the region side uses them instead of dialing its own outputs."""

    host: k8s.Provider
    karmada: k8s.Provider
    after: Sequence[pulumi.Resource]
    fleet_objects: Sequence[pulumi.Resource] = ()
    """What the hub created inside karmada-apiserver for tenants (the priority table): policies wait for it."""
    dns_namespace: Sequence[pulumi.Resource] = ()
    """The host's `external-dns` namespace (FleetDns), where each region publishes its LB for the failover
    controller."""


@dataclass(frozen=True)
class HubOutputs:
    """What a hub stack exports and a region stack reads, field by field."""

    hub_api_endpoint: pulumi.Output[str] = field(metadata=_export("hubApiEndpoint"))
    hub_load_balancer_ipv4: pulumi.Output[str] = field(metadata=_export("hubLoadBalancerIpv4"))
    hub_kubeconfig: pulumi.Output[str] = field(metadata=_export("hubKubeconfig", secret=True))
    """k3s admin kubeconfig of the hub's host cluster (scheduler-estimators of region members run there)."""
    karmada_api_endpoint: pulumi.Output[str] = field(metadata=_export("karmadaApiEndpoint"))
    karmada_kubeconfig: pulumi.Output[str] = field(metadata=_export("karmadaKubeconfig", secret=True))
    karmada_ca_cert_pem: pulumi.Output[str] = field(metadata=_export("karmadaCaCertPem"))
    karmada_ca_key_pem: pulumi.Output[str] = field(metadata=_export("karmadaCaKeyPem", secret=True))
    """Region stacks sign their pull agents' client certs with it."""
    fleet_contract: pulumi.Output[dict[str, Any]] = field(metadata=_export("fleetContract"))
    """What the hub promises its regions (preflight.hub_contract): checked by every region stack."""
    local: LocalHub | None = field(default=None, compare=False)

    def export(self) -> None:
        for f, value in _fields(self):
            pulumi.export(f.metadata["export"], pulumi.Output.secret(value) if f.metadata["secret"] else value)

    @classmethod
    def from_reference(cls, ref: pulumi.StackReference) -> HubOutputs:
        values = {}
        for f in dataclasses.fields(cls):
            if "export" in f.metadata:
                out = ref.require_output(f.metadata["export"])
                values[f.name] = pulumi.Output.secret(out) if f.metadata["secret"] else out
        return cls(**values)

    @property
    def karmada_ca(self) -> tls.KeyPair:
        return tls.KeyPair(cert_pem=self.karmada_ca_cert_pem, key_pem=self.karmada_ca_key_pem)


def _fields(outputs: HubOutputs) -> list[tuple[dataclasses.Field, Any]]:
    return [(f, getattr(outputs, f.name)) for f in dataclasses.fields(outputs) if "export" in f.metadata]


HUB_OUTPUTS: Mapping[str, bool] = {f.metadata["export"]: f.metadata["secret"]
                                   for f in dataclasses.fields(HubOutputs) if "export" in f.metadata}
"""Export name -> secret, for every cross-stack value."""


def stand_in(hub_plan_outputs: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The offline plan's StackReference to a hub stack: its planned values of exactly the declared outputs,
    and which of them are secret."""
    outputs = {name: hub_plan_outputs[name] for name in HUB_OUTPUTS if name in hub_plan_outputs}
    return outputs, sorted(name for name, secret in HUB_OUTPUTS.items() if secret)


# ------------------------------------------------------------------------------------------------ roles


def hub(config: FleetConfig) -> HubOutputs:
    """The hub cluster, the Karmada control plane with its bootstrap and backups, and the fleet's DNS owner."""
    cluster = HubCluster("hub", config)
    control_plane = KarmadaControlPlane("karmada", config, cluster)
    bootstrap = KarmadaBootstrap(
        "karmada-bootstrap", config.karmada.version, control_plane.provider,
        ca_bundle(control_plane.pki.ca.cert_pem), webhook=control_plane.webhook,
        aggregated_apiserver=control_plane.aggregated,
        extra=[cluster_taint_policy(), ingress_namespace(), *priority_classes(config.karmada.priority_classes)],
        protect=config.hub is not None and config.hub.protect,
    )
    control_plane.start_controllers(bootstrap.ready)
    host, karmada, after = cluster.provider, control_plane.provider, bootstrap.ready
    karmada_url, karmada_ca = control_plane.external_url, control_plane.pki.ca
    certificates = [*cluster.certificates, *control_plane.pki.certificates]
    if config.karmada.etcd.backup is not None:
        certificates += EtcdBackup("etcd-backup", config, host, control_plane.pki.etcd_ca,
                                   [control_plane.etcd]).certificates
        K3sSnapshots("k3s-snapshots", config, host, [cluster.readiness])
    certificates += EtcdMaintenance("etcd-maintenance", config, host, control_plane.pki.etcd_ca,
                                    [control_plane.etcd]).certificates
    K3sUpgrade("k3s-upgrade", config, host, [cluster.readiness])
    dns_namespace: list[pulumi.Resource] = []
    if config.dns is not None:
        dns = FleetDns("dns", config, host, karmada, karmada_ca, after)
        dns_namespace, certificates = dns.namespace, [*certificates, *dns.certificates]
    if config.monitoring.enabled:
        HubMonitoring("monitoring", config, host, karmada, karmada_ca, certificates, [control_plane.etcd], after)
    return HubOutputs(
        hub_api_endpoint=cluster.api_endpoint, hub_load_balancer_ipv4=cluster.lb_ipv4,
        hub_kubeconfig=cluster.kubeconfig, karmada_api_endpoint=karmada_url,
        karmada_kubeconfig=control_plane.admin_kubeconfig, karmada_ca_cert_pem=karmada_ca.cert_pem,
        karmada_ca_key_pem=karmada_ca.key_pem, fleet_contract=pulumi.Output.from_input(preflight.hub_contract(config)),
        local=LocalHub(host=host, karmada=karmada, after=after, dns_namespace=dns_namespace,
                       fleet_objects=bootstrap.extra),
    )


def region(config: FleetConfig, hub: HubOutputs) -> None:
    """Members, tenant policies and regional traffic: every region (all-in-one) or this stack's one region."""
    fleet_objects: list[pulumi.Resource] = []
    if hub.local is not None:
        host: k8s.Provider | None = hub.local.host
        karmada, after = hub.local.karmada, list(hub.local.after)
        fleet_objects = list(hub.local.fleet_objects)
        dns_namespace = list(hub.local.dns_namespace)
    else:
        hub.fleet_contract.apply(lambda contract: _agree_with_hub(config, contract))
        karmada = k8s.Provider("k8s-karmada", kubeconfig=hub.karmada_kubeconfig, enable_server_side_apply=True)
        host, after, dns_namespace = None, [], []
        # Estimators run on the hub's host cluster; so does the failover controller this region's LB is published to.
        if any(m.scheduler_estimator for m in config.members) or config.dns is not None:
            host = k8s.Provider("k8s-host", kubeconfig=hub.hub_kubeconfig, enable_server_side_apply=True)
    capi = capi_provider(config)
    for member in config.members:
        if config.role == "region" and member.region != config.region:
            continue
        MemberCluster(f"member-{member.name}", config, member, karmada, hub.karmada_api_endpoint, hub.karmada_ca,
                      after, capi, host_provider=host)
    FleetPolicies("policies", config, karmada, after, fleet_objects)
    regions = list(config.regions) if config.role == "all-in-one" else [config.region]
    traffic = RegionalTraffic("traffic", config, regions, karmada, after, host_provider=host,
                              host_after=dns_namespace)
    pulumi.export("regionalLoadBalancers", traffic.lb_ipv4)


def _agree_with_hub(config: FleetConfig, contract: dict) -> None:
    """Region stacks only: stop the run with one line if this stack disagrees with its hub's promises."""
    assert config.hub_stack is not None
    try:
        preflight.check_hub_contract(config, contract, f"stacks/Pulumi.{pulumi.get_stack()}.yaml",
                                     config.hub_stack.stack)
    except ConfigError as err:
        raise pulumi.RunError(str(err)) from None
