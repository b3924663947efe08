"""etcd backup documents: a CronJob on the hub's host cluster that snapshots Karmada's etcd and ships it off.

One pod per run, two steps: an init container from the pinned etcd image runs `etcdctl snapshot save`
(flags.etcdctl_flags + ETCDCTL_SNAPSHOT_SAVE) with its own client certificate into an emptyDir; then
`agents/etcd_backup_upload.py upload` encrypts the file (AES-256-GCM, format KHB1, with the stack secret
mounted from its own Secret) and streams it as an S3 multipart upload to `<prefix>/<stack>/<UTC time>.db.enc`,
then (only with `retain`) deletes the oldest beyond it and bounds the hub's own k3s snapshots in the same bucket
(k3s_snapshots); without, it only writes and the bucket's lifecycle rule does retention for both. Memory is
bounded by the part size, not the snapshot size. A
snapshot that never leaves the hub's servers is not a backup, so there is no local-only mode. Works embed
tenants' Secrets, so nothing leaves unencrypted. Restore: docs/runbooks/restore-etcd.md.

Plain dicts, no Pulumi; certificates and credentials arrive as arguments.
"""

from __future__ import annotations

import base64
from typing import Any

from components.config import EtcdBackupConfig
from components.karmada import flags, manifests
from components.kube import agent_script
from components.kube.flows import Dial, Workload
from components.kube.pod_security import container_security_context

NAME = "etcd-backup"
NAMESPACE = flags.NAMESPACE
SCRIPT_KEY = "etcd_backup_upload.py"
PKI_SECRET = NAME + manifests.PKI_SECRET_SUFFIX
CREDENTIALS_SECRET = f"{NAME}-s3"
ENCRYPTION_SECRET = f"{NAME}-encryption"
ENCRYPTION_KEY = "key"
KEY_DIR = "/etc/karmada-hub/backup-key"
UPLOAD_MEMORY_LIMIT = "128Mi"
"""The uploader holds one 16 MiB part and one 1 MiB record, whatever the snapshot's size (peak RSS 46 MiB for a
192 MiB snapshot, tests/test_etcd_backup.py; the old read-it-all uploader died past ~200 MiB under 256Mi)."""

_LABELS = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "karmada-hub"}


def _meta(name: str) -> dict[str, Any]:
    return {"name": name, "namespace": NAMESPACE, "labels": dict(_LABELS)}


def pki_files() -> list[str]:
    """The PKI files the snapshot step's flags name (relative to flags.PKI_DIR)."""
    return manifests.pki_files(flags.etcdctl_flags())


def pki_secret(files: dict[str, str]) -> dict[str, Any]:
    """host: the etcd CA and the backup client cert/key, keyed as the volume items expect."""
    missing = sorted(set(pki_files()) - set(files))
    if missing:
        raise ValueError(f"etcd backup secret: missing {', '.join(missing)}")
    return manifests.secret(PKI_SECRET, {manifests.secret_key(f): files[f] for f in pki_files()}, component=NAME)


def credentials_secret(access_key: str, secret_key: str) -> dict[str, Any]:
    """host: the object storage key pair, read by the uploader from its environment only."""
    if not access_key or not secret_key:
        raise ValueError("etcd backup credentials: access and secret key must both be set")
    data = {"S3_ACCESS_KEY_ID": access_key, "S3_SECRET_ACCESS_KEY": secret_key}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": _meta(CREDENTIALS_SECRET), "type": "Opaque",
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}


def encryption_secret(key: str) -> dict[str, Any]:
    """host: the stack secret the uploader encrypts with, mounted as a file (never an env var or argument)."""
    if len(key.strip()) < 32:
        raise ValueError("etcd backup encryption key: at least 32 characters")
    return {"apiVersion": "v1", "kind": "Secret", "metadata": _meta(ENCRYPTION_SECRET), "type": "Opaque",
            "data": {ENCRYPTION_KEY: base64.b64encode(key.encode()).decode()}}


