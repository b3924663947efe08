"""The stack roles, and the one typed contract between a hub stack and its region stacks.

`hub(config)` builds the hub cluster, the Karmada control plane (with its etcd backups) and the fleet's DNS
owner, and returns `HubOutputs`. `region(config, hub)` builds members, tenant policies and regional traffic
against a `HubOutputs`: the one `hub()` just returned (all-in-one), or the one a region stack reads through its
StackReference (`HubOutputs.from_reference`), where the region then works with its own identity
(trust/region_identity.py), never with an admin credential. Every cross-stack value is declared once, in `HUB_OUTPUTS`,
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

from components.config import IDENTITY_KEY, ConfigError, FleetConfig
from components.fleet.member import MemberCluster, capi_provider
from components.fleet.policies import FleetPolicies
from components.fleet.policy_docs import cluster_taint_policy, priority_classes
from components.fleet.registry import MemberRegistry
from components.hetzner.dns_provider import dns_provider
from components.hetzner.hub_cluster import HubCluster
from components.karmada.addons import KarmadaAddons
from components.karmada.addons_docs import search_members
from components.karmada.bootstrap import KarmadaBootstrap
from components.karmada.control_plane import KarmadaControlPlane, ca_bundle
from components.kube.objects import apply
from components.operations import preflight
from components.operations.etcd_backup import EtcdBackup
from components.operations.etcd_maintenance import EtcdMaintenance
from components.operations.k3s_snapshots import K3sSnapshots
from components.operations.k3s_upgrade import K3sUpgrade
from components.operations.monitoring import HubMonitoring
from components.operations.region_intents import fleet_members, fleet_tenants, region_intents
from components.traffic.dns import FleetDns
from components.traffic.docs import ingress_namespace
from components.traffic.regional import RegionalTraffic
from components.trust import hub_admission
from components.trust.network_policy import HostNetworkPolicies
from components.trust.operators import OperatorAccess
from components.trust.region_access import RegionAccess
from components.trust.region_identity import RegionIdentity


def _export(name: str, secret: bool = False) -> dict[str, Any]:
    """Field metadata: the stack output's name and whether it is secret."""
    return {"export": name, "secret": secret}


@dataclass(frozen=True)
class LocalHub:
    """In-process handles when the hub is built by this very stack (all-in-one): its providers already wait
    for readiness and bootstrap, so the region side uses them instead of dialing its own outputs."""

    host: k8s.Provider
    karmada: k8s.Provider
    karmada_kubeconfig: pulumi.Output[str]
    """The program's own admin kubeconfig (what PullJoin writes bootstrap tokens with in an all-in-one stack)."""
    after: Sequence[pulumi.Resource]
    fleet_objects: Sequence[pulumi.Resource] = ()
    """What the hub created inside karmada-apiserver for tenants (the priority table): policies wait for it."""
    dns_namespace: Sequence[pulumi.Resource] = ()
    """The host's `external-dns` namespace (FleetDns), where each region publishes its LB for the failover
    controller."""
    join_after: Mapping[str, Sequence[pulumi.Resource]] = field(default_factory=dict)
    """Pull member -> the hub-side RBAC its join needs first (MemberRegistry.join_ready)."""


