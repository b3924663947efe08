"""FleetDns: the one owner of the fleet's global names, on the hub.

On the hub's host cluster, in namespace `external-dns`:

- the traffic failover controller (failover_docs.py, agents/traffic_failover.py), one replica per hub server:
  it probes every region's load balancer for every published name and writes one DNSEndpoint per name;
- the DNSEndpoint CRD of the pinned external-dns release (dnsendpoint_crd.py, fetched and sha256-verified);
- external-dns with the Hetzner webhook, `--source=crd` alone: the only writer of the records. It is ordered
  after the controller's Deployment, whose readiness means "every known name decided", so on first deploy the
  DNSEndpoints exist before external-dns (with `--policy=sync`) switches to them;
- the status refresher, which keeps the Ingress templates' aggregated status honest after a member dies
  (Karmada alone never drops a dead member's address, docs/traffic-failover.md §2). It is no longer on the DNS
  path.

In dns mode self-hosted there is no external-dns: the controller writes the zone itself (RFC 2136 + TSIG) to the
fleet's own nameservers, Knot on every hub server in namespace `karmada-dns` (nameserver_docs.py), and this stack
owns the delegation in the parent zone at Hetzner (NS records and the nameservers' address records), created only
after the controller is ready, i.e. after every known name is on a nameserver.

It lives in the stack that owns the hub (role all-in-one or hub): one owner of the fleet's names, so region stacks
never run a second writer. Region stacks publish their load balancer address for the controller
(RegionalTraffic, `failover_docs.region_configmap`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pulumi
import pulumi_hcloud as hcloud
import pulumi_random as random

from components.config import FleetConfig
from components.hetzner.cloud_init import POD_CIDR
from components.hetzner.hub_cluster import private_ip
from components.kube import agent_script, rollouts, tls
from components.kube.objects import apply, apply_rendered, with_secret_checksum
from components.traffic import dnsendpoint_crd, docs
from components.traffic import failover_docs as failover
from components.traffic import nameserver_docs as ns
from components.traffic import refresher_docs as refresher


class FleetDns(pulumi.ComponentResource):
    namespace: list[pulumi.Resource]
    """The `external-dns` namespace on the host: region ConfigMaps written by this stack wait for it."""

    def __init__(self, name: str, config: FleetConfig, host_provider: pulumi.ProviderResource,
                 karmada_provider: pulumi.ProviderResource, karmada_ca: tls.KeyPair,
                 after: list[pulumi.Resource], opts: pulumi.ResourceOptions | None = None, *,
                 dns_provider: pulumi.ProviderResource | None = None,
                 server_ipv4s: Sequence[pulumi.Input[str]] = ()) -> None:
        """`dns_provider` and `server_ipv4s` (the hub servers' Primary IPs): mode self-hosted's delegation."""
        super().__init__("karmada-hub:index:FleetDns", name, None, opts)
        dns = config.dns
        assert dns is not None and config.hub is not None
        hours = config.karmada.pki.leaf_validity_hours
        on_host = pulumi.ResourceOptions(parent=self, provider=host_provider)
        on_hub = pulumi.ResourceOptions(parent=self, provider=karmada_provider, depends_on=after)
        for obj in [*refresher.karmada_rbac(), *failover.karmada_rbac()]:
            apply("karmada", obj, on_hub)

        self_hosted = dns.self_hosted_mode
        objects = [docs.external_dns_namespace()] if self_hosted else docs.external_dns_objects(
            dns, docs.TOKEN_SECRET_NAME)
        namespaces = [apply("host", o, on_host) for o in objects if o["kind"] == "Namespace"]
        self.namespace = namespaces
        in_ns = pulumi.ResourceOptions.merge(on_host, pulumi.ResourceOptions(depends_on=namespaces))
        # hub.protect: deleting the CRD deletes every DNSEndpoint, and external-dns then every record it owns
        crd = apply("host", dnsendpoint_crd.load(), pulumi.ResourceOptions.merge(
            on_host, pulumi.ResourceOptions(protect=config.hub.protect)))

        # The failover controller: its karmada client cert (the RBAC above names its CN), host RBAC, the script.
        failover_cert = tls.leaf(f"{name}-traffic-failover", karmada_ca, failover.USER, tls.USES["client"], hours,
                                 pulumi.ResourceOptions(parent=self))
        failover_source = agent_script.source(failover.SCRIPT_KEY)
        failover_pki = [karmada_ca.cert_pem, failover_cert.cert_pem, pulumi.Output.secret(failover_cert.key_pem)]
        failover_deps = [
            crd,
            apply_rendered("host", failover.cert_secret, failover_pki, in_ns),
            apply("host", failover.script_configmap(failover_source), in_ns),
            *(apply("host", o, in_ns) for o in failover.host_rbac()),
        ]
        failover_secret = pulumi.Output.all(*failover_pki).apply(lambda v: failover.cert_secret(*v))
        mounted_secrets: list[tuple[str, pulumi.Output]] = [(failover.CERT_SECRET, failover_secret)]
        primaries = [private_ip(config.hub, i) for i in range(config.hub.servers)]
        nameservers: list[pulumi.Resource] = []
        if self_hosted:
            writer = random.RandomBytes(f"{name}-tsig-writer", length=32, opts=pulumi.ResourceOptions(parent=self))
            controller_tsig = pulumi.Output.secret(writer.base64).apply(
                lambda w: ns.controller_tsig_secret(failover.NAMESPACE, w))
            mounted_secrets.append((ns.CONTROLLER_TSIG_SECRET, controller_tsig))
            nameservers, zone = self._nameservers(name, config, writer, on_host, list(server_ipv4s))
            failover_deps += [
                apply_rendered("host", lambda w: ns.controller_tsig_secret(failover.NAMESPACE, w),
                               [pulumi.Output.secret(writer.base64)], in_ns),
                apply_rendered("host", lambda text: ns.controller_zone_configmap(failover.NAMESPACE, text), [zone],
                               in_ns),
            ]
        after_deps = pulumi.ResourceOptions.merge(in_ns, pulumi.ResourceOptions(
            depends_on=[*namespaces, *failover_deps, *nameservers]))
        controller = apply("host", with_secret_checksum(
            failover.deployment(dns, config.hub.servers, failover_source, primaries=primaries),
            mounted_secrets), after_deps)
        apply("host", failover.pod_disruption_budget(), in_ns)
        if self_hosted:
            self._delegation(name, config, dns_provider, list(server_ipv4s), [controller, *nameservers])

        if not self_hosted:
            # external-dns: the Hetzner token, its Role, then the Deployment, after the controller (migration order).
            token = pulumi.Output.secret(config.secrets[dns.token_config_key])
            secrets = [apply_rendered("host", docs.external_dns_token_secret, [token], in_ns)]
            mounted = [(docs.TOKEN_SECRET_NAME, token.apply(docs.external_dns_token_secret))]
            after_secrets = pulumi.ResourceOptions.merge(in_ns, pulumi.ResourceOptions(
                depends_on=[*namespaces, *secrets, crd]))
            rbac = [apply("host", o, after_secrets) for o in objects if o["kind"] in ("ServiceAccount", "Role",
                                                                                      "RoleBinding")]
            for obj in objects:
                if obj["kind"] == "Deployment":
                    apply("host", with_secret_checksum(obj, mounted), pulumi.ResourceOptions.merge(
                        after_secrets, pulumi.ResourceOptions(depends_on=[*namespaces, *secrets, crd, *rbac,
                                                                          controller])))

        # The status refresher: its own client cert (the RBAC above names its CN), the script, two replicas.
        refresher_cert = tls.leaf(f"{name}-status-refresher", karmada_ca, refresher.USER, tls.USES["client"], hours,
                                  pulumi.ResourceOptions(parent=self))
        source = agent_script.source(refresher.SCRIPT_KEY)
        self.certificates = [failover_cert, refresher_cert]
        refresher_pki = [karmada_ca.cert_pem, refresher_cert.cert_pem, pulumi.Output.secret(refresher_cert.key_pem)]
        refresher_deps = [
            apply_rendered("host", refresher.cert_secret, refresher_pki, in_ns),
            apply("host", refresher.script_configmap(source), in_ns),
        ]
        refresher_secret = pulumi.Output.all(*refresher_pki).apply(lambda v: refresher.cert_secret(*v))
        apply("host", with_secret_checksum(refresher.deployment(dns.refresh_seconds, source),
                                           [(refresher.CERT_SECRET, refresher_secret)]),
              pulumi.ResourceOptions.merge(in_ns, pulumi.ResourceOptions(depends_on=[*namespaces, *refresher_deps])))
        apply("host", refresher.pod_disruption_budget(), in_ns)
        self.register_outputs({"domain": dns.domain, "ttl": dns.record_ttl, "mode": dns.mode})

    def _nameservers(self, name: str, config: FleetConfig, writer: random.RandomBytes, on_host: pulumi.ResourceOptions,
                     server_ipv4s: list[pulumi.Input[str]]) -> tuple[list[pulumi.Resource], pulumi.Output[str]]:
        """karmada-dns: the namespace, the keys, the configuration and the Knot DaemonSet; returns them and the
        zone's JSON (for the controller's copy)."""
        dns, hub = config.dns, config.hub
        assert dns is not None and hub is not None
        transfer = random.RandomBytes(f"{name}-tsig-transfer", length=32, opts=pulumi.ResourceOptions(parent=self))
        namespace = apply("host", ns.namespace(), on_host)
        in_ns = pulumi.ResourceOptions.merge(on_host, pulumi.ResourceOptions(depends_on=[namespace]))
        secrets = [pulumi.Output.secret(writer.base64), pulumi.Output.secret(transfer.base64)]
        tsig = apply_rendered("host", ns.tsig_secret, secrets, in_ns)
        nodes = [node for _, node in ns.hub_nameservers(dns, hub)]
        privates = [private_ip(hub, i) for i in range(hub.servers)]

        def render(*public: str) -> tuple[dict, dict]:
            static = ns.static_api_record(dns, hub.api_dns_name, list(public))
            zone = ns.zone_config(dns, hub, static)
            addresses = {node: [pub, priv] for node, pub, priv in zip(nodes, public, privates, strict=True)}
            return zone, ns.config_map(dns, str(hub.network.cidr), POD_CIDR, zone, addresses)

        ips = pulumi.Output.all(*server_ipv4s)
        configmap = apply_rendered("host", lambda *public: render(*public)[1], list(server_ipv4s), in_ns,
                                   placeholder="192.0.2.1")
        seed_source = agent_script.source(ns.SEED_SCRIPT)
        seed = apply("host", ns.seed_configmap(seed_source), in_ns)
        rbac = [apply("host", o, in_ns) for o in ns.snapshot_rbac(failover.NAMESPACE, failover.NAME)]
        config_text = ips.apply(lambda public: json.dumps(render(*public)[1]["data"], sort_keys=True))
        # the pods mount knot-tsig: its checksum rolls them when a key changes (kube.rollouts)
        tsig_digest = pulumi.Output.unsecret(pulumi.Output.all(*secrets).apply(
            lambda keys: rollouts.checksum_of([ns.tsig_secret(*keys)])))

        def daemonset_doc(text: str, digest: str) -> dict:
            doc = ns.daemonset(dns, seed_source, text)
            return rollouts.annotated(doc, rollouts.require_exact(doc, [ns.TSIG_SECRET]), digest)

        daemonset = apply_rendered(
            "host", daemonset_doc, [config_text, tsig_digest],
            pulumi.ResourceOptions.merge(in_ns, pulumi.ResourceOptions(depends_on=[tsig, configmap, seed])))
        zone = ips.apply(lambda public: json.dumps(render(*public)[0], sort_keys=True, indent=1))
        return [namespace, tsig, configmap, seed, *rbac, daemonset], zone

    def _delegation(self, name: str, config: FleetConfig, dns_provider: pulumi.ProviderResource | None,
                    server_ipv4s: list[pulumi.Input[str]], ready: list[pulumi.Resource]) -> None:
        """The parent zone's records: the nameservers' addresses first, the NS set (the delegation itself) only
        after the controller is ready (every known name decided and on a nameserver) and Knot runs everywhere."""
        dns, hub = config.dns, config.hub
        assert dns is not None and hub is not None
        child = pulumi.ResourceOptions(parent=self, provider=dns_provider)
        addresses = []
        for record in ns.delegation_records(dns, hub, server_ipv4s):
            values = [hcloud.ZoneRrsetRecordArgs(value=v) for v in record["records"]]
            args = dict(zone=record["zone"], name=record["name"], type=record["type"], ttl=record["ttl"],
                        labels=record["labels"], records=values)
            if record["type"] == "NS":
                hcloud.ZoneRrset(f"{name}-delegation", **args, opts=pulumi.ResourceOptions.merge(
                    child, pulumi.ResourceOptions(depends_on=[*ready, *addresses])))
            else:
                addresses.append(hcloud.ZoneRrset(f"{name}-ns-{record['name']}", **args, opts=child))
