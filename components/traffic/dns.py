"""FleetDns: the one owner of the fleet's global names, on the hub.

external-dns with the Hetzner webhook runs on the hub's host cluster and reads the tenants' Ingress and
Service templates (and their aggregated status) from the karmada-apiserver, with the stack's short TTL.
Beside it the status refresher makes Karmada drop a dead member's address from that status, which
Karmada alone never does (docs/traffic-failover.md §2). It lives in the stack that owns the hub (role
all-in-one or hub): one owner id per fleet, so region stacks never run a second external-dns.
"""

from __future__ import annotations

import pulumi

from components.config import FleetConfig
from components.kube import agent_script, tls
from components.kube.kubeconfig import kubeconfig
from components.kube.objects import apply, apply_rendered, with_secret_checksum
from components.traffic import docs
from components.traffic import refresher_docs as refresher


class FleetDns(pulumi.ComponentResource):
    def __init__(self, name: str, config: FleetConfig, host_provider: pulumi.ProviderResource,
                 karmada_provider: pulumi.ProviderResource, karmada_url: pulumi.Input[str], karmada_ca: tls.KeyPair,
                 after: list[pulumi.Resource], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("karmada-hub:index:FleetDns", name, None, opts)
        dns = config.dns
        assert dns is not None
        hours = config.karmada.pki.leaf_validity_hours
        on_host = pulumi.ResourceOptions(parent=self, provider=host_provider)
        on_hub = pulumi.ResourceOptions(parent=self, provider=karmada_provider, depends_on=after)
        for obj in [*docs.external_dns_karmada_rbac(), *docs.ttl_guard_policy(dns), *refresher.karmada_rbac()]:
            apply("karmada", obj, on_hub)

        objects = docs.external_dns_objects(dns, docs.KUBECONFIG_SECRET_NAME, docs.TOKEN_SECRET_NAME)
        ns = [apply("host", o, on_host) for o in objects if o["kind"] == "Namespace"]
        in_ns = pulumi.ResourceOptions.merge(on_host, pulumi.ResourceOptions(depends_on=ns))

        # external-dns: a client cert for the karmada-apiserver, the Hetzner token, then the Deployment.
        cert = tls.leaf(f"{name}-external-dns", karmada_ca, docs.EXTERNAL_DNS_USER, tls.USES["client"], hours,
                        pulumi.ResourceOptions(parent=self))
        kube = pulumi.Output.secret(pulumi.Output.all(karmada_url, karmada_ca.cert_pem, cert.cert_pem, cert.key_pem)
                                    .apply(lambda a: kubeconfig("karmada", a[0], a[1], a[2], a[3])))
        token = pulumi.Output.secret(config.secrets[dns.token_config_key])
        secrets = [
            apply_rendered("host", docs.external_dns_token_secret, [token], in_ns),
            apply_rendered("host", docs.external_dns_kubeconfig_secret, [kube], in_ns),
        ]
        mounted = [(docs.TOKEN_SECRET_NAME, token.apply(docs.external_dns_token_secret)),
                   (docs.KUBECONFIG_SECRET_NAME, kube.apply(docs.external_dns_kubeconfig_secret))]
        after_secrets = pulumi.ResourceOptions.merge(in_ns, pulumi.ResourceOptions(depends_on=[*ns, *secrets]))
        for obj in objects:
            if obj["kind"] == "Deployment":
                apply("host", with_secret_checksum(obj, mounted), after_secrets)
            elif obj["kind"] != "Namespace":
                apply("host", obj, after_secrets)

        # The status refresher: its own client cert (the RBAC above names its CN), the script, two replicas.
        refresher_cert = tls.leaf(f"{name}-status-refresher", karmada_ca, refresher.USER, tls.USES["client"], hours,
                                  pulumi.ResourceOptions(parent=self))
        source = agent_script.source(refresher.SCRIPT_KEY)
        self.certificates = [cert, refresher_cert]
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