@dataclass(frozen=True)
class HubOutputs:
    """What a hub stack exports and a region stack reads, field by field.

    A StackReference stores *every* output of the referenced stack in the referencing stack's state, so nothing a
    region must not hold is exported at all: no CA key, no admin kubeconfig, no region's key. Operators get an
    admin kubeconfig from the hub's own state (`python -m hubctl kubeconfig`)."""

    hub_api_endpoint: pulumi.Output[str] = field(metadata=_export("hubApiEndpoint"))
    hub_server_ca_cert_pem: pulumi.Output[str] = field(metadata=_export("hubServerCaCertPem"))
    """The k3s server CA: what a region's host kubeconfig trusts."""
    hub_server_ipv4s: pulumi.Output[list[str]] = field(metadata=_export("hubServerIpv4s"))
    """The servers' Primary IPs: the firewall-filtered API path, and what members may allow-list for Push."""
    hub_load_balancer_ipv4: pulumi.Output[str] = field(metadata=_export("hubLoadBalancerIpv4"))
    karmada_api_endpoint: pulumi.Output[str] = field(metadata=_export("karmadaApiEndpoint"))
    karmada_ca_cert_pem: pulumi.Output[str] = field(metadata=_export("karmadaCaCertPem"))
    region_identities: pulumi.Output[dict[str, Any]] = field(metadata=_export("regionIdentities"))
    """Region -> the certificates the hub signed for that region's own key (public; trust/region_identity.py)."""
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
    """The hub cluster, the Karmada control plane with its bootstrap and backups, the fleet's DNS owner, what the
    hub owns for every member and tenant it serves, its NetworkPolicies and its region stacks' identities."""
    intents = region_intents(config, pulumi.get_stack())
    members, tenants = fleet_members(config, intents), fleet_tenants(config, intents)
    dns = dns_provider(config, f"stacks/Pulumi.{pulumi.get_stack()}.yaml")
    cluster = HubCluster("hub", config, dns)
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
    operators = OperatorAccess("operators", karmada_ca, cluster.client_ca, karmada, host, list(after),
                               [cluster.readiness])
    certificates = [*cluster.certificates, *control_plane.pki.certificates, *operators.certificates]
    if config.karmada.addons.any_enabled:  # off by default: then nothing of theirs exists
        searched = (search_members(config, members, f"stacks/Pulumi.{pulumi.get_stack()}.yaml")
                    if config.karmada.addons.search.enabled else [])
        addons = KarmadaAddons("addons", config, searched, host, karmada, control_plane.pki,
                               ca_bundle(control_plane.pki.ca.cert_pem),
                               [control_plane.namespace, control_plane.readiness], after)
        certificates += addons.certificates
    if config.karmada.etcd.backup is not None:
        certificates += EtcdBackup("etcd-backup", config, host, control_plane.pki.etcd_ca,
                                   [control_plane.etcd]).certificates
        K3sSnapshots("k3s-snapshots", config, host, [cluster.readiness])
    certificates += EtcdMaintenance("etcd-maintenance", config, host, control_plane.pki.etcd_ca,
                                    [control_plane.etcd]).certificates
    K3sUpgrade("k3s-upgrade", config, host, [cluster.readiness])
    namespaces: list[pulumi.Resource] = [control_plane.namespace]
    dns_namespace: list[pulumi.Resource] = []
    if config.dns is not None:
        fleet_dns = FleetDns("dns", config, host, karmada, karmada_ca, after, dns_provider=dns,
                             server_ipv4s=cluster.server_ipv4s)
        for obj in hub_admission.refresher_policy():  # what the refresher's patch right may change
            apply("karmada", obj, pulumi.ResourceOptions(provider=karmada, depends_on=list(after)))
        dns_namespace, certificates = fleet_dns.namespace, [*certificates, *fleet_dns.certificates]
        namespaces += dns_namespace
    estimators = [m.name for m in members if m.scheduler_estimator]
    HostNetworkPolicies("network-policies", config, host, estimators, namespaces,
                        approver=any(m.sync_mode == "Pull" for m in members))
    registry = MemberRegistry("registry", config, members, tenants, karmada, host, karmada_ca, after)
    # A Pull member's join, and so its agent (which follows the join), waits for the control plane's controllers
    # too: one `up` of an all-in-one stack that changes karmada.version then rolls them before the agent, which may
    # trail the control plane but never lead it (versions.check_agent). Their CSR approver signs the join anyway.
    controllers = [control_plane.workloads[n] for n in ("karmada-controller-manager", "karmada-scheduler")]
    join_after = {member: [*ready, *controllers] for member, ready in registry.join_ready.items()}
    identities = RegionAccess("regions", config, intents, karmada, host, karmada_ca, cluster.client_ca,
                              [*after, *registry.ready, *dns_namespace])
    if config.monitoring.enabled:  # every member's estimator certificate is the hub's now
        HubMonitoring("monitoring", config, host, karmada, karmada_ca, [*certificates, *registry.certificates],
                      [control_plane.etcd], after)
    return HubOutputs(
        hub_api_endpoint=cluster.api_endpoint, hub_server_ca_cert_pem=cluster.server_ca_pem,
        hub_server_ipv4s=pulumi.Output.all(*cluster.server_ipv4s), hub_load_balancer_ipv4=cluster.lb_ipv4,
        karmada_api_endpoint=karmada_url, karmada_ca_cert_pem=karmada_ca.cert_pem,
        region_identities=pulumi.Output.from_input(identities.issued),
        fleet_contract=pulumi.Output.from_input(preflight.hub_contract(config, intents)),
        local=LocalHub(host=host, karmada=karmada, karmada_kubeconfig=control_plane.provider_kubeconfig,
                       after=[*after, *registry.ready], dns_namespace=dns_namespace,
                       fleet_objects=bootstrap.extra, join_after=join_after),
    )


