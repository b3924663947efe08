"""cloud-init user-data for the hub's k3s servers: pure functions, no Pulumi.

k3s is installed from a pinned release without `curl | sh`: the binary and the release's
`sha256sum-<arch>.txt` are downloaded, the binary is checked against it (and against an optional
hash pinned in the stack), and k3s runs from a systemd unit written here. The first server of a new
cluster starts the embedded etcd (`cluster-init`) with a CA set generated up front, so the host
kubeconfig and the join token are known without SSH; the others join through the API load balancer.

Only the very first creation may initialise: the program renders `cluster-init` for no server once any hub
server exists (`changes.plan_hub`), and the first server's user-data decides at boot
(`join_mode_script`): if another hub server answers `/cacerts` with the CA whose hash the token carries,
it joins that server instead. That matters because `ignore_changes=["userData"]` makes a replacement reuse
the user-data from the server's first creation (Pulumi uses the old input whenever there is prior state).
Day-two settings go into drop-ins under `config.yaml.d/` (k3s merges them in order after `config.yaml`).

k3s starts only once the server's private address is on an interface (`private_net_script`, the unit's first
`ExecStartPre`: Hetzner attaches the private network after the server started), which also pins flannel's VXLAN to
that interface; on the first server the join decision follows as the next `ExecStartPre` (a unit drop-in). Steps
that must hold before k3s runs are unit steps, not runcmd entries: cloud-init runs every runcmd line even after
one failed, while a failed `ExecStartPre` fails the start, and systemd tries again.

Secret material (CA keys, the token) sits in files this module names in `SECRET_PATHS`, so the
offline plan can print every user-data with exactly those files redacted (`redact_user_data`).

Before k3s ever starts, a oneshot unit installs the metadata guard (`metadata_guard_rules`): iptables
rules in the raw and mangle tables that drop pod traffic to the Hetzner metadata service
(169.254.169.254, which serves this user-data without authentication) and every non-root host process's
traffic to it; root on the host keeps access. k3s `Requires` the unit, so k3s never runs unguarded, and
the enabled unit re-applies the rules at every boot. What user-data still holds, and why that is
acceptable, is in docs/security.md.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import re
from dataclasses import dataclass, field

import yaml

from components.kube.yamlutil import dump

TLS_DIR = "/var/lib/rancher/k3s/server/tls"
CONFIG_PATH = "/etc/rancher/k3s/config.yaml"
TOKEN_PATH = "/etc/rancher/k3s/token"
INSTALL_SCRIPT_PATH = "/usr/local/sbin/install-k3s"
UNIT_PATH = "/etc/systemd/system/k3s.service"
DROPIN_DIR = "/etc/rancher/k3s/config.yaml.d"
JOIN_MODE_PATH = "/usr/local/sbin/k3s-join-mode"
JOIN_DROPIN = f"{DROPIN_DIR}/50-join-mode.yaml"
PRIVATE_NET_PATH = "/usr/local/sbin/k3s-private-net"
FLANNEL_DROPIN = f"{DROPIN_DIR}/10-flannel-iface.yaml"
"""`flannel-iface`: the interface that holds `node-ip`, found at boot (its name depends on the server type)."""
PRIVATE_NET_WAIT_SECONDS = 600
"""How long one k3s start waits for the private address; then the unit fails and systemd starts it again."""
PRIVATE_NET_PAUSE_SECONDS = 2
UNIT_DROPIN_DIR = "/etc/systemd/system/k3s.service.d"
JOIN_UNIT_DROPIN = f"{UNIT_DROPIN_DIR}/50-join-mode.conf"
ETCD_S3_DROPIN = f"{DROPIN_DIR}/20-etcd-s3.yaml"
ETCD_S3_SECRET = "k3s-etcd-snapshot-s3"
"""kube-system Secret k3s reads its snapshot object storage from (`etcd-s3-config-secret`, k3s >= v1.30.4)."""
DATASTORE_WAL = "/var/lib/rancher/k3s/server/db/etcd/member/wal"
"""k3s' `(*ETCD).IsInitialized`: this directory exists once the embedded etcd has data on this disk."""
K3S_API_PORT = 6443
SNAPSHOT_CRON = "0 */6 * * *"
"""k3s' scheduled etcd snapshots: every six hours on every server (`etcd-snapshot-schedule-cron`)."""
SNAPSHOT_RETENTION = 28
"""Scheduled snapshots each server keeps on its own disk (`etcd-snapshot-retention`; seven days at SNAPSHOT_CRON).
Local only: k3s >= v1.34.0 prunes object storage by `etcd-s3-retention` instead (k3s_snapshots)."""
JOIN_PROBE_ROUNDS = 24
JOIN_PROBE_PAUSE_SECONDS = 5
GUARD_RULES_PATH = "/etc/karmada-hub/metadata-guard.rules"
GUARD_SCRIPT_PATH = "/usr/local/sbin/karmada-hub-metadata-guard"
GUARD_UNIT = "karmada-hub-metadata-guard.service"
GUARD_UNIT_PATH = f"/etc/systemd/system/{GUARD_UNIT}"
METADATA_ADDRESS = "169.254.169.254"
"""Hetzner's metadata service: `/hetzner/v1/userdata` and `/hetzner/v1/metadata`, no token, no header
(canonical/cloud-init `cloudinit/sources/DataSourceHetzner.py`)."""
POD_CIDR = "10.42.0.0/16"
SERVICE_CIDR = "10.43.0.0/16"
GUARD_CHAIN = "KARMADA-HUB-METADATA"
GUARD_OUTPUT_CHAIN = "KARMADA-HUB-METADATA-OUT"
GUARD_HOOKS = (("raw", "PREROUTING", GUARD_CHAIN), ("mangle", "FORWARD", GUARD_CHAIN),
               ("mangle", "INPUT", GUARD_CHAIN), ("mangle", "OUTPUT", GUARD_OUTPUT_CHAIN))
