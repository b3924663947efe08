"""The runtime contract of k3s on the hub servers (not a container: a systemd unit from cloud-init), as data with
sources (vocabulary: kube/contract.py). The checks read every server's rendered user-data against it."""

from __future__ import annotations

from components.hetzner import cloud_init
from components.kube.contract import Connection, Contract, Expects, Fact, FileFlag, Listener, Match, Served, Src


def k3s(path: str, symbol: str = "") -> Src:
    """k3s-io/k3s is too large to fetch; files read in stored versions (not the v1.34.1+k3s1 tag)."""
    return Src("k3s-io/k3s", "stored version", path, symbol, pinned=False)


def k3s_docs(path: str) -> Src:
    return Src("k3s-io/docs", "stored version", path, pinned=False)


_FLAGS = k3s("pkg/cli/cmds/server.go", "ServerFlags")

SERVER_CONFIG_KEYS = frozenset({
    "token-file", "token", "cluster-init", "server", "tls-san", "secrets-encryption", "etcd-snapshot-schedule-cron",
    "etcd-snapshot-retention", "etcd-snapshot-dir", "etcd-disable-snapshots", "disable", "flannel-backend",
    "cluster-cidr", "service-cidr", "cluster-dns", "cluster-domain", "node-ip", "node-external-ip",
    "advertise-address", "node-name", "node-label", "node-taint", "write-kubeconfig-mode", "write-kubeconfig",
    "kube-apiserver-arg", "kube-controller-manager-arg", "kube-scheduler-arg", "kubelet-arg", "kube-proxy-arg",
    "data-dir", "bind-address", "https-listen-port", "disable-network-policy", "disable-kube-proxy",
    "disable-cloud-controller", "embedded-registry", "etcd-s3", "etcd-s3-endpoint", "etcd-s3-bucket",
    "etcd-s3-region", "etcd-s3-folder", "etcd-s3-access-key", "etcd-s3-secret-key", "etcd-s3-config-secret",
    "protect-kernel-defaults", "selinux", "system-default-registry", "agent-token-file", "egress-selector-mode",
    "flannel-iface",
})
"""`/etc/rancher/k3s/config.yaml` keys are the server's flag names (k3s pkg/cli/cmds/server.go `ServerFlags`,
k3s-io/docs docs/installation/configuration.md): a key that is not one sets nothing. Not exhaustive; what the
program writes must be among them."""

K3S = Contract(
    key="k3s", title="k3s (hub servers)", upstream="k3s-io/k3s v1.34.1+k3s1", match=Match(),
    rendered_by="components/hetzner/cloud_init.py k3s_config, user_data", runs_in="every hub server (systemd)",
    files=(
        FileFlag("token-file", "read", "the cluster join token (`K10<sha256 of server-ca.crt>::server:<password>`)",
                 k3s("pkg/clientaccess/token.go", "hashCA")),
        *(FileFlag(None, "read", f"pre-generated {ca} used as-is on the first server's first start",
                   k3s_docs("docs/cli/certificate.md"), default=f"{cloud_init.TLS_DIR}/{ca}.crt")
          for ca in cloud_init.CA_FILES),
    ),
    listeners=(
        Listener("supervisor", "HTTPS", "https-listen-port", "port", "6443",
                 (Served("/livez", False), Served("/readyz", False)), _FLAGS,
                 note="supervisor and kube-apiserver; the program passes anonymous-auth=false"),
        Listener("kubelet", "HTTPS", None, "port", "10250", (), k3s_docs("docs/installation/requirements.md")),
        Listener("etcd", "HTTPS", None, "port", "2379", (), k3s_docs("docs/installation/requirements.md"),
                 note="2379 client and 2380 peer, embedded etcd"),
        Listener("flannel", "UDP", None, "port", "8472", (), k3s_docs("docs/installation/requirements.md"),
                 note="VXLAN between the servers, on the interface `flannel-iface` names (the one holding the "
                      "private `node-ip`, found at boot by k3s-private-net); without it flannel takes the "
                      "default-route (public) interface"),
    ),
    connections=(
        Connection("k3s", "6443", "HTTPS (token)", "config `server:` (the API LB's private address)",
                   "a joining server fetches the bootstrap data (CA keys, encrypted with the token)",
                   k3s("pkg/etcd/etcd.go", "ETCD.Start")),
        Connection("GitHub releases", "443", "HTTPS", "install-k3s", "download of the pinned binary and its "
                   "sha256sum file", Src("karmada-hub", "this checkout", "components/hetzner/cloud_init.py",
                                         "install_script"), external=True),
    ),
    expects=(
        Expects("the same `cluster-cidr`, `service-cidr`, `cluster-dns`, `disable` and `secrets-encryption` on every "
                "server", "cloud_init.k3s_config", k3s_docs("docs/datastore/ha-embedded.md")),
    ),
    exits=(
        Fact("a joining server without reachable `server:` or with the wrong token", k3s("pkg/etcd/etcd.go",
                                                                                     "ETCD.Start")),
    ),
    facts=(
        Fact("no data dir and no `server:`: k3s starts a brand-new cluster (`cluster-init`), even if one exists "
             "elsewhere (issue 13)", k3s("pkg/etcd/etcd.go", "ETCD.Start")),
        Fact("k3s runs kube-router's network policy controller unless --disable-network-policy",
             k3s_docs("docs/networking/networking-services.md")),
        Fact("flannel's interface is set only by `flannel-iface`; without it flannel uses the interface of the default "
             "route and its first IPv4 as the VXLAN endpoint, whatever `node-ip` says (k3s-io/k3s#12056, #12459)",
             k3s("pkg/agent/config/config.go", "get")),
    ),
    kubeconfig_flags=(),
)

REQUIRED_CA_FILES = (*(f"{cloud_init.TLS_DIR}/{ca}.{ext}" for ca in cloud_init.CA_FILES for ext in ("crt", "key")),
                     f"{cloud_init.TLS_DIR}/service.key")
"""What the first server must find to use a pre-generated CA set (k3s-io/docs docs/cli/certificate.md)."""

CONTRACTS: tuple[Contract, ...] = (K3S,)
