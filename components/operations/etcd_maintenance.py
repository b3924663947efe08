"""EtcdMaintenance: the weekly defragmentation job of Karmada's etcd, with its own etcd client certificate.

Wires `etcd_maintenance_docs.py` into the hub's host cluster in every stack that owns the hub (space comes
back only by defragmentation, backups or not). See agents/etcd_defrag.py for what a run does.
"""

from __future__ import annotations

import pulumi

from components.config import FleetConfig
from components.karmada import pki_spec
from components.kube import agent_script, tls
from components.kube.objects import apply, with_secret_checksum
from components.operations import etcd_maintenance_docs as docs


class EtcdMaintenance(pulumi.ComponentResource):
    def __init__(self, name: str, config: FleetConfig, host_provider: pulumi.ProviderResource,
                 etcd_ca: tls.KeyPair, after: list[pulumi.Resource],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("karmada-hub:index:EtcdMaintenance", name, None, opts)
        etcd = config.karmada.etcd
        on_host = pulumi.ResourceOptions(parent=self, provider=host_provider, depends_on=after)
        spec = pki_spec.etcd_maintenance_cert_spec()
        cert = tls.leaf(f"{name}-{spec.name}", etcd_ca, spec.common_name, spec.usages,
                        config.karmada.pki.leaf_validity_hours, pulumi.ResourceOptions(parent=self))
        pki = docs.pki_secret({"etcd/ca.crt": etcd_ca.cert_pem, f"{spec.file}.crt": cert.cert_pem,
                               f"{spec.file}.key": pulumi.Output.secret(cert.key_pem)}, etcd.replicas)
        source = agent_script.source(docs.SCRIPT_KEY)
        deps = [apply("host", pki, on_host), apply("host", docs.script_configmap(source), on_host)]
        apply("host", with_secret_checksum(docs.cron_job(etcd.defrag_schedule, etcd.replicas, source), [pki]),
              pulumi.ResourceOptions.merge(on_host, pulumi.ResourceOptions(depends_on=[*after, *deps])))
        self.certificates = [cert]
        self.register_outputs({"schedule": etcd.defrag_schedule})