"""Where the guard hooks in: a DROP in any table is final, and k3s' flannel, kube-proxy and kube-router
only insert ACCEPTs into the filter and nat tables, so nothing k3s adds later can pre-empt these."""

CA_FILES = (
    "server-ca",
    "client-ca",
    "request-header-ca",
    "etcd/peer-ca",
    "etcd/server-ca",
)
"""The CA set k3s uses as-is when it finds it on the first server's first start."""

REDACTED = "[secret]"


def secret_paths() -> frozenset[str]:
    keys = {f"{TLS_DIR}/{ca}.key" for ca in CA_FILES} | {f"{TLS_DIR}/service.key"}
    return frozenset(keys | {TOKEN_PATH})


SECRET_PATHS = secret_paths()


@dataclass(frozen=True)
class K3sCa:
    """PEMs of the pre-generated k3s CA set (certificates public, keys secret)."""

    certs: dict[str, str]
    """CA name (see CA_FILES) -> certificate PEM."""
    keys: dict[str, str]
    """CA name -> private key PEM."""
    service_key: str
    """Service-account signing key PEM (no certificate)."""


@dataclass(frozen=True)
class K3sServer:
    """Everything one server's user-data depends on."""

    node_name: str
    private_ip: str
    k3s_version: str
    token: str
    tls_sans: tuple[str, ...]
    join_url: str | None
    """The LB's private API URL for a server that joins; None on the first server of a new cluster, which
    decides at boot (`join_mode_script`): `cluster-init`, unless another server in `peers` answers."""
    k3s_sha256: str | None = None
    node_labels: tuple[str, ...] = ()
    ca: K3sCa | None = None
    """Only the first server gets the CA files; joiners receive them from the datastore."""
    extra_config: dict[str, object] = field(default_factory=dict)
    peers: tuple[str, ...] = ()
    """Private addresses the first server probes before it initialises (the other servers, the API LB)."""
    etcd_s3_secret: str | None = None
    """Set: k3s snapshots go to the object storage this kube-system Secret names (no credentials here)."""


