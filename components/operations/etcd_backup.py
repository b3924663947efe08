"""EtcdBackup: scheduled snapshots of Karmada's etcd, shipped to S3-compatible object storage.

Wires `etcd_backup_docs.py` into the hub's host cluster: its own etcd client certificate (etcd CA),
the object-storage key pair and the encryption key from stack secrets, the uploader script, the CronJob.
Only in stacks that own the hub, and only when `karmada.etcd.backup` is set. Restore: docs/runbooks/restore-etcd.md.
"""

from __future__ import annotations

import pulumi

from components import versions
from components.config import FleetConfig
from components.karmada import pki_spec
from components.kube import agent_script, tls
from components.kube.objects import apply, apply_rendered, with_secret_checksum
from components.operations import etcd_backup_docs as docs
from components.operations import k3s_snapshots


class EtcdBackup(pulumi.ComponentResource):
    def __init__(self, name: str, config: FleetConfig, host_provider: pulumi.ProviderResource,
                 etcd_ca: tls.KeyPair, after: list[pulumi.Resource],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("karmada-hub:index:EtcdBackup", name, None, opts)
        backup = config.karmada.etcd.backup
        assert backup is not None
        on_host = pulumi.ResourceOptions(parent=self, provider=host_provider, depends_on=after)
        spec = pki_spec.etcd_backup_cert_spec()
        cert = tls.leaf(f"{name}-{spec.name}", etcd_ca, spec.common_name, spec.usages,
                        config.karmada.pki.leaf_validity_hours, pulumi.ResourceOptions(parent=self))
        files = {"etcd/ca.crt": etcd_ca.cert_pem, f"{spec.file}.crt": cert.cert_pem,
                 f"{spec.file}.key": pulumi.Output.secret(cert.key_pem)}
        source = agent_script.source(docs.SCRIPT_KEY)
        pki_doc = docs.pki_secret(files)
        credentials = [pulumi.Output.secret(config.secrets[backup.access_key_config_key]),
                       pulumi.Output.secret(config.secrets[backup.secret_key_config_key])]
        key = pulumi.Output.secret(config.secrets[backup.encryption_key_config_key])
        deps = [
            apply("host", pki_doc, on_host),
            apply_rendered("host", docs.credentials_secret, credentials, on_host),
            apply_rendered("host", docs.encryption_secret, [key], on_host, placeholder="placeholder" * 4),
            apply("host", docs.script_configmap(source), on_host),
        ]
        mounted = [pki_doc, (docs.CREDENTIALS_SECRET,
                             pulumi.Output.all(*credentials).apply(lambda v: docs.credentials_secret(*v))),
                   (docs.ENCRYPTION_SECRET, key.apply(docs.encryption_secret))]
        etcd_image = f"{versions.KUBE_IMAGE_REGISTRY}/etcd:{config.karmada.release.etcd}"
        stack = pulumi.get_stack()
        assert config.hub is not None, "backups run on the hub"
        # the hub's own k3s snapshots share the bucket; with `retain` this job bounds them too (k3s_snapshots)
        k3s = k3s_snapshots.job_bound(backup, stack, config.hub.servers)
        job = docs.cron_job(backup, stack, etcd_image, source, config.karmada.etcd.quota_backend_bytes, k3s)
        apply("host", with_secret_checksum(job, mounted),
              pulumi.ResourceOptions.merge(on_host, pulumi.ResourceOptions(depends_on=[*after, *deps])))
        self.certificates = [cert]
        self.register_outputs({"bucket": backup.bucket, "schedule": backup.schedule})
