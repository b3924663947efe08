"""What every Karmada component's command line shares: names, ports, the paths flags name, the
binaries, leader election, failover timing, feature-gate sets and the in-cluster URLs."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
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
WEBHOOK_HEALTH_PATH = "/readyz/"
"""karmada-webhook's only health endpoint, on WEBHOOK_PORT (cmd/webhook/app/webhook.go `Run` mounts it)."""
ESTIMATOR_PORT = 10352
SEARCH_PORT = 443
"""karmada-search's secure port (upstream default and manifests), behind its Service and the APIService."""
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
AUTHENTICATION_CONFIG_PATH = "/etc/karmada/authn/authentication-config.yaml"
"""karmada-apiserver `--authentication-config`: an AuthenticationConfiguration whose only content is anonymous
access limited to HEALTH_PATHS (what kubelet's unauthenticated probes call)."""
HEALTH_PATHS = ("/livez", "/readyz", "/healthz")
"""The kube-apiserver health endpoints anonymous requests may reach; every other path needs a credential."""
ETCD_DATA_DIR = "/var/lib/etcd"
ETCD_CONFIG_DIR = "/run/etcd"
"""emptyDir shared by an etcd pod's `prepare` init container (writes) and etcd (reads `--config-file`)."""
ETCD_CONFIG_FILE = f"{ETCD_CONFIG_DIR}/etcd.conf.yaml"
CAPI_KUBECONFIG_PATH = "/etc/karmada/capi/kubeconfig"
"""controller-manager `--cluster-api-kubeconfig`: the CAPI management cluster, for built-in auto-join."""

_PKI_FILES = (
    "ca.crt", "ca.key",
    "etcd/ca.crt", "etcd/server.crt", "etcd/server.key", "etcd/peer.crt", "etcd/peer.key",
    "etcd/backup-client.crt", "etcd/backup-client.key",
    "etcd/member-client.crt", "etcd/member-client.key",
    "etcd/maintenance-client.crt", "etcd/maintenance-client.key",
    "front-proxy-ca.crt", "front-proxy-client.crt", "front-proxy-client.key",
    "apiserver.crt", "apiserver.key",
    "apiserver-etcd-client.crt", "apiserver-etcd-client.key",
    "aggregated-apiserver.crt", "aggregated-apiserver.key",
    "aggregated-apiserver-etcd-client.crt", "aggregated-apiserver-etcd-client.key",
    "webhook.crt", "webhook.key",
    "scheduler-estimator.crt", "scheduler-estimator.key",
    "scheduler-estimator-client.crt", "scheduler-estimator-client.key",
    "descheduler-estimator-client.crt", "descheduler-estimator-client.key",
    "search.crt", "search.key", "search-etcd-client.crt", "search-etcd-client.key",
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
        "authentication-config": AUTHENTICATION_CONFIG_PATH,
        "etcd-data": ETCD_DATA_DIR,
        "etcd-config": ETCD_CONFIG_FILE,
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
        "karmada-descheduler": ("/bin/karmada-descheduler",),
        "karmada-search": ("/bin/karmada-search",),
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
        "karmada-descheduler": "karmada-descheduler",
        "karmada-search": "karmada-search",
    }
)
"""Component -> the binary whose flag set (KNOWN_FLAGS) applies; karmada-apiserver is a kube-apiserver."""

PurgeMode = Literal["Gracefully", "Directly"]


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
        "karmada-descheduler": Lease("karmada-descheduler"),  # name fixed upstream (no flag)
        "karmada-search": None,  # every replica caches and serves; no leader election (pkg/search/controller.go)
    }
)
"""For the plan table: which components leader-elect and on which lease (ref §2.1). kube-controller-
manager's lease is moved to karmada-system by `--leader-elect-resource-namespace`. The bootstrap ClusterRole
`system:kube-controller-manager` grants `create` on leases and `get`/`update` on the lease named
`kube-controller-manager` in every namespace (kubernetes plugin/pkg/auth/authorizer/rbac/bootstrappolicy/
policy.go, read in stored versions, not at v1.35.2); KarmadaBootstrap keeps an explicit Role for it anyway."""


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
    client_read_idle_seconds: int | None
    client_ping_timeout_seconds: int | None


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
    client_read_idle_s: int | None = None
    """client-go's HTTP/2 read-idle timeout (env, not a flag); None: upstream's 30 s, nothing rendered."""
    client_ping_timeout_s: int | None = None
    """client-go's HTTP/2 ping timeout (env); None: upstream's 15 s, nothing rendered."""

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
            client_read_idle_s=cfg.client_read_idle_seconds,
            client_ping_timeout_s=cfg.client_ping_timeout_seconds,
        )

    def client_env(self) -> list[dict[str, str]]:
        """The env that sets client-go's HTTP/2 connection health check in a binary that talks to karmada-apiserver
        (k8s.io/apimachinery v0.35.3 pkg/util/net/http.go `readIdleTimeoutSeconds`, `pingTimeoutSeconds`, read by
        every client-go transport, karmada v1.18.2's included). Only what the stack sets: the defaults stay
        upstream's and render nothing."""
        out = []
        if self.client_read_idle_s is not None:
            out.append({"name": HTTP2_READ_IDLE_ENV, "value": str(self.client_read_idle_s)})
        if self.client_ping_timeout_s is not None:
            out.append({"name": HTTP2_PING_TIMEOUT_ENV, "value": str(self.client_ping_timeout_s)})
        return out