def snapshot_volume_limit(quota_bytes: int) -> str:
    """The emptyDir holding the snapshot: it is at most the database, which etcd keeps under its quota."""
    return f"{-(-quota_bytes * 5 // 4 // 2**20)}Mi"


def script_configmap(source: str) -> dict[str, Any]:
    return agent_script.configmap(_meta(NAME), SCRIPT_KEY, source)


def uploader_args(backup: EtcdBackupConfig, stack: str, k3s: tuple[str, int] | None = None) -> list[str]:
    """`k3s`: the folder of the hub's own k3s snapshots and how many to keep there (k3s_snapshots), bounded by
    the same run whatever k3s itself applies."""
    return [
        "upload",
        f"--endpoint={backup.endpoint}", f"--region={backup.region}", f"--bucket={backup.bucket}",
        f"--prefix={backup.prefix}", f"--stack={stack}",
        *([f"--retain={backup.retain}"] if backup.retain is not None else []),
        f"--snapshot={flags.ETCD_SNAPSHOT_PATH}", f"--key-file={KEY_DIR}/{ENCRYPTION_KEY}",
        *([f"--k3s-folder={k3s[0]}", f"--k3s-retain={k3s[1]}"] if k3s else []),
    ]


def cron_job(backup: EtcdBackupConfig, stack: str, etcd_image: str, source: str, quota_bytes: int,
             k3s: tuple[str, int] | None = None) -> dict[str, Any]:
    """host: the schedule. `Forbid`: a slow upload never overlaps the next snapshot; a failed run is retried
    twice, then shows as a failed Job (the last three of each are kept for `kubectl describe`) and, with
    monitoring on, as the KarmadaHubEtcdBackupFailed alert (components/operations/alerts.py)."""
    backup_mount = {"name": "backup", "mountPath": flags.ETCD_BACKUP_DIR}
    snapshot = {
        "name": "snapshot",
        "image": etcd_image,
        "imagePullPolicy": "IfNotPresent",
        "command": [flags.ETCDCTL],
        "args": [*flags.etcdctl_flags(), *flags.ETCDCTL_SNAPSHOT_SAVE],
        "env": [{"name": "ETCDCTL_API", "value": "3"}],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
        "securityContext": container_security_context(),
        "volumeMounts": [manifests.pki_mount(), backup_mount],
    }
    upload = agent_script.container(
        "upload", SCRIPT_KEY, uploader_args(backup, stack, k3s),
        {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": UPLOAD_MEMORY_LIMIT}},
        env_from=[{"secretRef": {"name": CREDENTIALS_SECRET}}],
        mounts=[{**backup_mount, "readOnly": True}, {"name": "backup-key", "mountPath": KEY_DIR, "readOnly": True}])
    volumes = [
        manifests.pki_volume(PKI_SECRET, pki_files()),
        agent_script.volume(NAME),
        {"name": "backup", "emptyDir": {"sizeLimit": snapshot_volume_limit(quota_bytes)}},
        {"name": "backup-key", "secret": {"secretName": ENCRYPTION_SECRET, "defaultMode": 0o440,
                                          "items": [{"key": ENCRYPTION_KEY, "path": ENCRYPTION_KEY}]}},
    ]
    template = agent_script.pod_template(_LABELS, source, [upload], volumes, restart_policy="Never",
                                         service_links=False, init_containers=[snapshot])
    return agent_script.cron_job(_meta(NAME), backup.schedule, template, successful_jobs=3, backoff_limit=2,
                                 active_deadline_seconds=1800)


def flows() -> Workload:
    """host: the backup job listens on nothing and dials the etcd client port (the upload goes outside)."""
    return Workload(namespace=NAMESPACE, name=NAME, pod_labels={"app.kubernetes.io/name": NAME},
                    dials=(Dial(flags.NAMESPACE, flags.ETCD_SERVICE, "client"),))