def join_token(server_ca_pem: str, password: str) -> str:
    """k3s secure token: `K10<sha256 of server-ca.crt bytes>::server:<password>` (single-cert CA file)."""
    digest = hashlib.sha256(server_ca_pem.encode()).hexdigest()
    return f"K10{digest}::server:{password}"


def k3s_config(server: K3sServer) -> dict[str, object]:
    """The server's /etc/rancher/k3s/config.yaml. Critical values are identical on every server.

    `node-ip` and `advertise-address` are the private address, but flannel does not follow them: k3s sets
    flannel's interface only from `flannel-iface` (pkg/agent/config/config.go `get`) and otherwise takes the
    default-route interface (pkg/agent/flannel/flannel.go `LookupExtIface`), on Hetzner the public one, whose
    VXLAN traffic from another server's public address no Cloud Firewall rule admits (k3s-io/k3s#12056,
    #12459). `flannel-iface` names an interface, and the private NIC's name depends on the server type
    (`enp7s0`, `ens10`), so `private_net_script` writes it into a drop-in at every k3s start."""
    config: dict[str, object] = {
        "node-name": server.node_name,
        "token-file": TOKEN_PATH,
        "node-ip": server.private_ip,
        "advertise-address": server.private_ip,
        "tls-san": list(server.tls_sans),
        "disable": ["traefik", "servicelb"],
        "cluster-cidr": POD_CIDR,
        "service-cidr": SERVICE_CIDR,
        "cluster-dns": "10.43.0.10",
        "flannel-backend": "vxlan",
        "secrets-encryption": True,
        "write-kubeconfig-mode": "0600",
        "etcd-snapshot-schedule-cron": SNAPSHOT_CRON,
        "etcd-snapshot-retention": SNAPSHOT_RETENTION,
        "kube-apiserver-arg": ["anonymous-auth=false", "profiling=false"],
        "kube-controller-manager-arg": ["profiling=false"],
        "kube-scheduler-arg": ["profiling=false"],
    }
    if server.node_labels:
        config["node-label"] = list(server.node_labels)
    if server.join_url is not None:
        config["server"] = server.join_url
    config.update(server.extra_config)
    return config


def _release_asset_base(version: str) -> str:
    return "https://github.com/k3s-io/k3s/releases/download/" + version.replace("+", "%2B")


def install_script(version: str, pinned_sha256: str | None) -> str:
    """POSIX sh: download the pinned k3s, verify it, install it, start the unit. Fails loudly."""
    pinned = pinned_sha256 or ""
    return f"""#!/bin/sh
# Installs k3s {version} with checksum verification; written by karmada-hub cloud-init.
set -eu
version='{version}'
base="${{K3S_RELEASE_BASE:-{_release_asset_base(version)}}}"
pinned='{pinned}'
case "$(uname -m)" in
  x86_64|amd64) binary=k3s; sums=sha256sum-amd64.txt ;;
  aarch64|arm64) binary=k3s-arm64; sums=sha256sum-arm64.txt ;;
  *) echo "install-k3s: unsupported architecture $(uname -m)" >&2; exit 1 ;;
esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
curl -fsSL --retry 5 --retry-delay 3 -o "$work/$binary" "$base/$binary"
curl -fsSL --retry 5 --retry-delay 3 -o "$work/sums" "$base/$sums"
expected=$(awk -v f="$binary" '$2 == f {{ print $1 }}' "$work/sums")
if [ -z "$expected" ]; then echo "install-k3s: $binary not listed in $sums for $version" >&2; exit 1; fi
actual=$(sha256sum "$work/$binary" | awk '{{ print $1 }}')
if [ "$actual" != "$expected" ]; then echo "install-k3s: checksum mismatch for $binary ($actual != $expected)" >&2; exit 1; fi
if [ -n "$pinned" ] && [ "$actual" != "$pinned" ]; then
  echo "install-k3s: $binary does not match the hash pinned in the stack ($actual != $pinned)" >&2; exit 1
fi
install -m 0755 "$work/$binary" "${{K3S_BIN_DIR:-/usr/local/bin}}/k3s"
for tool in kubectl crictl ctr; do ln -sf k3s "${{K3S_BIN_DIR:-/usr/local/bin}}/$tool"; done
if [ -z "${{K3S_SKIP_START:-}}" ]; then
  systemctl daemon-reload
  systemctl enable --now k3s.service
fi
"""


