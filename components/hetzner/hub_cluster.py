"""HubCluster: the dedicated Hetzner k3s cluster the Karmada control plane runs on.

One private network and subnet in one network zone, one spread placement group, an odd number of
servers round-robin over the locations, each with its own Primary IP (known before the server exists, so
it is in the certificates), and a Cloud Firewall: SSH only from `sshCidrs`, k3s (6443) from `apiCidrs`, the
karmada-apiserver's NodePort (32443) from `apiCidrs` and `karmadaCidrs`, and nothing else on the public
interface. Those public addresses are the admin path: the Cloud Firewall filters them. It filters nothing else: a
Hetzner Cloud Firewall applies to a server's public interface only, so the cluster's own traffic (etcd peering,
kubelet, flannel's VXLAN, which cloud_init pins to the private interface, LB-to-NodePort) runs over the private
network unfiltered, and no rule "for the private network" could match anything (docs.hetzner.com/cloud/firewalls/faq).

The API load balancer is private by default (server joins, in-network clients): a Hetzner load balancer
has no firewall, so its public interface would serve 6443 and 5443 to the whole internet. Only a stack
that sets `hub.loadBalancer.worldReachable: true` gets it, labelled so the plan summary and the policy
pack name it as world-reachable.

The k3s CA set is generated here (pulumi_tls), so the admin kubeconfig and the secure join token
are computed without SSH. An `ApiReadiness` gate waits for `/readyz` on the first server's public
address; the host `k8s.Provider` is created only after it, so nothing touches the API before it answers.

Day two (`changes.plan_hub` on what `live.read_deployed` reads from Hetzner): a server created while other
hub servers exist joins them (never `cluster-init`), a `serverType` change resizes one server per `up` and
a `NodeReadiness` gate waits for its node to come back, the network carries the record of what this `up`
applied, and servers are replaced delete-first (their names and private IPs are unique).
"""

from __future__ import annotations

import pulumi
import pulumi_hcloud as hcloud
import pulumi_kubernetes as k8s
import pulumi_random as random

from components.config import HETZNER_DNS_MIN_TTL, FleetConfig, HubConfig
from components.hetzner import changes, cloud_init, live
from components.hetzner.readiness import ApiReadiness, NodeReadiness
from components.kube import tls
from components.kube.kubeconfig import kubeconfig

K3S_API_PORT = 6443
KARMADA_API_PORT = 5443
"""Where the hub LB exposes the karmada-apiserver (its upstream secure port)."""
KARMADA_API_NODE_PORT = 32443
"""NodePort of the karmada-apiserver Service on the hub nodes: what members, CI and people dial on the servers'
public addresses (behind the Cloud Firewall); the LB's 5443 service targets it too."""
WORLD_REACHABLE_LABEL = "karmada-hub/world-reachable"
"""On the API load balancer when the stack opted in to its public interface (policy rule api-lb-world-reachable)."""
LB_PRIVATE_HOST_INDEX = 254
SERVER_FIRST_HOST_INDEX = 11

K3S_CA_NAMES = {
    "server-ca": "k3s-server-ca",
    "client-ca": "k3s-client-ca",
    "request-header-ca": "k3s-request-header-ca",
    "etcd/peer-ca": "etcd-peer-ca",
    "etcd/server-ca": "etcd-server-ca",
}


def hub_server_name(hub: HubConfig, index: int) -> str:
    """The `index`-th hub server's Hetzner name, which is also its hostname and its k3s node name."""
    return changes.server_name(hub, index)


def hub_labels(hub: HubConfig) -> dict[str, str]:
    """The Hetzner labels of every hub resource."""
    return {"karmada-hub/cluster": hub.name}


def hub_server_labels(hub: HubConfig) -> dict[str, str]:
    """The hub servers' Hetzner labels (the API LB selects on them) and their k3s node labels."""
    return {**hub_labels(hub), "karmada-hub/role": "control-plane"}


def private_ip(hub: HubConfig, index: int) -> str:
    return str(hub.network.subnet.network_address + SERVER_FIRST_HOST_INDEX + index)


def lb_private_ip(hub: HubConfig) -> str:
    return str(hub.network.subnet.network_address + LB_PRIVATE_HOST_INDEX)


