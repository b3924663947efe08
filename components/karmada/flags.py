"""Command lines of the Karmada control plane: pure builders for every container's args.

This is the room where flags are decided. The Pulumi components only wrap these lists in
containers (`command` = `COMMANDS[component]`, `args` = the builder's result), mount files at the
paths in `PATHS`, and set the `$(POD_NAME)` / `$(POD_IP)` env vars the args reference. Keeping the
flags here, free of Pulumi, is what lets tests start a real etcd with exactly what the program
renders and check every flag name against what the pinned binaries accept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, Protocol

NAMESPACE = "karmada-system"
CLUSTER_DOMAIN = "cluster.local"
ETCD_SERVICE = "etcd"
"""Headless Service (and StatefulSet) name: gives every member a stable DNS name for peering."""
ETCD_CLIENT_SERVICE = "etcd-client"
ETCD_CLIENT_PORT = 2379
ETCD_PEER_PORT = 2380
ETCD_METRICS_PORT = 2381
APISERVER_SERVICE = "karmada-apiserver"
APISERVER_PORT = 5443
AGGREGATED_APISERVER_PORT = 443
WEBHOOK_PORT = 8443
ESTIMATOR_PORT = 10352
KCM_PORT = 10257
CLUSTER_NAMESPACE = "karmada-cluster"
"""Namespace inside karmada-apiserver holding member credentials and cluster leases."""
SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/12"
"""Virtual Service range of karmada-apiserver; nothing routes it, it only has to be a valid CIDR."""

PKI_DIR = "/etc/karmada/pki"
KUBECONFIG_PATH = "/etc/karmada/config/karmada.config"
MEMBER_KUBECONFIG_PATH = "/etc/karmada/member/kubeconfig"
"""Scheduler-estimator: kubeconfig of the one member cluster this estimator serves."""
AGENT_KUBECONFIG_PATH = "/etc/kubeconfig/karmada-kubeconfig"
"""karmada-agent (in a member): its kubeconfig for the karmada-apiserver, as `karmadactl register` mounts it."""
AUDIT_POLICY_PATH = "/etc/karmada/audit/policy.yaml"
AUDIT_LOG_PATH = "/var/log/karmada/audit.log"
ENCRYPTION_CONFIG_PATH = "/etc/karmada/encryption/encryption-config.yaml"
ETCD_DATA_DIR = "/var/lib/etcd"
CAPI_KUBECONFIG_PATH = "/etc/karmada/capi/kubeconfig"
"""controller-manager `--cluster-api-kubeconfig`: the CAPI management cluster, for built-in auto-join."""

_PKI_FILES = (
    "ca.crt", "ca.key",
    "etcd/ca.crt", "etcd/server.crt", "etcd/server.key", "etcd/peer.crt", "etcd/peer.key",
    "etcd/backup-client.crt", "etcd/backup-client.key",
    "front-proxy-ca.crt", "front-proxy-client.crt", "front-proxy-client.key",
    "apiserver.crt", "apiserver.key",
    "apiserver-etcd-client.crt", "apiserver-etcd-client.key",
    "aggregated-apiserver.crt", "aggregated-apiserver.key",
    "aggregated-apiserver-etcd-client.crt", "aggregated-apiserver-etcd-client.key",
    "webhook.crt", "webhook.key",
    "scheduler-estimator.crt", "scheduler-estimator.key",
    "scheduler-estimator-client.crt", "scheduler-estimator-client.key",
    "sa.pub", "sa.key",
)

PATHS: Mapping[str, str] = MappingProxyType(
    {
        **{name: f"{PKI_DIR}/{name}" for name in _PKI_FILES},
        "kubeconfig": KUBECONFIG_PATH,
        "member-kubeconfig": MEMBER_KUBECONFIG_PATH,
        "agent-kubeconfig": AGENT_KUBECONFIG_PATH,
        "audit-policy": AUDIT_POLICY_PATH,
        "audit-log": AUDIT_LOG_PATH,
        "encryption-config": ENCRYPTION_CONFIG_PATH,
        "etcd-data": ETCD_DATA_DIR,
        "capi-kubeconfig": CAPI_KUBECONFIG_PATH,
    }
)
"""Every file path a flag names. Keys ending in .crt/.key/.pub are relative to PKI_DIR and equal
`pki_spec` file stems + suffix, so the component mounting Secrets can derive subPaths from the key."""

COMMANDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "etcd": ("/usr/local/bin/etcd",),
        "karmada-apiserver": ("kube-apiserver",),
        "karmada-aggregated-apiserver": ("/bin/karmada-aggregated-apiserver",),
        "kube-controller-manager": ("kube-controller-manager",),
        "karmada-scheduler": ("/bin/karmada-scheduler",),
        "karmada-controller-manager": ("/bin/karmada-controller-manager",),
        "karmada-webhook": ("/bin/karmada-webhook",),
        "karmada-agent": ("/bin/karmada-agent",),
        "karmada-scheduler-estimator": ("/bin/karmada-scheduler-estimator",),
    }
)
"""Container `command` per component (the binary; args never repeat it)."""

BINARY: Mapping[str, str] = MappingProxyType(
    {
        "etcd": "etcd",
        "karmada-apiserver": "kube-apiserver",
        "karmada-aggregated-apiserver": "karmada-aggregated-apiserver",
        "kube-controller-manager": "kube-controller-manager",
        "karmada-scheduler": "karmada-scheduler",
        "karmada-controller-manager": "karmada-controller-manager",
        "karmada-webhook": "karmada-webhook",
        "karmada-agent": "karmada-agent",
        "karmada-scheduler-estimator": "karmada-scheduler-estimator",
    }
)
"""Component -> the binary whose flag set (KNOWN_FLAGS) applies; karmada-apiserver is a kube-apiserver."""

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

KCM_CONTROLLERS = (
    "namespace", "garbagecollector", "serviceaccount-token", "ttl-after-finished", "bootstrapsigner",
    "tokencleaner", "csrcleaner", "csrsigning", "clusterrole-aggregation",
)
"""Ref §2.5 (chart, artifacts and init agree): only what a control plane without nodes needs —
namespace deletion, owner-reference GC, SA tokens, bootstrap tokens for `karmadactl register`, and
csrsigning so pull-mode agents get client certs signed by the Karmada CA."""

PurgeMode = Literal["Gracefully", "Directly"]


# ------------------------------------------------------------------------------------------ helpers


@dataclass(frozen=True)
class LeaderElection:
    """Lease timing shared by every leader-electing component; upstream defaults (15s/10s/2s)."""

    lease_duration_s: int = 15
    renew_deadline_s: int = 10
    retry_period_s: int = 2
    namespace: str = NAMESPACE

    def __post_init__(self) -> None:
        if not self.lease_duration_s > self.renew_deadline_s > self.retry_period_s > 0:
            raise ValueError("leader election needs lease_duration > renew_deadline > retry_period > 0 "
                             f"(got {self.lease_duration_s}/{self.renew_deadline_s}/{self.retry_period_s})")

    def args(self) -> list[str]:
        return [
            "--leader-elect=true",
            f"--leader-elect-lease-duration={self.lease_duration_s}s",
            f"--leader-elect-renew-deadline={self.renew_deadline_s}s",
            f"--leader-elect-retry-period={self.retry_period_s}s",
            f"--leader-elect-resource-namespace={self.namespace}",
        ]


@dataclass(frozen=True)
class Lease:
    """Where a component's leader-election lease lives (always inside karmada-apiserver)."""

    name: str
    namespace: str = NAMESPACE