def region(config: FleetConfig, hub: HubOutputs) -> None:
    """Members, tenant policies and regional traffic: every region (all-in-one) or this stack's one region."""
    host: pulumi.ProviderResource | None = None
    fleet_objects: list[pulumi.Resource] = []
    dns_namespace: list[pulumi.Resource] = []
    join_after: Mapping[str, Sequence[pulumi.Resource]] = {}
    if hub.local is not None:
        host, karmada, after = hub.local.host, hub.local.karmada, list(hub.local.after)
        writer: pulumi.Input[str] = hub.local.karmada_kubeconfig
        fleet_objects = list(hub.local.fleet_objects)
        dns_namespace = list(hub.local.dns_namespace)
        join_after = hub.local.join_after
    else:
        assert config.region is not None and config.hub_stack is not None
        stack_file = f"stacks/Pulumi.{pulumi.get_stack()}.yaml"
        hub.fleet_contract.apply(lambda contract: _agree_with_hub(config, contract))
        assert config.identity_csr is not None, "FleetConfig requires identityCsr for region stacks"
        identity = RegionIdentity(
            "identity", config.region, stack_file, config.hub_stack.stack, config.identity_csr,
            pulumi.Output.secret(config.secrets[IDENTITY_KEY]), hub.region_identities, hub.karmada_api_endpoint,
            hub.karmada_ca_cert_pem, hub.hub_api_endpoint, hub.hub_server_ca_cert_pem)
        writer = identity.karmada_kubeconfig
        karmada = k8s.Provider("k8s-karmada", kubeconfig=identity.karmada_kubeconfig, enable_server_side_apply=True)
        after = []
        # Estimators run on the hub's host cluster; so does the failover controller this region's LB is published to.
        if any(m.scheduler_estimator for m in config.members) or config.dns is not None:
            host = k8s.Provider("k8s-host", kubeconfig=identity.host_kubeconfig, enable_server_side_apply=True)
    capi = capi_provider(config)
    cluster_ids: dict[str, pulumi.Output[str]] = {}
    for member in config.members:
        if config.role == "region" and member.region != config.region:
            continue
        joined = MemberCluster(f"member-{member.name}", config, member, karmada, hub.karmada_api_endpoint,
                               hub.karmada_ca_cert_pem, writer, [*after, *join_after.get(member.name, ())], capi,
                               host_provider=host)
        if joined.pull_cluster_id is not None:
            cluster_ids[member.name] = joined.pull_cluster_id
    if cluster_ids:
        pulumi.export("pullClusterIds", cluster_ids)
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