def karmada_api_cidrs(hub: HubConfig) -> list[str]:
    """Who may reach the karmada-apiserver on the servers' public addresses (the firewall rule and the
    NetworkPolicy's ipBlocks): the API CIDRs and the Pull members' egress CIDRs."""
    return list(dict.fromkeys(str(c) for c in [*hub.firewall.api_cidrs, *hub.firewall.karmada_cidrs]))


def firewall_rules(hub: HubConfig, dns_service: bool = False) -> list[hcloud.FirewallRuleArgs]:
    """Inbound rules of the public interface; Hetzner firewalls deny all other inbound traffic once a rule exists.
    Nothing for the cluster's own ports: servers reach each other over the private network, which no Cloud Firewall
    filters (a rule with the private network as source would never match). `dns_service`: the servers answer DNS
    for the fleet's zone (dns.mode self-hosted), UDP and TCP 53 from anywhere (resolvers are everywhere; Knot
    refuses UPDATE and transfers without the key from hub addresses, and rate-limits answers)."""
    ssh = [str(c) for c in hub.firewall.ssh_cidrs]
    api = [str(c) for c in hub.firewall.api_cidrs]
    rules = [
        hcloud.FirewallRuleArgs(direction="in", protocol="tcp", port="22", source_ips=ssh,
                                description="SSH from the stack's admin CIDRs"),
        hcloud.FirewallRuleArgs(direction="in", protocol="tcp", port=str(K3S_API_PORT), source_ips=api,
                                description="k3s API from the stack's API CIDRs"),
        hcloud.FirewallRuleArgs(direction="in", protocol="tcp", port=str(KARMADA_API_NODE_PORT),
                                source_ips=karmada_api_cidrs(hub),
                                description="karmada-apiserver from the API CIDRs and the Pull members' CIDRs"),
        hcloud.FirewallRuleArgs(direction="in", protocol="icmp", source_ips=["0.0.0.0/0", "::/0"],
                                description="ICMP (path MTU discovery, ping)"),
    ]
    if dns_service:
        for proto in ("udp", "tcp"):
            rules.append(hcloud.FirewallRuleArgs(direction="in", protocol=proto, port="53",
                                                 source_ips=["0.0.0.0/0", "::/0"],
                                                 description=f"DNS ({proto}) for the fleet's zone (self-hosted)"))
    return rules