LEADER_ELECTION: Mapping[str, Lease | None] = MappingProxyType(
    {
        "etcd": None,  # raft elects its own leader
        "karmada-apiserver": None,  # active-active
        "karmada-aggregated-apiserver": None,
        "kube-controller-manager": Lease("kube-controller-manager"),
        "karmada-scheduler": Lease("karmada-scheduler"),
        "karmada-controller-manager": Lease("karmada-controller-manager"),
        "karmada-webhook": None,  # stateless; every replica serves
        "karmada-scheduler-estimator": None,
        "karmada-agent": Lease("karmada-agent-<cluster>"),
    }
)
"""For the plan table: which components leader-elect and on which lease (ref §2.1). kube-controller-
manager's lease is moved to karmada-system by `--leader-elect-resource-namespace`; its user then needs
lease RBAC there (the built-in role only covers kube-system)."""


class FailoverLike(Protocol):
    """The FailoverConfig fields this module reads (duck-typed so no config import is needed)."""

    cluster_status_update_frequency: int
    cluster_failure_threshold: int
    cluster_success_threshold: int
    cluster_monitor_period: int
    cluster_monitor_grace_period: int
    cluster_lease_duration: int
    resource_eviction_rate: float
    graceful_eviction_timeout: int
    purge_mode: str


@dataclass(frozen=True)
class FailoverSettings:
    """Cluster-health and failover timing in seconds (defaults = Karmada's own defaults)."""

    status_update_frequency_s: int = 10
    failure_threshold_s: int = 30
    success_threshold_s: int = 30
    monitor_period_s: int = 5
    monitor_grace_period_s: int = 40
    startup_grace_period_s: int = 60
    lease_duration_s: int = 40
    resource_eviction_rate: float = 0.5
    graceful_eviction_timeout_s: int = 600
    purge_mode: PurgeMode = "Gracefully"

    def __post_init__(self) -> None:
        if self.purge_mode not in ("Gracefully", "Directly"):
            raise ValueError(f"purge_mode must be Gracefully or Directly (got {self.purge_mode!r})")
        if self.resource_eviction_rate <= 0:
            raise ValueError("resource_eviction_rate must be > 0")

    @classmethod
    def from_config(cls, cfg: FailoverLike) -> FailoverSettings:
        """Map `components.config.FailoverConfig` (or anything shaped like it) onto flag values."""
        return cls(
            status_update_frequency_s=cfg.cluster_status_update_frequency,
            failure_threshold_s=cfg.cluster_failure_threshold,
            success_threshold_s=cfg.cluster_success_threshold,
            monitor_period_s=cfg.cluster_monitor_period,
            monitor_grace_period_s=cfg.cluster_monitor_grace_period,
            lease_duration_s=cfg.cluster_lease_duration,
            resource_eviction_rate=cfg.resource_eviction_rate,
            graceful_eviction_timeout_s=cfg.graceful_eviction_timeout,
            purge_mode=cfg.purge_mode,  # type: ignore[arg-type]
        )


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def merge_gates(*gate_sets: Mapping[str, bool]) -> dict[str, bool]:
    """Union of gate maps; a gate set both true and false is a contradiction we refuse to render."""
    merged: dict[str, bool] = {}
    for gates in gate_sets:
        for name, value in gates.items():
            if name in merged and merged[name] != bool(value):
                raise ValueError(f"feature gate {name} is required to be {merged[name]} but was set to {value}")
            merged[name] = bool(value)
    return merged


def feature_gates_flag(gates: Mapping[str, bool]) -> list[str]:
    """One sorted `--feature-gates=A=true,B=false` flag (none when empty) so diffs stay stable."""
    if not gates:
        return []
    for name in gates:
        if not re.fullmatch(r"[A-Z][A-Za-z0-9]*", name):
            raise ValueError(f"'{name}' is not a feature gate name")
    body = ",".join(f"{k}={'true' if v else 'false'}" for k, v in sorted(gates.items()))
    return [f"--feature-gates={body}"]


_FLAG = re.compile(r"^--([a-z0-9][a-z0-9_-]*)(=.*)?$", re.DOTALL)


