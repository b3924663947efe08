"""etcd and etcdctl command lines (client and peer mTLS; the backup job's etcdctl; the member's `prepare` step).

`etcd_args` is the one list of etcd's settings. etcd itself is started with `--config-file` only: the pod's
`prepare` init container (`agents/etcd_member_prepare.py`) receives `etcd_args` after `--`, decides whether
the member starts `new` or rejoins `existing`, and writes them into that file (etcd ignores every other flag
once a config file is given, etcd v3.4.23/v3.6.6 `etcdmain/config.go`)."""

from __future__ import annotations

import re
from typing import Literal

from components.karmada.flags.common import (
    CLUSTER_DOMAIN,
    ETCD_CLIENT_PORT,
    ETCD_CLIENT_SERVICE,
    ETCD_CONFIG_FILE,
    ETCD_DATA_DIR,
    ETCD_METRICS_PORT,
    ETCD_PEER_PORT,
    NAMESPACE,
    PATHS,
    _fqdn,
    etcd_member_fqdn,
    etcd_member_names,
)

ETCD_CIPHER_SUITES = (
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
)
"""TLS<=1.2 suites for etcd: the forward-secret AEAD part of Go's `tls.CipherSuites()` secure list.

The upstream chart also lists the static-RSA and CBC suites; they are in Go's list but lack forward
secrecy, so they are dropped here. etcd 3.4-3.6 resolve these names via `tls.CipherSuites()`
(`pkg/tlsutil/cipher_suites.go`). TLS 1.3 suites are not configurable in Go and always on."""


ETCDCTL = "/usr/local/bin/etcdctl"
"""In the same pinned etcd image as the members, so the snapshot tool always matches the server."""
ETCD_BACKUP_DIR = "/backup"
ETCD_SNAPSHOT_PATH = f"{ETCD_BACKUP_DIR}/snapshot.db"


ETCDCTL_SNAPSHOT_SAVE = ("snapshot", "save", ETCD_SNAPSHOT_PATH)
"""The subcommand after `etcdctl_flags()`; kept apart so the flags parse like every other component's."""


def etcdctl_flags(namespace: str = NAMESPACE, cluster_domain: str = CLUSTER_DOMAIN) -> list[str]:
    """etcdctl's global flags for the backup: the client Service with the backup client cert (etcd CA).

    One endpoint: `snapshot save` refuses several ("snapshot must be requested to one selected node"); the
    Service picks a live member. Global flags that etcdctl 3.4 and 3.6 both accept."""
    endpoint = f"https://{_fqdn(ETCD_CLIENT_SERVICE, namespace, cluster_domain)}:{ETCD_CLIENT_PORT}"
    return [
        f"--endpoints={endpoint}",
        f"--cacert={PATHS['etcd/ca.crt']}",
        f"--cert={PATHS['etcd/backup-client.crt']}",
        f"--key={PATHS['etcd/backup-client.key']}",
        "--dial-timeout=10s",
        "--command-timeout=300s",
    ]



ETCD_PREPARE_REMIND_SECONDS = 300
"""How often a `prepare` that keeps waiting (no safe decision yet) repeats why in its log. It never gives up by
exiting: a restarted init container sits in kubelet's back-off, where it cannot tell its peers it is empty."""


def etcd_prepare_args(etcd_member_args: list[str], remind_seconds: int = ETCD_PREPARE_REMIND_SECONDS) -> list[str]:
    """The `prepare` init container's args: its own flags, `--`, then exactly `etcd_args(...)`.

    Its client certificate (etcd CA, no SANs) opens etcd's member API; the peer and server CA files it
    verifies with are the ones etcd's own flags name."""
    if "--" in etcd_member_args:
        raise ValueError("etcd args must not contain a bare --")
    return [
        f"--config-file={ETCD_CONFIG_FILE}",
        f"--client-cert={PATHS['etcd/member-client.crt']}",
        f"--client-key={PATHS['etcd/member-client.key']}",
        f"--remind-seconds={remind_seconds}",
        "--",
        *etcd_member_args,
    ]


def etcd_config_file_args() -> list[str]:
    """etcd's own args: the config file `prepare` wrote from `etcd_args` (nothing else, it would be ignored)."""
    return [f"--config-file={ETCD_CONFIG_FILE}"]