HTTP2_READ_IDLE_ENV = "HTTP2_READ_IDLE_TIMEOUT_SECONDS"
HTTP2_PING_TIMEOUT_ENV = "HTTP2_PING_TIMEOUT_SECONDS"


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


FAILOVER_GATES: Mapping[str, bool] = MappingProxyType({"Failover": True, "GracefulEviction": True})
QUOTA_GATES: Mapping[str, bool] = MappingProxyType({"FederatedQuotaEnforcement": True})

KARMADA_GATES = frozenset({
    "Failover", "GracefulEviction", "PropagateDeps", "CustomizedClusterResourceModeling", "PropagationPolicyPreemption",
    "MultiClusterService", "ResourceQuotaEstimate", "StatefulFailoverInjection", "PriorityBasedScheduling",
    "FederatedQuotaEnforcement", "LoggingAlphaOptions", "LoggingBetaOptions", "ContextualLogging",
    "MultiplePodTemplatesScheduling", "ControllerPriorityQueue", "WorkloadAffinity", "SchedulingOvercommitProtection",
})
"""Every gate `features.FeatureGate` knows at Karmada v1.18.2 (`pkg/features/features.go`, DefaultFeatureGates).

Each Karmada binary registers this one gate set, so any of these names parses on any of them; any other name
(a typo, or `PriorityBasedPreemptiveScheduling`, which the API docs mention but no tag defines) makes the binary
exit with "unrecognized feature gate" (k8s.io/component-base featuregate `Set`). The descheduler registers no
`--feature-gates` flag at all."""

GATE_READERS: Mapping[str, frozenset[str]] = MappingProxyType({
    # cmd/controller-manager/app/controllermanager.go:297,828 (taint manager, cluster-taint-policy controller)
    "Failover": frozenset({"karmada-controller-manager"}),
    # pkg/controllers/applicationfailover/common.go:166 (the graceful-eviction controller itself is ungated)
    "GracefulEviction": frozenset({"karmada-controller-manager"}),
    # cmd/controller-manager/app/controllermanager.go:641, pkg/webhook/resourcebinding/validating.go:121
    "FederatedQuotaEnforcement": frozenset({"karmada-controller-manager", "karmada-webhook"}),
    # pkg/detector/detector.go:851 (groups copied into the binding); pkg/scheduler/framework/plugins/registry.go:44
    "WorkloadAffinity": frozenset({"karmada-controller-manager", "karmada-scheduler"}),
    # pkg/scheduler/scheduler.go:331,709 + core/util.go:83; pkg/estimator/server/estimate.go:51,98
    "SchedulingOvercommitProtection": frozenset({"karmada-scheduler", "karmada-scheduler-estimator"}),
    # pkg/detector/detector.go:865 (PriorityClass -> binding); pkg/scheduler/scheduler.go:253 (priority queue)
    "PriorityBasedScheduling": frozenset({"karmada-controller-manager", "karmada-scheduler"}),
    # pkg/detector/preemption.go:54, detector.go:1024,1112
    "PropagationPolicyPreemption": frozenset({"karmada-controller-manager"}),
    # pkg/controllers/cluster/taint_manager.go:284,350, binding/common.go:128, applicationfailover/common.go:145
    "StatefulFailoverInjection": frozenset({"karmada-controller-manager"}),
    # pkg/detector/detector.go:1528 + util/helper/binding.go:457; estimator/server/.../resourcequota.go:78
    "ResourceQuotaEstimate": frozenset({"karmada-controller-manager", "karmada-scheduler-estimator"}),
})
"""Gate -> the binaries whose code reads it at v1.18.2 (call sites of `features.FeatureGate.Enabled`, non-test,
mapped to the `cmd/<binary>` that links and runs them). A gate set anywhere else is parsed and ignored; this
program renders each one exactly on its readers, so a half-set gate (e.g. WorkloadAffinity only on the
scheduler: bindings carry no groups) cannot happen."""

TENANT_GATES = ("WorkloadAffinity", "SchedulingOvercommitProtection", "ResourceQuotaEstimate",
                "PriorityBasedScheduling", "PropagationPolicyPreemption", "StatefulFailoverInjection",
                "FederatedQuotaEnforcement")
"""The gates a fleet switches on for its tenants' placement features (`karmada.featureGates`)."""


def gates_for(binary: str, fleet_gates: Iterable[str]) -> dict[str, bool]:
    """The subset of the fleet's tenant gates that `binary` reads, all true."""
    return {g: True for g in sorted(fleet_gates) if binary in GATE_READERS.get(g, frozenset())}


def check_gates(binary: str, gates: Mapping[str, bool]) -> None:
    """Refuse a gate the pinned binary would exit on, or a tenant gate rendered where upstream never reads it."""
    for name in gates:
        if name not in KARMADA_GATES:
            raise ValueError(f"{binary}: '{name}' is not a feature gate of Karmada v1.18.2; the binary would exit "
                             "with 'unrecognized feature gate'")
        readers = GATE_READERS.get(name)
        if readers is not None and binary not in readers:
            raise ValueError(f"{binary}: feature gate {name} is read only by {', '.join(sorted(readers))}; "
                             "rendering it here would do nothing")


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