def flag_name(arg: str) -> str:
    """`--etcd-servers=https://…` -> `etcd-servers`; ValueError for anything not `--name[=value]`."""
    m = _FLAG.match(arg)
    if not m:
        raise ValueError(f"'{arg}' is not a --flag[=value] argument")
    return m.group(1)


def flag_names(args: Iterable[str]) -> list[str]:
    return [flag_name(a) for a in args]


def flag_values(args: Iterable[str]) -> dict[str, str]:
    """Flag -> value (last wins, as pflag does); bare `--x` maps to "true"."""
    out: dict[str, str] = {}
    for arg in args:
        name = flag_name(arg)
        out[name] = arg.split("=", 1)[1] if "=" in arg else "true"
    return out


def env_refs(args: Iterable[str]) -> set[str]:
    """The `$(VAR)` env references kubelet must expand in these args (the pod must define them)."""
    return {m for a in args for m in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", a)}


def file_paths(args: Iterable[str]) -> set[str]:
    """Every value in `args` that is one of PATHS' paths (what the pod has to mount)."""
    known = set(PATHS.values())
    return {v for v in flag_values(args).values() if v in known}


def _fqdn(host: str, namespace: str, cluster_domain: str) -> str:
    return f"{host}.{namespace}.svc.{cluster_domain}"


def etcd_member_names(replicas: int) -> list[str]:
    """StatefulSet pod names, which are also the etcd member names (`--name=$(POD_NAME)`)."""
    return [f"{ETCD_SERVICE}-{i}" for i in range(replicas)]


def etcd_member_fqdn(pod_name: str, namespace: str = NAMESPACE, cluster_domain: str = CLUSTER_DOMAIN) -> str:
    """Per-pod DNS name the headless Service gives a StatefulSet member."""
    return f"{pod_name}.{_fqdn(ETCD_SERVICE, namespace, cluster_domain)}"


def etcd_client_url(namespace: str = NAMESPACE, cluster_domain: str = CLUSTER_DOMAIN) -> str:
    return f"https://{_fqdn(ETCD_CLIENT_SERVICE, namespace, cluster_domain)}:{ETCD_CLIENT_PORT}"


def apiserver_url(namespace: str = NAMESPACE, cluster_domain: str = CLUSTER_DOMAIN) -> str:
    """In-cluster URL every component's kubeconfig points at."""
    return f"https://{_fqdn(APISERVER_SERVICE, namespace, cluster_domain)}:{APISERVER_PORT}"


# --------------------------------------------------------------------------------------------- etcd

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



def etcd_args(
    replicas: int,
    initial_cluster_token: str,
    *,
    namespace: str = NAMESPACE,
    cluster_domain: str = CLUSTER_DOMAIN,
    snapshot_count: int = 10000,
    quota_backend_bytes: int | None = None,
    log_level: Literal["debug", "info", "warn", "error"] = "info",
) -> list[str]:
    """etcd member args with client AND peer mTLS (ref §2.2 "Recommended flags").

    Upstream runs peers over plain http; here both listeners require a cert from the etcd CA, so a
    pod on the host network cannot join or read the cluster. Advertise URLs use the per-pod FQDN via
    `$(POD_NAME)` so they match the peer/server cert SANs and survive pod IP changes. Only flags
    that etcd 3.4, 3.5 and 3.6 all accept are used (see KNOWN_FLAGS["etcd"]).
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
        f"--listen-metrics-urls=http://0.0.0.0:{ETCD_METRICS_PORT}",
        f"--snapshot-count={snapshot_count}",
        f"--cipher-suites={','.join(ETCD_CIPHER_SUITES)}",
        "--logger=zap",
        f"--log-level={log_level}",
    ]
    if quota_backend_bytes is not None:
        args.append(f"--quota-backend-bytes={quota_backend_bytes}")
    return args


# --------------------------------------------------------------------------------- API servers


@dataclass(frozen=True)
class AuditLog:
    """File audit log with rotation; sizes keep a chatty control plane from filling the pod's disk."""

    max_age_days: int = 7
    max_backups: int = 5
    max_size_mb: int = 100


def karmada_apiserver_args(
    *,
    etcd_servers: Sequence[str] | None = None,
    service_cluster_ip_range: str = SERVICE_CLUSTER_IP_RANGE,
    audit: AuditLog = AuditLog(),
    encryption_at_rest: bool = True,
    max_requests_inflight: int = 1500,
    max_mutating_requests_inflight: int = 500,
    namespace: str = NAMESPACE,
    cluster_domain: str = CLUSTER_DOMAIN,
    feature_gates: Mapping[str, bool] | None = None,
    verbosity: int = 2,
) -> list[str]:
    """kube-apiserver v1.35 acting as karmada-apiserver (ref §2.3, hardened).

    Differences from upstream and why: anonymous auth and profiling off (nothing unauthenticated
    reaches the hub; probes must therefore be tcpSocket or authenticated), a rotated file audit log,
    secrets encrypted at rest, a separate SA key pair instead of reusing the TLS key, and NodeRestriction
    like the operator. `--etcd-servers` defaults to the `etcd-client` Service, as upstream.
    """
    servers = list(etcd_servers) if etcd_servers else [etcd_client_url(namespace, cluster_domain)]
    args = [
        "--bind-address=0.0.0.0",
        f"--secure-port={APISERVER_PORT}",
        f"--tls-cert-file={PATHS['apiserver.crt']}",
        f"--tls-private-key-file={PATHS['apiserver.key']}",
        "--tls-min-version=VersionTLS13",
        f"--client-ca-file={PATHS['ca.crt']}",
        "--anonymous-auth=false",
        "--profiling=false",
        "--authorization-mode=Node,RBAC",
        "--enable-admission-plugins=NodeRestriction",
        "--disable-admission-plugins=StorageObjectInUseProtection,ServiceAccount",
        "--enable-bootstrap-token-auth=true",
        "--allow-privileged=true",
        f"--etcd-servers={','.join(servers)}",
        f"--etcd-cafile={PATHS['etcd/ca.crt']}",
        f"--etcd-certfile={PATHS['apiserver-etcd-client.crt']}",
        f"--etcd-keyfile={PATHS['apiserver-etcd-client.key']}",
        f"--service-account-issuer=https://kubernetes.default.svc.{cluster_domain}",
        f"--service-account-key-file={PATHS['sa.pub']}",
        f"--service-account-signing-key-file={PATHS['sa.key']}",
        f"--service-cluster-ip-range={service_cluster_ip_range}",
        f"--proxy-client-cert-file={PATHS['front-proxy-client.crt']}",
        f"--proxy-client-key-file={PATHS['front-proxy-client.key']}",
        f"--requestheader-client-ca-file={PATHS['front-proxy-ca.crt']}",
        "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-username-headers=X-Remote-User",
        f"--audit-policy-file={AUDIT_POLICY_PATH}",
        f"--audit-log-path={AUDIT_LOG_PATH}",
        f"--audit-log-maxage={audit.max_age_days}",
        f"--audit-log-maxbackup={audit.max_backups}",
        f"--audit-log-maxsize={audit.max_size_mb}",
        f"--max-requests-inflight={max_requests_inflight}",
        f"--max-mutating-requests-inflight={max_mutating_requests_inflight}",
    ]
    if encryption_at_rest:
        args += [f"--encryption-provider-config={ENCRYPTION_CONFIG_PATH}",
                 "--encryption-provider-config-automatic-reload=true"]
    args += feature_gates_flag(feature_gates or {})
    args.append(f"--v={verbosity}")
    return args


def aggregated_apiserver_args(
    *,
    etcd_servers: Sequence[str] | None = None,
    namespace: str = NAMESPACE,
    cluster_domain: str = CLUSTER_DOMAIN,
    feature_gates: Mapping[str, bool] | None = None,
    verbosity: int = 2,
) -> list[str]:
    """karmada-aggregated-apiserver (serves cluster.karmada.io; ref §2.4).

    It stores Cluster objects in the same etcd under the default `/registry` prefix, with its own
    etcd client cert. Audit goes to stdout (`-`) like upstream: the karmada-apiserver audit log
    already records every request the aggregator proxies here.
    """
    servers = list(etcd_servers) if etcd_servers else [etcd_client_url(namespace, cluster_domain)]
    return [
        f"--kubeconfig={KUBECONFIG_PATH}",
        f"--authentication-kubeconfig={KUBECONFIG_PATH}",
        f"--authorization-kubeconfig={KUBECONFIG_PATH}",
        f"--etcd-servers={','.join(servers)}",
        f"--etcd-cafile={PATHS['etcd/ca.crt']}",
        f"--etcd-certfile={PATHS['aggregated-apiserver-etcd-client.crt']}",
        f"--etcd-keyfile={PATHS['aggregated-apiserver-etcd-client.key']}",
        "--bind-address=0.0.0.0",
        f"--secure-port={AGGREGATED_APISERVER_PORT}",
        f"--tls-cert-file={PATHS['aggregated-apiserver.crt']}",
        f"--tls-private-key-file={PATHS['aggregated-apiserver.key']}",
        "--tls-min-version=VersionTLS13",
        "--audit-log-path=-",
        "--audit-log-maxage=0",
        "--audit-log-maxbackup=0",
        "--profiling=false",
        *feature_gates_flag(feature_gates or {}),
        f"--v={verbosity}",
    ]


# --------------------------------------------------------------------------------- controllers


def kube_controller_manager_args(
    *,
    controllers: Sequence[str] = KCM_CONTROLLERS,
    service_cluster_ip_range: str = SERVICE_CLUSTER_IP_RANGE,
    leader_election: LeaderElection = LeaderElection(),
    cluster_signing_duration_h: int = 8760,
    verbosity: int = 2,
) -> list[str]:
    """kube-controller-manager v1.35 against karmada-apiserver (ref §2.5).

    It is the only component holding the Karmada CA key (csrsigning for pull-mode agents). The
    node-IPAM flags upstream passes are dropped: no nodeipam controller runs, so they do nothing.
    """
    if not controllers:
        raise ValueError("kube-controller-manager needs at least one controller")
    if "csrsigning" not in controllers and "*" not in controllers:
        signing: list[str] = []
    else:
        signing = [
            f"--cluster-signing-cert-file={PATHS['ca.crt']}",
            f"--cluster-signing-key-file={PATHS['ca.key']}",
            f"--cluster-signing-duration={cluster_signing_duration_h}h",
        ]
    return [
        f"--kubeconfig={KUBECONFIG_PATH}",
        f"--authentication-kubeconfig={KUBECONFIG_PATH}",
        f"--authorization-kubeconfig={KUBECONFIG_PATH}",
        "--bind-address=0.0.0.0",
        f"--client-ca-file={PATHS['ca.crt']}",
        f"--requestheader-client-ca-file={PATHS['front-proxy-ca.crt']}",
        "--cluster-name=karmada",
        *signing,
        f"--controllers={','.join(controllers)}",
        f"--root-ca-file={PATHS['ca.crt']}",
        f"--service-account-private-key-file={PATHS['sa.key']}",
        f"--service-cluster-ip-range={service_cluster_ip_range}",
        "--use-service-account-credentials=true",
        "--profiling=false",
        "--tls-min-version=VersionTLS13",
        *leader_election.args(),
        f"--v={verbosity}",
    ]


def scheduler_args(
    *,
    enable_estimator: bool,
    feature_gates: Mapping[str, bool] | None = None,
    leader_election: LeaderElection = LeaderElection(),
    estimator_timeout_s: int = 3,
    verbosity: int = 2,
) -> list[str]:
    """karmada-scheduler (ref §2.6). With estimators it dials them over mTLS with its own gRPC
    client cert; without, the estimator flags are left out entirely rather than half-set."""
    args = [
        f"--kubeconfig={KUBECONFIG_PATH}",
        "--metrics-bind-address=$(POD_IP):8080",
        "--health-probe-bind-address=$(POD_IP):10351",
        *leader_election.args(),
        "--leader-elect-resource-name=karmada-scheduler",
    ]
    if enable_estimator:
        args += [
            "--enable-scheduler-estimator=true",
            f"--scheduler-estimator-ca-file={PATHS['ca.crt']}",
            f"--scheduler-estimator-cert-file={PATHS['scheduler-estimator-client.crt']}",
            f"--scheduler-estimator-key-file={PATHS['scheduler-estimator-client.key']}",
            f"--scheduler-estimator-port={ESTIMATOR_PORT}",
            f"--scheduler-estimator-timeout={estimator_timeout_s}s",
            f"--scheduler-estimator-service-namespace={leader_election.namespace}",
        ]
    elif (feature_gates or {}).get("SchedulingOvercommitProtection"):
        raise ValueError("SchedulingOvercommitProtection needs the scheduler estimator (enable_estimator=True)")
    args += feature_gates_flag(feature_gates or {})
    args.append(f"--v={verbosity}")
    return args


FAILOVER_GATES: Mapping[str, bool] = MappingProxyType({"Failover": True, "GracefulEviction": True})
QUOTA_GATES: Mapping[str, bool] = MappingProxyType({"FederatedQuotaEnforcement": True})
FAILOVER_FLAGS = frozenset(
    {"enable-no-execute-taint-eviction", "no-execute-taint-eviction-purge-mode", "resource-eviction-rate",
     "graceful-eviction-timeout"}
)
"""controller-manager flags that only mean something with `Failover=true`; rendered only then."""


def controller_manager_args(
    *,
    enable_failover: bool,
    quota_enforcement: bool,
    failover: FailoverSettings = FailoverSettings(),
    feature_gates: Mapping[str, bool] | None = None,
    leader_election: LeaderElection = LeaderElection(),
    controllers: Sequence[str] = ("*",),
    cluster_api_kubeconfig: str | None = None,
    verbosity: int = 2,
) -> list[str]:
    """karmada-controller-manager (ref §2.7) with the failover and quota switches.

    Failover = gate `Failover` + `--enable-no-execute-taint-eviction` (the cluster controller only adds
    NoSchedule taints; NoExecute comes from a ClusterTaintPolicy, which also needs the webhook's
    `--allow-no-execute-taint-policy`). `--failover-eviction-timeout` is gone since v1.15 and
    `--cluster-lease-duration` since v1.18: passing either would crash the binary.
    """
    gates = merge_gates(
        FAILOVER_GATES if enable_failover else {},
        QUOTA_GATES if quota_enforcement else {},
        feature_gates or {},
    )
    if not enable_failover and gates.get("Failover"):
        raise ValueError("feature gate Failover=true needs enable_failover=True (it also sets the eviction flags)")
    if not quota_enforcement and gates.get("FederatedQuotaEnforcement"):
        raise ValueError("FederatedQuotaEnforcement=true needs quota_enforcement=True (webhook must get it too)")
    f = failover
    args = [
        f"--kubeconfig={KUBECONFIG_PATH}",
        "--metrics-bind-address=$(POD_IP):8080",
        "--health-probe-bind-address=$(POD_IP):10357",
        f"--controllers={','.join(controllers)}",
        *leader_election.args(),
        f"--cluster-status-update-frequency={f.status_update_frequency_s}s",
        f"--cluster-monitor-period={f.monitor_period_s}s",
        f"--cluster-monitor-grace-period={f.monitor_grace_period_s}s",
        f"--cluster-startup-grace-period={f.startup_grace_period_s}s",
        f"--cluster-failure-threshold={f.failure_threshold_s}s",
        f"--cluster-success-threshold={f.success_threshold_s}s",
    ]
    if enable_failover:
        args += [
            "--enable-no-execute-taint-eviction=true",
            f"--no-execute-taint-eviction-purge-mode={f.purge_mode}",
            f"--resource-eviction-rate={_num(f.resource_eviction_rate)}",
            f"--graceful-eviction-timeout={f.graceful_eviction_timeout_s}s",
        ]
    if cluster_api_kubeconfig:
        args.append(f"--cluster-api-kubeconfig={cluster_api_kubeconfig}")
    args += feature_gates_flag(gates)
    args.append(f"--v={verbosity}")
    return args


def webhook_args(
    *,
    allow_no_execute_taint_policy: bool,
    quota_enforcement: bool,
    feature_gates: Mapping[str, bool] | None = None,
    verbosity: int = 2,
) -> list[str]:
    """karmada-webhook (ref §2.8). It enforces FederatedResourceQuota in the ResourceBinding
    validator, so the quota gate must match the controller-manager's or quota is half-enforced."""
    gates = merge_gates(QUOTA_GATES if quota_enforcement else {}, feature_gates or {})
    if not quota_enforcement and gates.get("FederatedQuotaEnforcement"):
        raise ValueError("FederatedQuotaEnforcement=true needs quota_enforcement=True")
    args = [
        f"--kubeconfig={KUBECONFIG_PATH}",
        "--bind-address=0.0.0.0",
        f"--secure-port={WEBHOOK_PORT}",
        f"--cert-dir={PKI_DIR}",
        "--tls-cert-file-name=webhook.crt",
        "--tls-private-key-file-name=webhook.key",
        "--tls-min-version=1.3",
        "--metrics-bind-address=$(POD_IP):8080",
        "--health-probe-bind-address=$(POD_IP):8000",
    ]
    if allow_no_execute_taint_policy:
        args.append("--allow-no-execute-taint-policy=true")
    args += feature_gates_flag(gates)
    args.append(f"--v={verbosity}")
    return args


# ------------------------------------------------------------------------------------ member side


def agent_args(
    cluster_name: str,
    api_endpoint: str,
    *,
    region: str,
    zones: Sequence[str] = (),
    provider: str = "hetzner",
    failover: FailoverSettings = FailoverSettings(),
    feature_gates: Mapping[str, bool] | None = None,
    leader_election: LeaderElection = LeaderElection(),
    verbosity: int = 2,
) -> list[str]:
    """karmada-agent for a pull-mode member (ref §5.4). The agent's status and lease timing must
    fit the controller-manager's grace period, so both come from the same FailoverSettings."""
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,46}[a-z0-9])?", cluster_name):
        raise ValueError(f"cluster name '{cluster_name}' must be a DNS label of at most 48 chars")
    if not api_endpoint.startswith("https://"):
        raise ValueError(f"api_endpoint must be an https:// URL (got {api_endpoint!r})")
    args = [
        f"--karmada-kubeconfig={AGENT_KUBECONFIG_PATH}",
        f"--cluster-name={cluster_name}",
        f"--cluster-api-endpoint={api_endpoint}",
        f"--cluster-provider={provider}",
        f"--cluster-region={region}",
    ]
    if zones:
        args.append(f"--cluster-zones={','.join(zones)}")
    args += [
        f"--cluster-namespace={CLUSTER_NAMESPACE}",
        "--controllers=*",
        f"--cluster-status-update-frequency={failover.status_update_frequency_s}s",
        f"--cluster-lease-duration={failover.lease_duration_s}s",
        f"--cluster-failure-threshold={failover.failure_threshold_s}s",
        f"--cluster-success-threshold={failover.success_threshold_s}s",
        *leader_election.args(),
        "--metrics-bind-address=$(POD_IP):8080",
        "--health-probe-bind-address=$(POD_IP):10357",
        *feature_gates_flag(feature_gates or {}),
        f"--v={verbosity}",
    ]
    return args