def etcd_args(
    replicas: int,
    initial_cluster_token: str,
    *,
    namespace: str = NAMESPACE,
    cluster_domain: str = CLUSTER_DOMAIN,
    quota_backend_bytes: int | None = None,
    auto_compaction_mode: Literal["periodic", "revision"] | None = None,
    auto_compaction_retention: str | None = None,
    log_level: Literal["debug", "info", "warn", "error"] = "info",
) -> list[str]:
    """etcd member args with client AND peer mTLS (ref §2.2 "Recommended flags").

    Upstream runs peers over plain http; here both listeners require a cert from the etcd CA, so a
    pod on the host network cannot join or read the cluster. Advertise URLs use the per-pod FQDN via
    `$(POD_NAME)` so they match the peer/server cert SANs and survive pod IP changes. Only flags
    that etcd 3.4, 3.5 and 3.6 all accept are used (see KNOWN_FLAGS["etcd"]). No `--snapshot-count`: it is
    deprecated in 3.6 (decommissioned in 3.7) and 3.6's default (10000) is what was rendered.

    Space: `quota_backend_bytes` is the NOSPACE limit (etcd's own default is 2 GiB; "0 defaults to low space
    quota", v3.4.23 Documentation/op-guide/configuration.md). Compaction: both API servers already compact
    every 5 minutes (kube-apiserver `--etcd-compaction-interval`, default 5m); `auto_compaction_*` is etcd's own
    belt for when they are down (`periodic` + a duration keeps that much history). Defragmentation is a job,
    not a flag (components/operations/etcd_maintenance_docs.py). This list is the one source of the
    member's configuration: anything rendering etcd another way (a config file) derives it from here.
    """
    if replicas < 1:
        raise ValueError(f"etcd replicas must be >= 1 (got {replicas})")
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,128}", initial_cluster_token):
        raise ValueError("initial_cluster_token must be 1-128 chars of [A-Za-z0-9._-]")
    self_fqdn = etcd_member_fqdn("$(POD_NAME)", namespace, cluster_domain)
    initial_cluster = ",".join(
        f"{n}=https://{etcd_member_fqdn(n, namespace, cluster_domain)}:{ETCD_PEER_PORT}"
        for n in etcd_member_names(replicas)
    )
    args = [
        "--name=$(POD_NAME)",
        f"--data-dir={ETCD_DATA_DIR}",
        f"--listen-client-urls=https://0.0.0.0:{ETCD_CLIENT_PORT}",
        f"--advertise-client-urls=https://{self_fqdn}:{ETCD_CLIENT_PORT}",
        f"--listen-peer-urls=https://0.0.0.0:{ETCD_PEER_PORT}",
        f"--initial-advertise-peer-urls=https://{self_fqdn}:{ETCD_PEER_PORT}",
        f"--initial-cluster={initial_cluster}",
        "--initial-cluster-state=new",
        f"--initial-cluster-token={initial_cluster_token}",
        "--client-cert-auth=true",
        f"--trusted-ca-file={PATHS['etcd/ca.crt']}",
        f"--cert-file={PATHS['etcd/server.crt']}",
        f"--key-file={PATHS['etcd/server.key']}",
        "--peer-client-cert-auth=true",
        f"--peer-trusted-ca-file={PATHS['etcd/ca.crt']}",
        f"--peer-cert-file={PATHS['etcd/peer.crt']}",
        f"--peer-key-file={PATHS['etcd/peer.key']}",
        # Plain HTTP (kubelet probes send no client cert), but on the pod address only, not every interface;
        # the NetworkPolicy admits only the local node (etcd v3.6.6 server/embed/etcd.go serves /metrics,
        # /livez and /readyz on this listener).
        f"--listen-metrics-urls=http://$(POD_IP):{ETCD_METRICS_PORT}",
        f"--cipher-suites={','.join(ETCD_CIPHER_SUITES)}",
        "--logger=zap",
        f"--log-level={log_level}",
    ]
    if quota_backend_bytes is not None:
        if not 0 < quota_backend_bytes <= 8 * 2**30:
            raise ValueError(f"quota_backend_bytes must be in (0, 8 GiB] (got {quota_backend_bytes})")
        args.append(f"--quota-backend-bytes={quota_backend_bytes}")
    if (auto_compaction_mode is None) != (auto_compaction_retention is None):
        raise ValueError("auto_compaction_mode and auto_compaction_retention go together")
    if auto_compaction_mode is not None:
        pattern = r"[1-9][0-9]*(m|h)" if auto_compaction_mode == "periodic" else r"[1-9][0-9]*"
        if not re.fullmatch(pattern, auto_compaction_retention or ""):
            raise ValueError(f"auto_compaction_retention {auto_compaction_retention!r} does not fit mode "
                             f"{auto_compaction_mode} (periodic: a duration like 1h; revision: a count)")
        args += [f"--auto-compaction-mode={auto_compaction_mode}",
                 f"--auto-compaction-retention={auto_compaction_retention}"]
    return args
