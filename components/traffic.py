"""RegionalTraffic: a health-checked Hetzner LB per region, external-dns on the hub, per-region drill names.

Per region with members: a load balancer in the region's location with TCP 80/443 to the members'
ingress NodePorts, health-checked with the stack's interval/timeout/retries. On the hub: external-dns with
the Hetzner webhook, reading the karmada-apiserver (where the tenants' Ingress/Service templates and
their aggregated status live) with a short TTL; an OverridePolicy makes each member's ingress controller
publish its region's LB address. See docs/traffic-failover.md for the chain and its one weak link.
"""

from __future__ import annotations

import pulumi
import pulumi_hcloud as hcloud

from components import tls
from components.config import FleetConfig
from components.documents import traffic as docs
from components.k8s_objects import apply, apply_rendered
from components.kubeconfig import kubeconfig

INGRESS_NAMESPACE = "ingress-nginx"
INGRESS_CONTROLLER = "ingress-nginx-controller"


class RegionalTraffic(pulumi.ComponentResource):
    lb_ipv4: dict[str, pulumi.Output[str]]

    def __init__(self, name: str, config: FleetConfig, regions: list[str],
                 karmada_provider: pulumi.ProviderResource | None, host_provider: pulumi.ProviderResource | None,
                 karmada_url: pulumi.Input[str], karmada_ca: tls.KeyPair | None, after: list[pulumi.Resource],
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
            for member, target in zip(sorted(members, key=lambda m: m.name),
                                      docs.regional_lb_target_selector(members), strict=True):
                # Public addresses: the members' private network belongs to CAPI, not to this stack (see docs).
                hcloud.LoadBalancerTarget(
                    f"{name}-{region_name}-lb-{member.name}", load_balancer_id=lb.id.apply(int),
                    type=target["type"], label_selector=target["label_selector"], use_private_ip=False, opts=child)
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

        if config.dns is not None and host_provider is not None and karmada_provider is not None and karmada_ca:
            self._external_dns(name, config, host_provider, karmada_provider, karmada_url, karmada_ca, after)
        self.register_outputs({"loadBalancers": self.lb_ipv4})

    def _external_dns(self, name: str, config: FleetConfig, host_provider: pulumi.ProviderResource,
                      karmada_provider: pulumi.ProviderResource, karmada_url: pulumi.Input[str],
                      karmada_ca: tls.KeyPair, after: list[pulumi.Resource]) -> None:
        dns = config.dns
        assert dns is not None
        on_host = pulumi.ResourceOptions(parent=self, provider=host_provider)
        on_hub = pulumi.ResourceOptions(parent=self, provider=karmada_provider, depends_on=after)
        for obj in [*docs.external_dns_karmada_rbac(), *docs.ttl_guard_policy(dns)]:
            apply("karmada", obj, on_hub)
        cert = tls.leaf(f"{name}-external-dns", karmada_ca, docs.EXTERNAL_DNS_USER, tls.USES["client"],
                        config.karmada.pki.leaf_validity_hours, pulumi.ResourceOptions(parent=self))
        kube = pulumi.Output.secret(pulumi.Output.all(karmada_url, karmada_ca.cert_pem, cert.cert_pem, cert.key_pem)
                                    .apply(lambda a: kubeconfig("karmada", a[0], a[1], a[2], a[3])))
        objects = docs.external_dns_objects(dns, docs.KUBECONFIG_SECRET_NAME, docs.TOKEN_SECRET_NAME)
        ns = [apply("host", o, on_host) for o in objects if o["kind"] == "Namespace"]
        in_ns = pulumi.ResourceOptions.merge(on_host, pulumi.ResourceOptions(depends_on=ns))
        secrets = [
            apply_rendered("host", docs.external_dns_token_secret,
                           [pulumi.Output.secret(config.secrets[dns.token_config_key])], in_ns),
            apply_rendered("host", docs.external_dns_kubeconfig_secret, [kube], in_ns),
        ]
        after_secrets = pulumi.ResourceOptions.merge(in_ns, pulumi.ResourceOptions(depends_on=[*ns, *secrets]))
        for obj in objects:
            if obj["kind"] != "Namespace":
                apply("host", obj, after_secrets)