def scheduler_estimator_args(
    cluster_name: str,
    *,
    feature_gates: Mapping[str, bool] | None = None,
    verbosity: int = 2,
) -> list[str]:
    """karmada-scheduler-estimator for one member (runs on the hub, reads the member's API).

    The gRPC port requires client certs from the Karmada CA, so only the scheduler can ask it."""
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,46}[a-z0-9])?", cluster_name):
        raise ValueError(f"cluster name '{cluster_name}' must be a DNS label of at most 48 chars")
    return [
        f"--kubeconfig={MEMBER_KUBECONFIG_PATH}",
        f"--cluster-name={cluster_name}",
        f"--server-port={ESTIMATOR_PORT}",
        f"--grpc-auth-cert-file={PATHS['scheduler-estimator.crt']}",
        f"--grpc-auth-key-file={PATHS['scheduler-estimator.key']}",
        f"--grpc-client-ca-file={PATHS['ca.crt']}",
        "--metrics-bind-address=$(POD_IP):8080",
        "--health-probe-bind-address=$(POD_IP):10351",
        *feature_gates_flag(feature_gates or {}),
        f"--v={verbosity}",
    ]


# ------------------------------------------------------------------------------ known/removed flags
#
# Flag names each binary accepts at the pinned versions. Sources (read with `git show <tag>:<path>`):
#   etcd: intersection of etcd-io/etcd v3.4.23 etcdmain/config.go, v3.5.0 and v3.6.6
#     server/etcdmain/config.go + server/embed/config.go — etcd 3.4 runs the tests, 3.6.6 the image.
#   karmada-*: karmada-io/karmada v1.18.2 cmd/<binary>/app/options/*.go (+ cmd/<binary>/app/<binary>.go
#     for --kubeconfig from controller-runtime and klog's --v), pkg/sharedcli/{profileflag,ratelimiterflag},
#     features.FeatureGate.AddFlag (--feature-gates).
#   karmada-aggregated-apiserver additionally: vendor/k8s.io/apiserver@v0.35.3 pkg/server/options/
#     {etcd,serving,authentication,authorization,audit,feature,coreapi}.go (vendored at karmada v1.18.2).
#   kube-apiserver / kube-controller-manager v1.35: the same vendored k8s.io/apiserver v0.35.3 and
#     k8s.io/component-base v0.35.3 (config/options/leaderelectionconfig.go) for the generic flags; the
#     kube-specific ones (anonymous-auth, enable-bootstrap-token-auth, service-account-*, authorization-mode,
#     allow-privileged, service-cluster-ip-range, proxy-client-*, KCM controller flags) from
#     kubernetes/kubernetes pkg/controlplane/apiserver/options/options.go, pkg/kubeapiserver/options/
#     authentication.go, cmd/kube-apiserver/app/options/options.go — listed only as far as this module
#     uses or a reviewer would reasonably reach for them, not the full 1.35 flag set.