def _iface_function(default_ip: str) -> str:
    """sh: `node_ip` (overridable for tests) and `iface`, which prints the interface holding it (or nothing)."""
    ipaddress.IPv4Address(default_ip)
    return f"""node_ip="${{K3S_NODE_IP:-{default_ip}}}"
iface() {{ ip -o -4 addr show | awk -v ip="$node_ip" 'index($4, ip "/") == 1 {{ print $2; exit }}'; }}"""


def private_net_script(node_ip: str, wait_seconds: int = PRIVATE_NET_WAIT_SECONDS) -> str:
    """POSIX sh, the k3s unit's first `ExecStartPre`: wait until `node_ip` is on an interface, then pin flannel to
    that interface (`FLANNEL_DROPIN`, rewritten only when it changes).

    Hetzner attaches a server to a private network after it starts whenever it has a public address
    (terraform-provider-hcloud internal/server/resource.go: created stopped only without a public net, networks
    attached afterwards), so at first boot the address may not be there yet. Without it k3s could not bind
    `node-ip`, and the first server's join decision would mistake an unreachable network for peers that do not
    answer. So nothing starts before it: after `wait_seconds` the script fails, the unit with it, and systemd
    (`Restart=always`) tries again; the journal says why every time."""
    return f"""#!/bin/sh
# Waits for this server's private address, then pins flannel to its interface; karmada-hub cloud-init.
set -eu
{_iface_function(node_ip)}
dropin="${{K3S_FLANNEL_DROPIN:-{FLANNEL_DROPIN}}}"
wait="${{K3S_PRIVATE_NET_WAIT:-{wait_seconds}}}"
pause="${{K3S_PRIVATE_NET_PAUSE:-{PRIVATE_NET_PAUSE_SECONDS}}}"
waited=0
dev=$(iface)
while [ -z "$dev" ]; do
  if [ "$waited" -ge "$wait" ]; then
    echo "k3s-private-net: $node_ip is on no interface after ${{waited}}s: this server is not attached to the hub's private network (yet); k3s does not start without it" >&2
    exit 1
  fi
  if [ "$waited" -eq 0 ]; then echo "k3s-private-net: waiting for $node_ip on an interface"; fi
  sleep "$pause"
  waited=$((waited + pause))
  dev=$(iface)
done
want="flannel-iface: $dev"
if [ -f "$dropin" ] && [ "$(cat "$dropin")" = "$want" ]; then exit 0; fi
mkdir -p "$(dirname "$dropin")"
tmp="$dropin.tmp.$$"
printf '%s\\n' "$want" > "$tmp"
chmod 0600 "$tmp"
mv "$tmp" "$dropin"
echo "k3s-private-net: $node_ip is on $dev; flannel uses $dev"
"""


