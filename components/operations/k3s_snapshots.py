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
`etcd-snapshot-retention` (k3s-io/k3s#13769). That flag must not go into the config file: any S3 setting beside
`etcd-s3` and the Secret's name makes k3s ignore the Secret (`GetClient`). So the Secret carries it
(`etcd-s3-retention`: "keys in the Secret correspond to the --etcd-s3-* CLI flags", k3s-io/docs
docs/cli/etcd-snapshot.md), set to `s3_retention(servers)`: every server's last seven days. Whether v1.34.1 reads
that key from the Secret could not be proven offline (stored versions of `getConfigFromSecret` build the config
without any retention, which never prunes), so the program does not depend on it: the etcd backup job applies the
same count to the same prefix on every run (agents/etcd_backup_upload.py `k3s_expired`), and the bucket is bounded
either way. docs/runbooks/restore-etcd.md says how to check what k3s applies.
"""

from __future__ import annotations

import pulumi

from components.config import EtcdBackupConfig, FleetConfig
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


def endpoint_host(endpoint: str) -> str:
    """`https://fsn1.your-objectstorage.com` -> `fsn1.your-objectstorage.com`: k3s wants the host (minio.New)
    and speaks HTTPS unless `etcd-s3-insecure`."""
    if not endpoint.startswith("https://"):
        raise ValueError(f"object storage endpoint {endpoint!r} must be https://")
    return endpoint[len("https://"):].rstrip("/")


def s3_config_secret(backup: EtcdBackupConfig, stack: str, access_key: str, secret_key: str, servers: int) -> dict:
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
            "etcd-s3-retention": str(s3_retention(servers)),
        },
    }


class K3sSnapshots(pulumi.ComponentResource):
    def __init__(self, name: str, config: FleetConfig, host_provider: pulumi.ProviderResource,
                 after: list[pulumi.Resource], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("karmada-hub:index:K3sSnapshots", name, None, opts)
        backup = config.karmada.etcd.backup
        assert backup is not None, "k3s snapshots go where the Karmada etcd backups go"
        stack = pulumi.get_stack()
        servers = config.hub.servers if config.hub is not None else 0
        apply_rendered("host", lambda a, s: s3_config_secret(backup, stack, a, s, servers),
                       [pulumi.Output.secret(config.secrets[backup.access_key_config_key]),
                        pulumi.Output.secret(config.secrets[backup.secret_key_config_key])],
                       pulumi.ResourceOptions(parent=self, provider=host_provider, depends_on=after))
        self.register_outputs({"folder": folder(stack), "retention": s3_retention(servers)})