_KLOG = {"v", "vmodule", "logtostderr", "alsologtostderr", "log_dir", "log_file", "log_file_max_size",
         "skip_headers", "skip_log_headers", "add_dir_header", "stderrthreshold", "one_output",
         "log_backtrace_at", "logging-format", "log-flush-frequency"}
_LEADER = {"leader-elect", "leader-elect-lease-duration", "leader-elect-renew-deadline",
           "leader-elect-retry-period", "leader-elect-resource-namespace"}
_PROFILE = {"enable-pprof", "profiling-bind-address"}
_RATE = {"rate-limiter-base-delay", "rate-limiter-max-delay", "rate-limiter-qps", "rate-limiter-bucket-size"}
_GENERIC_ETCD = {"etcd-servers", "etcd-servers-overrides", "etcd-cafile", "etcd-certfile", "etcd-keyfile",
                 "etcd-prefix", "etcd-compaction-interval", "etcd-count-metric-poll-period",
                 "etcd-db-metric-poll-interval", "etcd-healthcheck-timeout", "etcd-readycheck-timeout",
                 "encryption-provider-config", "encryption-provider-config-automatic-reload",
                 "storage-backend", "storage-media-type", "watch-cache", "watch-cache-sizes",
                 "default-watch-cache-size", "delete-collection-workers", "enable-garbage-collector",
                 "lease-reuse-duration-seconds"}