def join_mode_script(token_ca_sha256: str, peers: tuple[str, ...], node_ip: str) -> str:
    """POSIX sh for the first server of a new cluster, an `ExecStartPre` of k3s after `private_net_script`: write
    exactly one of `cluster-init` / `server:` to JOIN_DROPIN before k3s starts.

    It asks every peer's `/cacerts` (k3s serves it without credentials: `pkg/server/handlers/router.go`
    `NewHandler`), and accepts an answer only if its sha256 equals the hash in the join token (k3s
    `pkg/clientaccess/token.go` `hashCA`): then it joins that server. A different CA is somebody else's
    cluster: stop. Nobody answering for the whole probe window: initialise. Joiners cannot answer before the
    first server exists (they validate the token against the join URL first), so on day one nobody answers;
    a rebuilt first server finds the running cluster. A disk that already holds the datastore needs neither
    (k3s ignores the datastore arguments then). Without its own private address (`node_ip` on no interface)
    silence proves nothing: it cannot decide and exits 1, before the first probe and again before it would
    initialise; the unit fails and systemd starts it again."""
    if not re.fullmatch(r"[0-9a-f]{64}", token_ca_sha256):
        raise ValueError("token_ca_sha256 must be a sha256 hex digest")
    for peer in peers:
        ipaddress.ip_address(peer)
    return f"""#!/bin/sh
# Decides whether this server initialises the k3s cluster or joins the one that runs; karmada-hub cloud-init.
set -eu
expected='{token_ca_sha256}'
{_iface_function(node_ip)}
peers="${{K3S_JOIN_PEERS:-{' '.join(peers)}}}"
port="${{K3S_JOIN_PORT:-{K3S_API_PORT}}}"
dropin="${{K3S_JOIN_DROPIN:-{JOIN_DROPIN}}}"
wal="${{K3S_DATASTORE_WAL:-{DATASTORE_WAL}}}"
rounds="${{K3S_JOIN_ROUNDS:-{JOIN_PROBE_ROUNDS}}}"
pause="${{K3S_JOIN_PAUSE:-{JOIN_PROBE_PAUSE_SECONDS}}}"
if [ -d "$wal" ]; then echo "k3s-join-mode: this disk holds the datastore; k3s restarts from it"; exit 0; fi
if [ -f "$dropin" ]; then echo "k3s-join-mode: decided before: $(cat "$dropin")"; exit 0; fi
no_net() {{ echo "k3s-join-mode: cannot decide: $node_ip is on no interface, so peers that do not answer prove nothing" >&2; exit 1; }}
if [ -z "$(iface)" ]; then no_net; fi
mkdir -p "$(dirname "$dropin")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
decide() {{ printf '%s\\n' "$1" > "$work/mode"; chmod 0600 "$work/mode"; mv "$work/mode" "$dropin"; }}
round=0
while [ "$round" -lt "$rounds" ]; do
  for ip in $peers; do
    if curl -fsk --max-time 4 -o "$work/ca" "https://$ip:$port/cacerts"; then
      got=$(sha256sum "$work/ca" | awk '{{ print $1 }}')
      if [ "$got" = "$expected" ]; then
        decide "server: https://$ip:$port"
        echo "k3s-join-mode: $ip serves this cluster's CA; joining the running cluster"
        exit 0
      fi
      echo "k3s-join-mode: $ip:$port serves another CA (sha256 $got, expected $expected); refusing to join or initialise" >&2
      exit 1
    fi
  done
  round=$((round + 1))
  if [ "$round" -lt "$rounds" ]; then sleep "$pause"; fi
done
if [ -z "$(iface)" ]; then no_net; fi
decide "cluster-init: true"
echo "k3s-join-mode: no other hub server answered in $rounds rounds; initialising the cluster"
"""


def etcd_s3_config(secret_name: str) -> dict[str, object]:
    """k3s reads the object storage for its snapshots from a kube-system Secret when only these two are set
    (k3s `pkg/etcd/s3/s3.go` `GetClient`: any other etcd-s3 option and the Secret is ignored;
    k3s-io/docs `docs/cli/etcd-snapshot.md` "S3 Configuration Secret Support", since v1.30.4+k3s1)."""
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", secret_name):
        raise ValueError(f"{secret_name!r} is not a Secret name")
    return {"etcd-s3": True, "etcd-s3-config-secret": secret_name}


def token_ca_sha256(token: str) -> str:
    """The CA hash a `K10<sha256>::server:<password>` token carries."""
    match = re.fullmatch(r"K10([0-9a-f]{64})::.+", token.strip())
    if not match:
        raise ValueError("not a k3s secure token (K10<sha256>::<user>:<password>)")
    return match.group(1)


