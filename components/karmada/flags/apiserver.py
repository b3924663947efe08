"""karmada-apiserver (a kube-apiserver) and karmada-aggregated-apiserver command lines."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from components.karmada.flags.common import (
    AGGREGATED_APISERVER_PORT,
    APISERVER_PORT,
    AUDIT_LOG_PATH,
    AUDIT_POLICY_PATH,
    AUTHENTICATION_CONFIG_PATH,
    CLUSTER_DOMAIN,
    ENCRYPTION_CONFIG_PATH,
    KUBECONFIG_PATH,
    NAMESPACE,
    PATHS,
    SERVICE_CLUSTER_IP_RANGE,
    etcd_client_url,
    feature_gates_flag,
)


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

    Differences from upstream and why: anonymous access only on the health paths (an AuthenticationConfiguration
    at `--authentication-config` whose anonymous conditions list exactly HEALTH_PATHS, so kubelet's httpGet
    probes work and nothing else is reachable without a credential; `--anonymous-auth` must then be absent, the
    two are mutually exclusive), profiling off, a rotated file audit log,
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
        f"--authentication-config={AUTHENTICATION_CONFIG_PATH}",
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