class HubCluster(pulumi.ComponentResource):
    """The Hetzner k3s cluster for the hub; exposes `provider`, `kubeconfig` and the LB addresses."""

    kubeconfig: pulumi.Output[str]
    provider: k8s.Provider
    lb_ipv4: pulumi.Output[str]
    lb_private_ip: str
    api_endpoint: pulumi.Output[str]
    karmada_api_host: pulumi.Output[str]
    server_ipv4s: list[pulumi.Output[str]]
    """The servers' Primary IPs: the firewall-filtered admin path (and what members may allow-list)."""
    karmada_api_ips: list[pulumi.Input[str]]
    """Addresses the karmada-apiserver is dialed by from outside the cluster (its serving cert's IP SANs)."""
    first_server_ipv4: pulumi.Output[str]
    """What this program's own providers and readiness gates dial (no DNS needed on the first `up`)."""

    def __init__(self, name: str, config: FleetConfig, dns_provider: pulumi.ProviderResource | None = None,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        """`dns_provider`: the DNS zone project's hcloud provider (hetzner/dns_provider.py) for the API record."""
        super().__init__("karmada-hub:index:HubCluster", name, None, opts)
        self._dns_provider = dns_provider
        hub = config.hub
        assert hub is not None, "FleetConfig guarantees a hub section for roles that build one"
        child = pulumi.ResourceOptions(parent=self)
        labels = hub_labels(hub)
        node_labels = hub_server_labels(hub)
        hours_ca, hours_leaf = config.karmada.pki.ca_validity_hours, config.karmada.pki.leaf_validity_hours
        # preflight.check_deployed already refused what this plan cannot do; here it only decides.
        self.plan = changes.plan_hub(hub, config.karmada.etcd, live.read_deployed(hub))
        protected = pulumi.ResourceOptions(parent=self, protect=hub.protect)

        network = hcloud.Network(f"{name}-network", name=hub.name, ip_range=str(hub.network.cidr),
                                 labels={**labels, **changes.record_labels(hub, config.karmada.etcd)}, opts=child)
        subnet = hcloud.NetworkSubnet(
            f"{name}-subnet", network_id=network.id.apply(int), type="cloud", network_zone=hub.network_zone,
            ip_range=str(hub.network.subnet), opts=child,
        )
        placement = hcloud.PlacementGroup(f"{name}-spread", name=f"{hub.name}-control-plane", type="spread",
                                          labels=labels, opts=child)
        firewall = hcloud.Firewall(f"{name}-firewall", name=f"{hub.name}-control-plane", labels=labels,
                                   rules=firewall_rules(hub, dns_service=config.dns is not None
                                                                  and config.dns.self_hosted_mode), opts=child)
        ssh_keys = [
            hcloud.SshKey(f"{name}-ssh-{key.name}", name=f"{hub.name}-{key.name}", public_key=key.public_key,
                          labels=labels, opts=child)
            for key in hub.ssh_keys
        ]

        world = hub.load_balancer.world_reachable
        lb = hcloud.LoadBalancer(
            f"{name}-api-lb", name=f"{hub.name}-api", load_balancer_type=hub.load_balancer.type,
            location=hub.lb_location, algorithm=hcloud.LoadBalancerAlgorithmArgs(type="round_robin"),
            labels={**labels, **({WORLD_REACHABLE_LABEL: "true"} if world else {})},
            opts=pulumi.ResourceOptions(parent=self, protect=hub.protect),
        )
        self.lb_private_ip = lb_private_ip(hub)
        # No public interface unless the stack opted in: the LB has no firewall, apiCidrs would not apply to it.
        lb_net = hcloud.LoadBalancerNetwork(
            f"{name}-api-lb-network", load_balancer_id=lb.id.apply(int), subnet_id=subnet.id, ip=self.lb_private_ip,
            enable_public_interface=world, opts=child,
        )
        hcloud.LoadBalancerTarget(
            f"{name}-api-lb-targets", load_balancer_id=lb.id.apply(int), type="label_selector",
            label_selector=",".join(f"{k}={v}" for k, v in sorted(node_labels.items())), use_private_ip=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[lb_net]),
        )
        for service, listen, dest in (("k3s", K3S_API_PORT, K3S_API_PORT),
                                      ("karmada", KARMADA_API_PORT, KARMADA_API_NODE_PORT)):
            hcloud.LoadBalancerService(
                f"{name}-api-lb-{service}", load_balancer_id=lb.id, protocol="tcp", listen_port=listen,
                destination_port=dest,
                health_check=hcloud.LoadBalancerServiceHealthCheckArgs(
                    protocol="tcp", port=dest, interval=5, timeout=3, retries=2),
                opts=child,
            )
        self.lb_ipv4 = lb.ipv4
        # One Primary IP per server, made before the servers: the addresses go into tls-san and the
        # karmada-apiserver's certificate, and survive a server's replacement (auto_delete off).
        primary_ips = [
            hcloud.PrimaryIp(
                f"{name}-ipv4-{index}", name=f"{hub.name}-cp-{index}-ipv4", type="ipv4",
                location=hub.server_location(index), assignee_type="server", auto_delete=False,
                delete_protection=hub.protect, labels=labels,
                opts=pulumi.ResourceOptions(parent=self, protect=hub.protect))
            for index in range(hub.servers)
        ]
        self.server_ipv4s = [ip.ip_address for ip in primary_ips]
        self.first_server_ipv4 = self.server_ipv4s[0]
        api_host = pulumi.Output.from_input(hub.api_dns_name) if hub.api_dns_name else self.first_server_ipv4
        self.karmada_api_host = api_host
        self.api_endpoint = api_host.apply(lambda h: f"https://{h}:{K3S_API_PORT}")
        # Clients reach the karmada-apiserver by the API name when there is one (the program's own clients verify
        # the in-cluster name: pki_spec.APISERVER_IN_CLUSTER_NAME), so server addresses are SANs only without it.
        self.karmada_api_ips = [*([] if hub.api_dns_name else self.server_ipv4s), self.lb_private_ip,
                                *([lb.ipv4] if world else [])]

        # --- the k3s CA set, generated up front (k3s uses it as-is on the first server's first start)
        # hub.protect: a deleted or replaced CA key is a new trust root for every server and kubeconfig
        cas = {ca: tls.ca(f"{name}-{short}", f"{short}@karmada-hub", hours_ca, protected)
               for ca, short in K3S_CA_NAMES.items()}
        self.client_ca = cas["client-ca"]
        """Signs the host cluster's client certificates (the admin's here, each region stack's in roles.hub)."""
        self.server_ca_pem = cas["server-ca"].cert_pem
        service_key = tls.private_key(f"{name}-service-account", child)
        admin = tls.leaf(f"{name}-admin", cas["client-ca"], "system:admin", tls.USES["client"], hours_leaf, child,
                         organization="system:masters")
        self.certificates = [*cas.values(), admin]
        """The k3s CAs and the admin client cert (for the expiry alerts)."""
        password = random.RandomPassword(f"{name}-token-password", length=48, special=False, opts=child)
        token = pulumi.Output.secret(
            pulumi.Output.all(cas["server-ca"].cert_pem, password.result).apply(
                lambda a: cloud_init.join_token(a[0], a[1]))
        )
        tls_sans = [*self.server_ipv4s, pulumi.Output.from_input(self.lb_private_ip), *([lb.ipv4] if world else [])]
        if hub.api_dns_name:
            tls_sans.append(pulumi.Output.from_input(hub.api_dns_name))

        ca_material = pulumi.Output.all(
            certs=pulumi.Output.all(**{ca: pair.cert_pem for ca, pair in cas.items()}),
            keys=pulumi.Output.all(**{ca: pair.key_pem for ca, pair in cas.items()}),
            service=service_key.private_key_pem,
        )
        join_url = f"https://{self.lb_private_ip}:{K3S_API_PORT}"
        etcd_s3_secret = cloud_init.ETCD_S3_SECRET if config.karmada.etcd.backup is not None else None
        servers = []
        for server_plan in self.plan.servers:
            index, server_name = server_plan.index, server_plan.name
            ip = private_ip(hub, index)
            joins = server_plan.joins
            peers = (*(private_ip(hub, i) for i in range(hub.servers) if i != index), self.lb_private_ip)

            def render(args: list, server_name: str = server_name, ip: str = ip, joins: bool = joins,
                       peers: tuple[str, ...] = peers) -> str:
                tok, sans, material = args
                ca = (None if joins else cloud_init.K3sCa(certs=dict(material["certs"]), keys=dict(material["keys"]),
                                                          service_key=material["service"]))
                return cloud_init.user_data(cloud_init.K3sServer(
                    node_name=server_name, private_ip=ip, k3s_version=hub.k3s_version, token=tok,
                    tls_sans=tuple(sans), join_url=join_url if joins else None, k3s_sha256=hub.k3s_sha256,
                    node_labels=tuple(f"{k}={v}" for k, v in sorted(node_labels.items())), ca=ca,
                    peers=() if joins else peers, etcd_s3_secret=etcd_s3_secret,
                ))

            user_data = pulumi.Output.secret(pulumi.Output.all(token, pulumi.Output.all(*tls_sans), ca_material)
                                             .apply(render))
            servers.append(hcloud.Server(
                f"{name}-server-{index}", name=server_name, server_type=server_plan.server_type, image=hub.image,
                location=server_plan.location, placement_group_id=placement.id.apply(int),
                ssh_keys=[k.name for k in ssh_keys], firewall_ids=[firewall.id.apply(int)], labels=node_labels,
                user_data=user_data,
                public_nets=[hcloud.ServerPublicNetArgs(ipv4_enabled=True, ipv4=primary_ips[index].id.apply(int),
                                                        ipv6_enabled=True)],
                networks=[hcloud.ServerNetworkArgs(network_id=network.id.apply(int), ip=ip, alias_ips=[])],
                # keep_disk: a resize keeps the disk size, so it can be undone (Hetzner cannot shrink a disk)
                shutdown_before_deletion=True, delete_protection=hub.protect, rebuild_protection=hub.protect,
                keep_disk=True,
                opts=pulumi.ResourceOptions(
                    parent=self, depends_on=[subnet], protect=hub.protect,
                    # user_data/image/ssh_keys force replacement; a running etcd member is never replaced by drift.
                    ignore_changes=["userData", "image", "sshKeys"],
                    # name and private IP are unique in the project: the old server must go before its successor
                    delete_before_replace=True,
                ),
            ))

        def admin_kubeconfig(endpoint: pulumi.Input[str]) -> pulumi.Output[str]:
            return pulumi.Output.secret(pulumi.Output.all(
                endpoint, cas["server-ca"].cert_pem, admin.cert_pem, admin.key_pem,
            ).apply(lambda a: kubeconfig(hub.name, a[0], a[1], a[2], a[3])))

        # People and region stacks dial the DNS name (every server's address); this program dials the first
        # server's Primary IP, which is in the certificate too, is filtered by the same firewall (the machine
        # running `pulumi up` must be inside apiCidrs) and needs no DNS record on the first `up`.
        self.kubeconfig = admin_kubeconfig(self.api_endpoint)
        by_address = admin_kubeconfig(self.first_server_ipv4.apply(lambda ip_: f"https://{ip_}:{K3S_API_PORT}"))
        self._api_record(name, config, self.server_ipv4s)
        self.readiness = ApiReadiness(
            f"{name}-api-ready",
            url=self.first_server_ipv4.apply(lambda ip_: f"https://{ip_}:{K3S_API_PORT}/readyz"),
            ca_pem=cas["server-ca"].cert_pem, client_cert_pem=admin.cert_pem, client_key_pem=admin.key_pem,
            kubeconfig=by_address, timeout_seconds=1200,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*servers, lb_net]),
        )
        self.provider = k8s.Provider(
            "k8s-host", kubeconfig=self.readiness.kubeconfig, enable_server_side_apply=True,
            delete_unreachable=False, opts=pulumi.ResourceOptions(parent=self, depends_on=[self.readiness]),
        )
        # Each node's gate asks another server's API (the one waited for may be the one that was powered off).
        def api_url(index: int) -> pulumi.Output[str]:
            other = self.server_ipv4s[(index + 1) % len(self.server_ipv4s)]
            return pulumi.Output.from_input(other).apply(lambda ip_: f"https://{ip_}:{K3S_API_PORT}")

        self.node_gates = [
            NodeReadiness(
                f"{name}-node-{p.index}-ready", api_url=api_url(p.index), node=p.name, trigger=p.server_type,
                ca_pem=cas["server-ca"].cert_pem, client_cert_pem=admin.cert_pem, client_key_pem=admin.key_pem,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[server, self.readiness]),
            )
            for p, server in zip(self.plan.servers, servers, strict=True)
        ]
        self.servers = servers
        self.register_outputs({
            "apiEndpoint": self.api_endpoint, "lbIpv4": self.lb_ipv4, "lbPrivateIp": self.lb_private_ip,
            "serverIpv4s": self.server_ipv4s,
            "kubeconfig": self.kubeconfig, "servers": [s.name for s in servers],
        })

    def _api_record(self, name: str, config: FleetConfig,
                    addresses: list[pulumi.Output[str]]) -> hcloud.ZoneRrset | None:
        """`hub.apiDnsName` -> every server's Primary IP (clients try each address in turn), when the name lies
        in the zone the stack manages at Hetzner (`dns.domain`; its parent zone in dns mode self-hosted, where a
        name under dns.domain is served by the fleet's own nameservers instead: traffic/nameserver_docs.py). Any
        other name is the operator's to create (docs/runbooks/first-deploy.md)."""
        hub, dns = config.hub, config.dns
        assert hub is not None
        where = dns.hetzner_record(hub.api_dns_name) if dns is not None else None
        if where is None or dns is None:
            return None
        zone, relative = where
        return hcloud.ZoneRrset(f"{name}-api-record", zone=zone, name=relative, type="A",
                                ttl=max(dns.record_ttl, HETZNER_DNS_MIN_TTL),
                                records=[hcloud.ZoneRrsetRecordArgs(value=ip) for ip in addresses],
                                opts=pulumi.ResourceOptions(parent=self, provider=self._dns_provider))


def api_record_name(api_dns_name: str | None, zone: str | None) -> str | None:
    """`api.hub.dev.example.com` in zone `dev.example.com` -> `api.hub`; None when the name is not in the zone."""
    if not api_dns_name or not zone or not api_dns_name.endswith("." + zone):
        return None
    return api_dns_name[: -len(zone) - 1]

