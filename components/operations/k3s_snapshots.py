"""K3sSnapshots: the hub's own (k3s) etcd snapshots leave the servers, to the stack's object storage.

k3s takes its scheduled snapshots itself (`etcd-snapshot-schedule-cron`, every six hours on every server, in
cloud-init); with `etcd-s3` and `etcd-s3-config-secret` (cloud_init.etcd_s3_config) it uploads each one to the
object storage this kube-system Secret describes. The Secret is the only place the credentials live: not in
user-data, not on the servers' disks. The same endpoint, bucket and key pair as `karmada.etcd.backup`, under
`k3s-etcd/<stack>/` (the Karmada uploader's own snapshots live under `<prefix>/<stack>/`).
Keys: k3s `pkg/etcd/s3/config_secret.go` `getConfigFromSecret`. A restore cannot read a Secret (no API
server yet): docs/runbooks/one-hub-server-lost.md passes the same values on the command line.

Retention in object storage is a count over all servers together, not per server: k3s prunes
`<folder>/etcd-snapshot*` of every server to the newest N (`pkg/etcd/s3/s3.go` `SnapshotRetention`, stored
version), and since v1.34.0 (k3s-io/k3s#12669; v1.34.1 is pinned) N is `etcd-s3-retention` (default 5), no longer
`etcd-snapshot-retention` (k3s-io/k3s#13769): left alone, k3s keeps the last one or two runs of a three-server hub.
The retention the program promises, `s3_retention(servers)` (every server's seven days), is applied by the etcd
backup job on every run when the stack sets `karmada.etcd.backup.retain` (agents/etcd_backup_upload.py
`k3s_expired`, the same rule), so it holds whatever k3s does; without `retain` the hub's key only writes and the
bucket's lifecycle rule expires this folder too (`job_bound`).
k3s' own prune is only lifted out of its way: the Secret sets `etcd-s3-retention` to S3_RETENTION_CEILING, the
largest hub's count (the Secret must not change with the server count: pulumi-kubernetes replaces a Secret whose
data changes). It cannot go into the config file: any S3 setting beside `etcd-s3` and the Secret's name makes k3s
ignore the Secret (`GetClient`); in the Secret it is a documented key ("keys in the Secret correspond to the
--etcd-s3-* CLI flags", k3s-io/docs docs/cli/etcd-snapshot.md), but whether v1.34.1 reads it there could not be
proven offline. docs/runbooks/restore-etcd.md says how to check what k3s applies.
"""

from __future__ import annotations

import pulumi

from components.config import MAX_SPREAD_GROUP_SERVERS, EtcdBackupConfig, FleetConfig
from components.hetzner.cloud_init import ETCD_S3_SECRET, SNAPSHOT_RETENTION
from components.kube.objects import apply_rendered

SECRET_TYPE = "etcd.k3s.cattle.io/s3-config-secret"
FOLDER_ROOT = "k3s-etcd"


def folder(stack: str) -> str:
    return f"{FOLDER_ROOT}/{stack}"


def s3_retention(servers: int) -> int:
    """Scheduled snapshots kept in object storage, counted over every server (k3s prunes the folder as a whole):
    each server's local retention, so the bucket holds the same seven days as each server's disk."""
    if servers < 1:
        raise ValueError("a hub has at least one server")
    return servers * SNAPSHOT_RETENTION


S3_RETENTION_CEILING = s3_retention(MAX_SPREAD_GROUP_SERVERS)
"""What the Secret asks k3s to keep: the largest hub's count, so k3s never prunes below what the backup job keeps."""


def job_bound(backup: EtcdBackupConfig, stack: str, servers: int) -> tuple[str, int] | None:
    """What the etcd backup job bounds of these snapshots: (folder, how many to keep) when the stack sets `retain`
    (its key may delete); None without it, when the hub's key only writes and the bucket's lifecycle rule bounds
    this folder as it does the Karmada snapshots (security review 2, M7; docs/runbooks/restore-etcd.md)."""
    return (folder(stack), s3_retention(servers)) if backup.retain is not None else None


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
            "etcd-s3-retention": str(S3_RETENTION_CEILING),
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
