"""HostNetworkPolicies: default-deny ingress in the host namespaces the program owns, then exactly the declared flows.

The one list of every workload the hub's host cluster runs in a policed namespace (`host_workloads`): each
domain declares its own (`karmada/network.py`, `traffic/docs.py`, `traffic/refresher_docs.py`,
`traffic/failover_docs.py`, `operations/etcd_backup_docs.py`, `operations/etcd_maintenance_docs.py`,
`operations/monitoring_docs.py`: the exporter and the user's Prometheus scrapes; `karmada/addons_docs.py`: the opt-in
addons); a new workload adds its
declaration there and one line here.
`tests/test_network_policies.py` fails for a rendered pod in these namespaces that nobody declared.

k3s enforces NetworkPolicy with its embedded kube-router controller (on unless `--disable-network-policy`,
which `hetzner/cloud_init.py` never sets).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi

from components.config import FleetConfig
from components.fleet import csr_approver_docs
from components.hetzner.hub_cluster import karmada_api_cidrs
from components.karmada import addons_docs, flags
from components.karmada.network import control_plane_workloads
from components.karmada.pki_spec import estimator_service_name
from components.kube import flows
from components.kube.objects import apply
from components.operations import etcd_backup_docs, etcd_maintenance_docs, monitoring_docs
from components.traffic import docs as traffic_docs
from components.traffic import failover_docs, refresher_docs

POLICED_NAMESPACES = (flags.NAMESPACE, traffic_docs.EXTERNAL_DNS_NAMESPACE)


def apiserver_clients(config: FleetConfig) -> list[str]:
    """Outside the cluster, who reaches the karmada-apiserver's pods (NodePort, externalTrafficPolicy Local):
    the firewall's allow-list on the servers' public addresses, and the hub's private network (the API load
    balancer's private address, whose public side exists only when the stack opted in)."""
    hub = config.hub
    assert hub is not None
    return [*karmada_api_cidrs(hub), str(hub.network.cidr)]


def host_workloads(config: FleetConfig, estimator_members: Sequence[str], approver: bool = False
                   ) -> list[flows.Workload]:
    """`approver`: the fleet has Pull members, so the hub runs the agent CSR approver."""
    workloads = control_plane_workloads(apiserver_clients(config), estimator_members,
                                        descheduler=config.karmada.descheduler_enabled,
                                        search=config.karmada.addons.search.enabled)
    workloads += addons_docs.flow_workloads(config)
    if approver:
        workloads.append(csr_approver_docs.flows())
    workloads.append(etcd_maintenance_docs.flows())
    if config.karmada.etcd.backup is not None:
        workloads.append(etcd_backup_docs.flows())
    if config.monitoring.enabled:
        mon = config.monitoring
        estimators = [estimator_service_name(m) for m in sorted(estimator_members)]
        workloads += monitoring_docs.flow_workloads(mon.prometheus_namespace, mon.prometheus_pod_labels, estimators,
                                                    config.dns.mode if config.dns is not None else None)
    if config.dns is not None:
        workloads += [refresher_docs.flows(), failover_docs.flows()]
        if not config.dns.self_hosted_mode:  # mode self-hosted runs no external-dns (the nameservers: host network)
            workloads.append(traffic_docs.external_dns_flows())
    return workloads


def namespaces(config: FleetConfig) -> list[str]:
    return [ns for ns in POLICED_NAMESPACES if ns != traffic_docs.EXTERNAL_DNS_NAMESPACE or config.dns is not None]


def host_network_policies(config: FleetConfig, estimator_members: Sequence[str], approver: bool = False
                          ) -> list[dict[str, Any]]:
    return flows.network_policies(host_workloads(config, estimator_members, approver), namespaces(config))


class HostNetworkPolicies(pulumi.ComponentResource):
    """Applied right after the namespaces exist, so every workload is rolled out (and awaited) under them.
    Each namespace's default deny waits for its allow policies, so no running pod ever sees deny-only."""

    def __init__(self, name: str, config: FleetConfig, host_provider: pulumi.ProviderResource,
                 estimator_members: Sequence[str], after: Sequence[pulumi.Resource], approver: bool = False,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("karmada-hub:index:HostNetworkPolicies", name, None, opts)
        base = pulumi.ResourceOptions(parent=self, provider=host_provider, depends_on=list(after))
        policies = host_network_policies(config, estimator_members, approver)
        allows = [apply("host", p, base) for p in policies if p["metadata"]["name"] != flows.DEFAULT_DENY]
        for p in policies:
            if p["metadata"]["name"] == flows.DEFAULT_DENY:
                apply("host", p, pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(
                    depends_on=[*after, *allows])))
        self.register_outputs({"policies": len(policies)})
