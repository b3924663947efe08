"""karmada-search command line (the opt-in search addon: `search.karmada.io`, an aggregated API server)."""

from __future__ import annotations

from collections.abc import Sequence

from components.karmada.flags.common import (
    CLUSTER_DOMAIN,
    KUBECONFIG_PATH,
    NAMESPACE,
    PATHS,
    SEARCH_PORT,
    etcd_client_url,
)


def search_args(
    *,
    etcd_servers: Sequence[str] | None = None,
    namespace: str = NAMESPACE,
    cluster_domain: str = CLUSTER_DOMAIN,
    verbosity: int = 2,
) -> list[str]:
    """karmada-search as karmada-io/karmada v1.18.2 `artifacts/deploy/karmada-search.yaml` runs it, with this hub's
    paths: the karmada-apiserver through its kubeconfig (delegated authentication and authorization too), its
    ResourceRegistries in the same etcd under the default `/registry` prefix with its own etcd client certificate,
    and a serving certificate the APIService's caBundle (the Karmada CA) verifies.

    Both of its features stay on: `--disable-proxy` leaves the proxy controller nil while the
    `search-storage-cache-readiness` post-start hook still calls its `Hook`, which dereferences it
    (cmd/karmada-search/app/karmada-search.go `run`, pkg/search/proxy/controller.go `Hook`)."""
    servers = list(etcd_servers) if etcd_servers else [etcd_client_url(namespace, cluster_domain)]
    return [
        f"--kubeconfig={KUBECONFIG_PATH}",
        f"--authentication-kubeconfig={KUBECONFIG_PATH}",
        f"--authorization-kubeconfig={KUBECONFIG_PATH}",
        f"--etcd-servers={','.join(servers)}",
        f"--etcd-cafile={PATHS['etcd/ca.crt']}",
        f"--etcd-certfile={PATHS['search-etcd-client.crt']}",
        f"--etcd-keyfile={PATHS['search-etcd-client.key']}",
        "--bind-address=0.0.0.0",
        f"--secure-port={SEARCH_PORT}",
        f"--tls-cert-file={PATHS['search.crt']}",
        f"--tls-private-key-file={PATHS['search.key']}",
        "--tls-min-version=VersionTLS13",
        "--audit-log-path=-",
        "--audit-log-maxage=0",
        "--audit-log-maxbackup=0",
        "--profiling=false",
        f"--v={verbosity}",
    ]