_GENERIC_SERVING = {"bind-address", "secure-port", "cert-dir", "tls-cert-file", "tls-private-key-file",
                    "tls-cipher-suites", "tls-min-version", "tls-sni-cert-key", "http2-max-streams-per-connection",
                    "permit-port-sharing", "permit-address-sharing", "disable-http2-serving"}
_GENERIC_AUTHN = {"client-ca-file", "requestheader-client-ca-file", "requestheader-allowed-names",
                  "requestheader-username-headers", "requestheader-group-headers", "requestheader-uid-headers",
                  "requestheader-extra-headers-prefix"}
_DELEGATED = {"authentication-kubeconfig", "authentication-skip-lookup", "authentication-token-webhook-cache-ttl",
              "authentication-tolerate-lookup-failure", "authorization-kubeconfig",
              "authorization-always-allow-paths", "authorization-webhook-cache-authorized-ttl",
              "authorization-webhook-cache-unauthorized-ttl"}
_AUDIT = {"audit-policy-file", "audit-log-path", "audit-log-maxage", "audit-log-maxbackup", "audit-log-maxsize",
          "audit-log-format", "audit-log-compress", "audit-log-version", "audit-webhook-config-file",
          "audit-webhook-version", "audit-webhook-initial-backoff"}
_FEATURE = {"profiling", "contention-profiling", "debug-socket-path", "enable-priority-and-fairness"}
_SERVER_RUN = {"advertise-address", "cors-allowed-origins", "external-hostname", "goaway-chance",
               "livez-grace-period", "max-mutating-requests-inflight", "max-requests-inflight",
               "min-request-timeout", "request-timeout", "shutdown-delay-duration", "shutdown-send-retry-after",
               "shutdown-watch-termination-grace-period", "storage-initialization-timeout",
               "strict-transport-security-directives"}