def day_two_files(server: K3sServer) -> list[dict[str, str]]:
    """The drop-ins and the boot-time join decision: separate entries, beside the day-one files."""
    files = []
    if server.join_url is None:
        files.append(_file(JOIN_MODE_PATH, join_mode_script(token_ca_sha256(server.token), server.peers,
                                                            server.private_ip), "0700"))
        files.append(_file(JOIN_UNIT_DROPIN, JOIN_UNIT_DROPIN_TEXT, "0644"))
    if server.etcd_s3_secret:
        files.append(_file(ETCD_S3_DROPIN, yaml.safe_dump(etcd_s3_config(server.etcd_s3_secret), sort_keys=True),
                           "0600"))
    return files


def metadata_guard_rules(pod_cidr: str = POD_CIDR) -> str:
    """`iptables-restore --noflush` input: the guard's chains, flushed and refilled (idempotent).

    - raw PREROUTING: a pod dialing the metadata address (forwarded, or local to the node);
    - mangle FORWARD/INPUT: the same after a DNAT (a Service whose endpoint someone pointed at it);
    - mangle OUTPUT: host processes that are not root (hostNetwork pods running as non-root among them).
    A hostNetwork pod running as root is root on the host; PSA `restricted` forbids hostNetwork in the
    program's namespaces. IPv4 only: the cluster has no IPv6 pod range and the service answers on v4 only.
    """
    meta = f"{METADATA_ADDRESS}/32"
    return "\n".join([
        "*raw",
        f":{GUARD_CHAIN} - [0:0]",
        f"-F {GUARD_CHAIN}",
        f'-A {GUARD_CHAIN} -s {pod_cidr} -d {meta} -m comment --comment "karmada-hub: no pod reaches the '
        'metadata service" -j DROP',
        "COMMIT",
        "*mangle",
        f":{GUARD_CHAIN} - [0:0]",
        f":{GUARD_OUTPUT_CHAIN} - [0:0]",
        f"-F {GUARD_CHAIN}",
        f"-F {GUARD_OUTPUT_CHAIN}",
        f'-A {GUARD_CHAIN} -s {pod_cidr} -d {meta} -m comment --comment "karmada-hub: no pod reaches the '
        'metadata service (after DNAT)" -j DROP',
        f'-A {GUARD_OUTPUT_CHAIN} -d {meta} -m owner ! --uid-owner 0 -m comment --comment "karmada-hub: only '
        'root on the host reads user-data" -j DROP',
        "COMMIT",
        "",
    ])


def metadata_guard_script(rules_path: str = GUARD_RULES_PATH) -> str:
    """POSIX sh: load the rules, then make each hook jump to its chain first, once (safe to run again)."""
    hooks = " ".join(f'"{table} {hook} {chain}"' for table, hook, chain in GUARD_HOOKS)
    return f"""#!/bin/sh
# karmada-hub metadata guard: keeps pods and non-root host processes away from {METADATA_ADDRESS}.
set -eu
rules="${{1:-{rules_path}}}"
command -v iptables-restore >/dev/null || {{ echo "metadata-guard: iptables is not installed" >&2; exit 1; }}
iptables-restore --noflush < "$rules"
for hook in {hooks}; do
  set -- $hook
  iptables -w -t "$1" -C "$2" -j "$3" 2>/dev/null || iptables -w -t "$1" -I "$2" 1 -j "$3"
done
"""


GUARD_UNIT_TEXT = f"""[Unit]
Description=karmada-hub: keep pods away from the Hetzner metadata service
DefaultDependencies=no
Wants=network-pre.target
Before=network-pre.target k3s.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart={GUARD_SCRIPT_PATH}

[Install]
WantedBy=multi-user.target
RequiredBy=k3s.service
"""


