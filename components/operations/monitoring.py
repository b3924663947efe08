"""HubMonitoring: PodMonitors, a PrometheusRule and the member-readiness exporter, for a Prometheus Operator the
user already runs on the hub's host cluster (on when `monitoring.enabled`).

Wires `monitoring_docs` and `alerts` into both API servers: on the host, Prometheus's client certificate (Karmada
CA), one PodMonitor per scrape target, the rules (certificate expiry recorded from this stack's certificates),
and the exporter with its own certificate; in karmada-apiserver, the two users' RBAC. Runbook:
docs/runbooks/monitoring.md; targets and network flows: docs/monitoring.md.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import pulumi

from components.config import FleetConfig
from components.karmada import manifests
from components.kube import agent_script, tls
from components.kube.objects import apply, apply_rendered, with_secret_checksum
from components.operations import alerts
from components.operations import monitoring_docs as docs


def certificate_records(certs: Sequence[tls.KeyPair]) -> list[alerts.CertificateRecord]:
    """What the recording rules need of each certificate, with its `validity_end_time` as an Output."""
    out = []
    for pair in certs:
        assert pair.certificate is not None, f"{pair.name}: not a certificate this program issued"
        out.append(alerts.CertificateRecord(pair.name, pair.kind, pair.signer, pair.certificate.validity_end_time,
                                            pair.early_renewal_hours))
    return out


class HubMonitoring(pulumi.ComponentResource):
    def __init__(self, name: str, config: FleetConfig, host_provider: pulumi.ProviderResource,
                 karmada_provider: pulumi.ProviderResource, karmada_ca: tls.KeyPair,
                 certificates: Sequence[tls.KeyPair], after_host: Sequence[pulumi.Resource],
                 after_karmada: Sequence[pulumi.Resource], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("karmada-hub:index:HubMonitoring", name, None, opts)
        mon = config.monitoring
        assert mon.enabled and mon.runbook_base_url is not None
        hours = config.karmada.pki.leaf_validity_hours
        child = pulumi.ResourceOptions(parent=self)
        on_host = pulumi.ResourceOptions(parent=self, provider=host_provider, depends_on=list(after_host))
        on_hub = pulumi.ResourceOptions(parent=self, provider=karmada_provider, depends_on=list(after_karmada))
        for obj in docs.karmada_rbac():
            apply("karmada", obj, on_hub)

        prometheus = tls.leaf(f"{name}-prometheus", karmada_ca, docs.PROMETHEUS_USER, tls.USES["client"], hours, child)
        exporter = tls.leaf(f"{name}-hub-exporter", karmada_ca, docs.EXPORTER_USER, tls.USES["client"], hours, child)
        prometheus_pki = [karmada_ca.cert_pem, prometheus.cert_pem, pulumi.Output.secret(prometheus.key_pem)]
        client = apply_rendered("host", functools.partial(docs.client_secret, mon.prometheus_namespace), prometheus_pki,
                                on_host)
        after_client = pulumi.ResourceOptions.merge(on_host, pulumi.ResourceOptions(depends_on=[client]))
        dns_mode = config.dns.mode if config.dns is not None else None
        for target in docs.scrape_targets(dns_mode):
            apply("host", docs.pod_monitor(target, mon.labels, mon.scrape_interval_seconds, mon.prometheus_namespace),
                  after_client)

        etcd = config.karmada.etcd
        thresholds = alerts.Thresholds(
            etcd_replicas=etcd.replicas, apiserver_replicas=config.karmada.replicas.apiserver,
            backup_schedule=etcd.backup.schedule if etcd.backup is not None else None,
            defrag_schedule=etcd.defrag_schedule, dns_mode=dns_mode,
            vantage_points=config.hub.servers if config.hub is not None else 3,
            external_dns_interval_seconds=config.dns.interval_seconds if config.dns is not None else 60)
        records = certificate_records([*certificates, prometheus, exporter])
        apply("host", docs.prometheus_rule(alerts.rule_groups(thresholds, mon.runbook_base_url, records), mon.labels),
              on_host)

        exporter_pki = [karmada_ca.cert_pem, exporter.cert_pem, pulumi.Output.secret(exporter.key_pem)]
        source = agent_script.source(docs.EXPORTER_SCRIPT)
        deps = [apply_rendered("host", docs.exporter_cert_secret, exporter_pki, on_host),
                apply("host", docs.exporter_configmap(source), on_host)]
        mounted = [(docs.EXPORTER_CERT_SECRET,
                    pulumi.Output.all(*exporter_pki).apply(lambda v: docs.exporter_cert_secret(*v)))]
        apply("host", with_secret_checksum(docs.exporter_deployment(source), mounted),
              pulumi.ResourceOptions.merge(on_host, pulumi.ResourceOptions(depends_on=deps)))
        apply("host", manifests.pdb(docs.EXPORTER), on_host)
        self.certificates = [prometheus, exporter]
        self.register_outputs({"rule": docs.RULE_NAME})