KNOWN_FLAGS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "etcd": frozenset({
            "advertise-client-urls", "auth-token", "auth-token-ttl", "auto-compaction-mode",
            "auto-compaction-retention", "auto-tls", "backend-batch-interval", "backend-batch-limit", "bcrypt-cost",
            "cert-file", "cipher-suites", "client-cert-allowed-hostname", "client-cert-auth", "client-crl-file",
            "config-file", "cors", "data-dir", "discovery", "discovery-fallback", "discovery-proxy",
            "discovery-srv", "discovery-srv-name", "election-timeout", "enable-grpc-gateway", "enable-pprof",
            "force-new-cluster", "grpc-keepalive-interval", "grpc-keepalive-min-time", "grpc-keepalive-timeout",
            "heartbeat-interval", "host-whitelist", "initial-advertise-peer-urls", "initial-cluster",
            "initial-cluster-state", "initial-cluster-token", "initial-election-tick-advance", "key-file",
            "listen-client-urls", "listen-metrics-urls", "listen-peer-urls", "log-level", "log-outputs", "logger",
            "max-request-bytes", "max-snapshots", "max-txn-ops", "max-wals", "metrics", "name", "peer-auto-tls",
            "peer-cert-allowed-cn", "peer-cert-allowed-hostname", "peer-cert-file", "peer-client-cert-auth",
            "peer-crl-file", "peer-key-file", "peer-trusted-ca-file", "pre-vote", "quota-backend-bytes",
            "snapshot-count", "strict-reconfig-check", "trusted-ca-file", "unsafe-no-fsync", "wal-dir",
        }),
        "kube-apiserver": frozenset(
            _KLOG | _GENERIC_ETCD | _GENERIC_SERVING | _GENERIC_AUTHN | _AUDIT | _FEATURE | _SERVER_RUN | {
                "feature-gates", "anonymous-auth", "enable-bootstrap-token-auth", "api-audiences",
                "service-account-issuer", "service-account-key-file", "service-account-signing-key-file",
                "service-account-lookup", "service-account-max-token-expiration", "service-account-jwks-uri",
                "token-auth-file", "authentication-config", "authentication-token-webhook-config-file",
                "authentication-token-webhook-cache-ttl", "authorization-mode", "authorization-config",
                "authorization-webhook-config-file", "enable-admission-plugins", "disable-admission-plugins",
                "admission-control-config-file", "runtime-config", "egress-selector-config-file",
                "tracing-config-file", "allow-privileged", "service-cluster-ip-range", "service-node-port-range",
                "event-ttl", "max-connection-bytes-per-sec", "proxy-client-cert-file", "proxy-client-key-file",
                "enable-aggregator-routing", "endpoint-reconciler-type",
                "kubelet-client-certificate", "kubelet-client-key", "kubelet-certificate-authority",
                "kubelet-preferred-address-types", "kubelet-timeout",
                "oidc-issuer-url", "oidc-client-id", "oidc-ca-file", "oidc-username-claim", "oidc-username-prefix",
                "oidc-groups-claim", "oidc-groups-prefix", "oidc-signing-algs", "oidc-required-claim",
            }
        ),
        "kube-controller-manager": frozenset(
            _KLOG | _LEADER | _GENERIC_SERVING | _GENERIC_AUTHN | _DELEGATED | {
                "kubeconfig", "feature-gates", "profiling", "contention-profiling", "leader-elect-resource-lock",
                "leader-elect-resource-name", "controllers", "cluster-name", "cluster-signing-cert-file",
                "cluster-signing-key-file", "cluster-signing-duration", "root-ca-file",
                "service-account-private-key-file", "service-cluster-ip-range", "use-service-account-credentials",
                "concurrent-gc-syncs", "concurrent-namespace-syncs", "kube-api-qps", "kube-api-burst",
                "terminated-pod-gc-threshold", "allocate-node-cidrs", "cluster-cidr", "node-cidr-mask-size",
            }
        ),
        "karmada-aggregated-apiserver": frozenset(
            _KLOG | _GENERIC_ETCD | _GENERIC_SERVING | _GENERIC_AUTHN | _DELEGATED | _AUDIT | _FEATURE
            | _PROFILE | {"kubeconfig", "kube-api-qps", "kube-api-burst", "feature-gates"}
        ),
        "karmada-controller-manager": frozenset(
            _KLOG | _LEADER | _PROFILE | _RATE | {
                "kubeconfig", "feature-gates", "controllers", "cluster-status-update-frequency",
                "cluster-success-threshold", "cluster-failure-threshold", "cluster-monitor-period",
                "cluster-monitor-grace-period", "cluster-startup-grace-period", "skipped-propagating-apis",
                "skipped-propagating-namespaces", "cluster-api-context", "cluster-api-kubeconfig",
                "cluster-api-qps", "cluster-api-burst", "kube-api-qps", "kube-api-burst",
                "cluster-cache-sync-timeout", "resync-period", "metrics-bind-address", "health-probe-bind-address",
                "concurrent-cluster-syncs", "concurrent-clusterresourcebinding-syncs",
                "concurrent-resourcebinding-syncs", "concurrent-work-syncs", "concurrent-namespace-syncs",
                "concurrent-propagation-policy-syncs", "concurrent-cluster-propagation-policy-syncs",
                "concurrent-resource-template-syncs", "concurrent-dependent-resource-syncs", "enable-taint-manager",
                "graceful-eviction-timeout", "enable-cluster-resource-modeling",
                "federated-resource-quota-sync-period", "enable-no-execute-taint-eviction",
                "no-execute-taint-eviction-purge-mode", "resource-eviction-rate",
            }
        ),
        "karmada-scheduler": frozenset(
            _KLOG | _LEADER | _PROFILE | _RATE | {
                "kubeconfig", "master", "feature-gates", "leader-elect-resource-name", "metrics-bind-address",
                "health-probe-bind-address", "kube-api-qps", "kube-api-burst", "enable-scheduler-estimator",
                "disable-scheduler-estimator-in-pull-mode", "scheduler-estimator-timeout",
                "scheduler-estimator-service-namespace", "scheduler-estimator-service-prefix",
                "scheduler-estimator-port", "scheduler-estimator-cert-file", "scheduler-estimator-key-file",
                "scheduler-estimator-ca-file", "insecure-skip-estimator-verify", "enable-empty-workload-propagation",
                "plugins", "scheduler-name",
            }
        ),
        "karmada-webhook": frozenset(
            _KLOG | _PROFILE | {
                "kubeconfig", "feature-gates", "bind-address", "secure-port", "cert-dir", "tls-cert-file-name",
                "tls-private-key-file-name", "tls-min-version", "kube-api-qps", "kube-api-burst",
                "metrics-bind-address", "health-probe-bind-address", "allow-no-execute-taint-policy",
            }
        ),
        "karmada-agent": frozenset(
            _KLOG | _LEADER | _PROFILE | _RATE | {
                "kubeconfig", "feature-gates", "controllers", "karmada-kubeconfig", "karmada-context",
                "cluster-name", "cluster-namespace", "cluster-status-update-frequency", "cluster-lease-duration",
                "cluster-lease-renew-interval-fraction", "cluster-success-threshold", "cluster-failure-threshold",
                "cluster-api-qps", "cluster-api-burst", "kube-api-qps", "kube-api-burst",
                "cluster-cache-sync-timeout", "cluster-api-endpoint", "proxy-server-address", "resync-period",
                "concurrent-cluster-syncs", "concurrent-work-syncs", "report-secrets", "metrics-bind-address",
                "health-probe-bind-address", "cluster-provider", "cluster-region", "cluster-zones",
                "enable-cluster-resource-modeling", "cert-rotation-checking-interval",
                "cert-rotation-remaining-time-threshold", "karmada-kubeconfig-namespace",
            }
        ),
        "karmada-scheduler-estimator": frozenset(
            _KLOG | _PROFILE | {
                "kubeconfig", "master", "feature-gates", "cluster-name", "server-port", "grpc-auth-cert-file",
                "grpc-auth-key-file", "insecure-skip-grpc-client-verify", "grpc-client-ca-file", "kube-api-qps",
                "kube-api-burst", "parallelism", "metrics-bind-address", "health-probe-bind-address",
            }
        ),
    }
)

