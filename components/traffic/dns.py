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

It lives in the stack that owns the hub (role all-in-one or hub): one owner id per fleet, so region stacks never
run a second external-dns. Region stacks publish their load balancer address for the controller
(RegionalTraffic, `failover_docs.region_configmap`).
"""

from __future__ import annotations

import pulumi

from components.config import FleetConfig
from components.kube import agent_script, tls
from components.kube.objects import apply, apply_rendered, with_secret_checksum
from components.traffic import dnsendpoint_crd, docs
from components.traffic import failover_docs as failover
from components.traffic import refresher_docs as refresher


class FleetDns(pulumi.ComponentResource):
    namespace: list[pulumi.Resource]
    """The `external-dns` namespace on the host: region ConfigMaps written by this stack wait for it."""

    def __init__(self, name: str, config: FleetConfig, host_provider: pulumi.ProviderResource,
                 karmada_provider: pulumi.ProviderResource, karmada_ca: tls.KeyPair,
                 after: list[pulumi.Resource], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("karmada-hub:index:FleetDns", name, None, opts)
        dns = config.dns
        assert dns is not None and config.hub is not None
        hours = config.karmada.pki.leaf_validity_hours
        on_host = pulumi.ResourceOptions(parent=self, provider=host_provider)
        on_hub = pulumi.ResourceOptions(parent=self, provider=karmada_provider, depends_on=after)
        for obj in [*refresher.karmada_rbac(), *failover.karmada_rbac()]:
            apply("karmada", obj, on_hub)

        objects = docs.external_dns_objects(dns, docs.TOKEN_SECRET_NAME)
        ns = [apply("host", o, on_host) for o in objects if o["kind"] == "Namespace"]
        self.namespace = ns
        in_ns = pulumi.ResourceOptions.merge(on_host, pulumi.ResourceOptions(depends_on=ns))
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
        after_deps = pulumi.ResourceOptions.merge(in_ns, pulumi.ResourceOptions(depends_on=[*ns, *failover_deps]))
        controller = apply("host", with_secret_checksum(
            failover.deployment(dns, config.hub.servers, failover_source),
            [(failover.CERT_SECRET, failover_secret)]), after_deps)
        apply("host", failover.pod_disruption_budget(), in_ns)

        # external-dns: the Hetzner token, its Role, then the Deployment, after the controller (migration order).
        token = pulumi.Output.secret(config.secrets[dns.token_config_key])
        secrets = [apply_rendered("host", docs.external_dns_token_secret, [token], in_ns)]
        mounted = [(docs.TOKEN_SECRET_NAME, token.apply(docs.external_dns_token_secret))]
        after_secrets = pulumi.ResourceOptions.merge(in_ns, pulumi.ResourceOptions(depends_on=[*ns, *secrets, crd]))
        rbac = [apply("host", o, after_secrets) for o in objects if o["kind"] in ("ServiceAccount", "Role",
                                                                                  "RoleBinding")]
        for obj in objects:
            if obj["kind"] == "Deployment":
                apply("host", with_secret_checksum(obj, mounted), pulumi.ResourceOptions.merge(
                    after_secrets, pulumi.ResourceOptions(depends_on=[*ns, *secrets, crd, *rbac, controller])))

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
              pulumi.ResourceOptions.merge(in_ns, pulumi.ResourceOptions(depends_on=[*ns, *refresher_deps])))
        apply("host", refresher.pod_disruption_budget(), in_ns)
        self.register_outputs({"domain": dns.domain, "ttl": dns.ttl})
