"""RegionalTraffic: a health-checked Hetzner LB per region, its address for the hub, and the ingress status override.

Per region with members: a load balancer in the region's location (and network zone) with TCP 80/443 to
the members' ingress NodePorts, health-checked with the stack's interval/timeout/retries, reaching the
nodes over the region's private network when the stack names it (`regions.<r>.networkId`). In the
karmada-apiserver, an OverridePolicy makes each member's ingress controller publish its region's LB
address (Karmada then counts the Ingress healthy). On the hub's host cluster, a ConfigMap publishes the region's LB
address to the traffic failover controller (components/traffic/dns.py), which probes it and writes the fleet's
records, the region's drill name `<region>.lb.<domain>` among them (in the fleet's own zone, or through
external-dns). See docs/traffic-failover.md for the chain.
"""

from __future__ import annotations

import pulumi
import pulumi_hcloud as hcloud

from components.config import FleetConfig
from components.kube.objects import apply_rendered
from components.traffic import docs
from components.traffic import failover_docs as failover


class RegionalTraffic(pulumi.ComponentResource):
    lb_ipv4: dict[str, pulumi.Output[str]]

    def __init__(self, name: str, config: FleetConfig, regions: list[str],
                 karmada_provider: pulumi.ProviderResource | None, after: list[pulumi.Resource],
                 opts: pulumi.ResourceOptions | None = None, *, host_provider: pulumi.ProviderResource | None = None,
                 host_after: list[pulumi.Resource] | None = None) -> None:
        super().__init__("karmada-hub:index:RegionalTraffic", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.lb_ipv4 = {}
        for region_name in regions:
            region = config.regions[region_name]
            members = docs.region_members(config.members, region_name)
            if not members:
                continue
            lb = hcloud.LoadBalancer(
                f"{name}-{region_name}-lb", name=f"fleet-{region_name}", load_balancer_type=region.load_balancer_type,
                location=region.location, algorithm=hcloud.LoadBalancerAlgorithmArgs(type="round_robin"),
                labels={"karmada-hub/region": region_name}, opts=child)
            for spec in docs.regional_lb_services(region, docs.region_ingress(members)):
                hc = spec["health_check"]
                hcloud.LoadBalancerService(
                    f"{name}-{region_name}-lb-{spec['listen_port']}", load_balancer_id=lb.id, protocol=spec["protocol"],
                    listen_port=spec["listen_port"], destination_port=spec["destination_port"],
                    proxyprotocol=spec["proxyprotocol"],
                    health_check=hcloud.LoadBalancerServiceHealthCheckArgs(**hc), opts=child)
            targets_opts = child
            if region.network_id is not None:
                attached = hcloud.LoadBalancerNetwork(
                    f"{name}-{region_name}-lb-network", load_balancer_id=lb.id.apply(int),
                    network_id=region.network_id, opts=child)
                targets_opts = pulumi.ResourceOptions(parent=self, depends_on=[attached])
            for member, target in zip(sorted(members, key=lambda m: m.name),
                                      docs.regional_lb_target_selector(members, private=region.network_id is not None),
                                      strict=True):
                hcloud.LoadBalancerTarget(
                    f"{name}-{region_name}-lb-{member.name}", load_balancer_id=lb.id.apply(int),
                    type=target["type"], label_selector=target["label_selector"],
                    use_private_ip=target["use_private_ip"], opts=targets_opts)
            self.lb_ipv4[region_name] = lb.ipv4
            if karmada_provider is not None:
                # The namespace belongs to the hub's stack (KarmadaBootstrap extra); this region owns its policy.
                names = sorted(m.name for m in members)
                apply_rendered(
                    "karmada",
                    lambda ip, names=names, region_name=region_name: docs.ingress_status_overrides(
                        docs.INGRESS_NAMESPACE, docs.INGRESS_CONTROLLER, dict.fromkeys(names, ip), region=region_name),
                    [lb.ipv4], pulumi.ResourceOptions(parent=self, provider=karmada_provider, depends_on=after),
                    placeholder="192.0.2.1")
            if config.dns is not None and host_provider is not None:
                names = sorted(m.name for m in members)
                apply_rendered(
                    "host", lambda ip, names=names, region_name=region_name: failover.region_configmap(
                        region_name, ip, names),
                    [lb.ipv4], pulumi.ResourceOptions(parent=self, provider=host_provider,
                                                      depends_on=list(host_after or [])),
                    placeholder="192.0.2.1")
            # No record here: <region>.lb.<domain> is the hub's failover controller's, from the ConfigMap above (in the
            # zone in dns.mode self-hosted, a DNSEndpoint external-dns writes in mode hetzner); a region stack holds
            # no DNS token (security review 2, H5).

        self.register_outputs({"loadBalancers": self.lb_ipv4})