REMOVED_FLAGS: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "karmada-controller-manager": MappingProxyType({
            "failover-eviction-timeout": "deprecated v1.14, removed v1.15 (cmd/controller-manager/app/options)",
            "cluster-lease-duration": "deprecated v1.17, removed v1.18 (agent-only now)",
            "cluster-lease-renew-interval-fraction": "deprecated v1.17, removed v1.18 (agent-only now)",
        }),
        "karmada-webhook": MappingProxyType({
            "default-not-ready-toleration-seconds": "deprecated v1.14, removed v1.15 (no default tolerations)",
            "default-unreachable-toleration-seconds": "deprecated v1.14, removed v1.15 (no default tolerations)",
        }),
        "etcd": MappingProxyType({
            "enable-v2": "removed in etcd v3.6 (v2 API gone)",
            "experimental-enable-v2v3": "removed in etcd v3.6",
        }),
        "kube-apiserver": MappingProxyType({
            "insecure-port": "removed v1.24 (kubernetes/kubernetes#106859)",
            "insecure-bind-address": "removed v1.24 (kubernetes/kubernetes#106859)",
            "address": "removed v1.24 (kubernetes/kubernetes#106859)",
            "port": "removed v1.24 (kubernetes/kubernetes#106859)",
        }),
    }
)
"""Flags that once existed and now make the pinned binary exit with `unknown flag` (not exhaustive)."""
