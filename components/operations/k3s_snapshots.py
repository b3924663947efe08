"""K3sSnapshots: the hub's own (k3s) etcd snapshots leave the servers, to the stack's object storage.

k3s takes its scheduled snapshots itself (`etcd-snapshot-schedule-cron` in cloud-init); with `etcd-s3` and
`etcd-s3-config-secret` (cloud_init.etcd_s3_config) it uploads each one to the object storage this
kube-system Secret describes and applies its retention there too. The Secret is the only place the
credentials live: not in user-data, not on the servers' disks. The same endpoint, bucket and key pair as
`karmada.etcd.backup`, under `k3s-etcd/<stack>/` (the Karmada uploader only touches `<prefix>/<stack>/`).
Keys: k3s `pkg/etcd/s3/config_secret.go` `getConfigFromSecret`. A restore cannot read a Secret (no API
server yet): docs/runbooks/one-hub-server-lost.md passes the same values on the command line.
"""

from __future__ import annotations

import pulumi

from components.config import EtcdBackupConfig, FleetConfig
from components.hetzner.cloud_init import ETCD_S3_SECRET
from components.kube.objects import apply_rendered

SECRET_TYPE = "etcd.k3s.cattle.io/s3-config-secret"
FOLDER_ROOT = "k3s-etcd"


def folder(stack: str) -> str:
    return f"{FOLDER_ROOT}/{stack}"


def endpoint_host(endpoint: str) -> str:
    """`https://fsn1.your-objectstorage.com` -> `fsn1.your-objectstorage.com`: k3s wants the host (minio.New)
    and speaks HTTPS unless `etcd-s3-insecure`."""
    if not endpoint.startswith("https://"):
        raise ValueError(f"object storage endpoint {endpoint!r} must be https://")
    return endpoint[len("https://"):].rstrip("/")


def s3_config_secret(backup: EtcdBackupConfig, stack: str, access_key: str, secret_key: str) -> dict:
    if not access_key or not secret_key:
        raise ValueError("k3s snapshot credentials: access and secret key must both be set")
    return {
        "apiVersion": "v1", "kind": "Secret", "type": SECRET_TYPE,
        "metadata": {"name": ETCD_S3_SECRET, "namespace": "kube-system",
                     "labels": {"app.kubernetes.io/part-of": "karmada-hub"}},
        "stringData": {
            "etcd-s3-endpoint": endpoint_host(backup.endpoint),
            "etcd-s3-region": backup.region,
            "etcd-s3-bucket": backup.bucket,
            "etcd-s3-folder": folder(stack),
            "etcd-s3-access-key": access_key,
            "etcd-s3-secret-key": secret_key,
        },
    }


class K3sSnapshots(pulumi.ComponentResource):
    def __init__(self, name: str, config: FleetConfig, host_provider: pulumi.ProviderResource,
                 after: list[pulumi.Resource], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("karmada-hub:index:K3sSnapshots", name, None, opts)
        backup = config.karmada.etcd.backup
        assert backup is not None, "k3s snapshots go where the Karmada etcd backups go"
        stack = pulumi.get_stack()
        apply_rendered("host", lambda a, s: s3_config_secret(backup, stack, a, s),
                       [pulumi.Output.secret(config.secrets[backup.access_key_config_key]),
                        pulumi.Output.secret(config.secrets[backup.secret_key_config_key])],
                       pulumi.ResourceOptions(parent=self, provider=host_provider, depends_on=after))
        self.register_outputs({"folder": folder(stack)})
