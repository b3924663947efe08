"""The shared flag table and parser: which flags each pinned binary accepts (and which were removed),
and how an args list is read back (names, values, `$(VAR)` references, file paths)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from components.karmada.flags.common import PATHS

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
        # cmd/karmada-search/app/options/options.go AddFlags: k8s.io/apiserver Etcd, SecureServing, delegated
        # Authentication/Authorization, Audit, Features, CoreAPI (--kubeconfig), ServerRunOptions universal flags;
        # its own qps/burst and --disable-search/--disable-proxy; profileflag; logs (cmd/karmada-search/app). No
        # --feature-gates (the aggregated apiserver adds DefaultMutableFeatureGate's flag; search does not).
        "karmada-search": frozenset(
            _KLOG | _GENERIC_ETCD | _GENERIC_SERVING | _GENERIC_AUTHN | _DELEGATED | _AUDIT | _FEATURE | _SERVER_RUN
            | _PROFILE | {"kubeconfig", "kube-api-qps", "kube-api-burst", "cluster-api-qps", "cluster-api-burst",
                          "disable-search", "disable-proxy"}
        ),
        # cmd/descheduler/app/options/options.go AddFlags + profileflag + klog/logsv1 (cmd/descheduler/app):
        # no --feature-gates, no --leader-elect-resource-name, no rate-limiter or TLS-serving flags.
        "karmada-descheduler": frozenset(
            _KLOG | _LEADER | _PROFILE | {
                "kubeconfig", "master", "kube-api-qps", "kube-api-burst", "scheduler-estimator-timeout",
                "scheduler-estimator-port", "scheduler-estimator-cert-file", "scheduler-estimator-key-file",
                "scheduler-estimator-ca-file", "insecure-skip-estimator-verify",
                "scheduler-estimator-service-namespace", "scheduler-estimator-service-prefix",
                "descheduling-interval", "unschedulable-threshold",
                "metrics-bind-address", "health-probe-bind-address",
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
