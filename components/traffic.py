"""RegionalTraffic: a health-checked Hetzner LB per region, its drill name, and the ingress status override.

Per region with members: a load balancer in the region's location (and network zone) with TCP 80/443 to
the members' ingress NodePorts, health-checked with the stack's interval/timeout/retries, reaching the
nodes over the region's private network when the stack names it (`regions.<r>.networkId`). In the
karmada-apiserver, an OverridePolicy makes each member's ingress controller publish its region's LB
address, which external-dns (components/fleet_dns.py, on the hub) turns into the fleet's records. See
docs/traffic-failover.md for the chain, its weak link, and how the status refresher closes it.
"""

from __future__ import annotations

import pulumi
import pulumi_hcloud as hcloud

from components.config import FleetConfig
from components.documents import traffic as docs
from components.k8s_objects import apply, apply_rendered

INGRESS_NAMESPACE = "ingress-nginx"
INGRESS_CONTROLLER = "ingress-nginx-controller"


class RegionalTraffic(pulumi.ComponentResource):
    lb_ipv4: dict[str, pulumi.Output[str]]

    def __init__(self, name: str, config: FleetConfig, regions: list[str],
                 karmada_provider: pulumi.ProviderResource | None, after: list[pulumi.Resource],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("karmada-hub:index:RegionalTraffic", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.lb_ipv4 = {}
        member_ips: dict[str, pulumi.Output[str]] = {}
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
                member_ips[member.name] = lb.ipv4
            self.lb_ipv4[region_name] = lb.ipv4
            if config.dns is not None:
                record = docs.region_record(region_name, config.dns, "192.0.2.1")
                hcloud.ZoneRrset(
                    f"{name}-{region_name}-record", zone=record["zone"], name=record["name"], type=record["type"],
                    ttl=record["ttl"], records=[hcloud.ZoneRrsetRecordArgs(value=lb.ipv4)], opts=child)

        if karmada_provider is not None and member_ips:
            on_hub = pulumi.ResourceOptions(parent=self, provider=karmada_provider, depends_on=after)
            ns = apply("karmada", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": INGRESS_NAMESPACE}},
                       on_hub)
            names = sorted(member_ips)
            apply_rendered(
                "karmada",
                lambda *ips: docs.ingress_status_overrides(INGRESS_NAMESPACE, INGRESS_CONTROLLER,
                                                           dict(zip(names, ips, strict=True))),
                [member_ips[n] for n in names],
                pulumi.ResourceOptions.merge(on_hub, pulumi.ResourceOptions(depends_on=[*after, ns])),
                placeholder="192.0.2.1")

        self.register_outputs({"loadBalancers": self.lb_ipv4})