SYSTEMD_UNIT = f"""[Unit]
Description=k3s server (karmada-hub)
Documentation=https://docs.k3s.io
Wants=network-online.target
After=network-online.target {GUARD_UNIT}
# k3s never runs unguarded; restarting the guard restarts k3s too, and KillMode=process keeps the pods running
Requires={GUARD_UNIT}

[Service]
Type=notify
KillMode=process
Delegate=yes
LimitNOFILE=1048576
LimitNPROC=infinity
LimitCORE=infinity
TasksMax=infinity
TimeoutStartSec=0
Restart=always
RestartSec=5s
ExecStartPre=-/sbin/modprobe br_netfilter
ExecStartPre=-/sbin/modprobe overlay
ExecStartPre={PRIVATE_NET_PATH}
ExecStart=/usr/local/bin/k3s server

[Install]
WantedBy=multi-user.target
"""


JOIN_UNIT_DROPIN_TEXT = f"""# The first server of a new cluster: decide cluster-init or join, after the private address is there
# (systemd runs a drop-in's ExecStartPre after the unit's own).
[Service]
ExecStartPre={JOIN_MODE_PATH}
"""


def _file(path: str, content: str, permissions: str, b64: bool = False) -> dict[str, str]:
    entry = {"path": path, "owner": "root:root", "permissions": permissions}
    if b64:
        # b64 keeps the bytes on disk identical to what was hashed (the token embeds the CA's sha256).
        entry["encoding"] = "b64"
        entry["content"] = base64.b64encode(content.encode()).decode()
    else:
        entry["content"] = content
    return entry


def user_data(server: K3sServer) -> str:
    """The server's complete `#cloud-config` document."""
    files = [
        _file(CONFIG_PATH, yaml.safe_dump(k3s_config(server), sort_keys=True), "0600"),
        _file(TOKEN_PATH, server.token + "\n", "0600"),
        _file(UNIT_PATH, SYSTEMD_UNIT, "0644"),
        _file(INSTALL_SCRIPT_PATH, install_script(server.k3s_version, server.k3s_sha256), "0700"),
        _file(PRIVATE_NET_PATH, private_net_script(server.private_ip), "0700"),
        _file(GUARD_RULES_PATH, metadata_guard_rules(), "0600"),
        _file(GUARD_SCRIPT_PATH, metadata_guard_script(), "0700"),
        _file(GUARD_UNIT_PATH, GUARD_UNIT_TEXT, "0644"),
    ]
    if server.ca is not None:
        for ca in CA_FILES:
            files.append(_file(f"{TLS_DIR}/{ca}.crt", server.ca.certs[ca], "0644", b64=True))
            files.append(_file(f"{TLS_DIR}/{ca}.key", server.ca.keys[ca], "0600", b64=True))
        files.append(_file(f"{TLS_DIR}/service.key", server.ca.service_key, "0600", b64=True))
    files += day_two_files(server)
    doc = {
        "package_update": False,
        "write_files": files,
        # The guard first: k3s (and every pod) starts only after the rules are in place. What k3s must not start
        # without (the private address, the first server's join decision) are the unit's ExecStartPre steps, not
        # runcmd entries: cloud-init runs every runcmd line even after one failed, and a unit start fails as a
        # whole (and is retried by systemd), at first boot and at every later one.
        "runcmd": [["systemctl", "daemon-reload"], ["systemctl", "enable", "--now", GUARD_UNIT],
                   [INSTALL_SCRIPT_PATH]],
    }
    return "#cloud-config\n" + dump(doc)


def redact_user_data(document: str) -> str:
    """The same document with every file in SECRET_PATHS replaced by `[secret]` (still valid cloud-config)."""
    header, _, body = document.partition("\n")
    doc = yaml.safe_load(body) or {}
    for entry in doc.get("write_files", []):
        if entry.get("path") in SECRET_PATHS:
            entry.pop("encoding", None)
            entry["content"] = REDACTED
    return header + "\n" + dump(doc)
