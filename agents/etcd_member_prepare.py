"""etcd member prepare: decide how this Karmada etcd member starts, then write etcd's config file.

Runs as the `prepare` init container of every `etcd-N` pod (stdlib only; `components/karmada/manifests.py`
mounts it from a ConfigMap into the pinned Python image). The etcd image (`registry.k8s.io/etcd:3.6.6-0`,
kubernetes v1.35.4 `cluster/images/etcd/Dockerfile`: distroless static plus a static bash as `/bin/sh`, etcd and
etcdctl in `/usr/local/bin`) has a shell and etcdctl, but nothing that can answer `empty` on the peer port or ask
a peer's `/members`, so the decision is made here, in its own container with its own certificate; it reaches etcd
through the only input etcd reads at start that a program can write: `--config-file`, which
makes etcd ignore every other flag (etcd v3.4.23/v3.6.6 `etcdmain/config.go`, flag `config-file`). The
config file is derived from the very flag list the program renders (`flags.etcd_args`), passed after `--`,
so there is still one source for etcd's settings.

The decision (etcd v3.4.23 `etcdserver/server.go` `NewServer`, v3.6.6 `server/etcdserver/bootstrap.go`):

- a WAL in the data dir: etcd restarts from it and ignores the `--initial-cluster*` settings, so the rendered
  settings are written as they are;
- no WAL: ask every other member on its peer port (`GET /members`, etcd's peer handler, served before the
  member has quorum; `etcdserver/api/etcdhttp/peer.go`). While this agent waits it answers the same request
  on its own peer port with 404 and `X-Karmada-Hub-Etcd-Prepare: empty`, so members that are all empty can
  tell each other apart from members that are down:
  - some member reports a formed cluster (a member with client URLs: it has served before) -> this member
    lost its data. Rejoin as a *new* member, the way etcd's runtime-reconfiguration guide replaces a
    failed machine: only if a member serves a linearizable read (the cluster has quorum), remove every
    entry that holds this member's peer URL, add this peer URL as a new member, start with
    `initial-cluster-state: existing` and the member list the add returned. A fresh member ID means nobody
    can mistake the empty member for the one that acknowledged the old log.
  - every other member answered and none reports a formed cluster -> the cluster is being created: start
    with the rendered `new` settings. (A member that only asks after two others have already formed it takes
    the rejoin path above: its never-started entry is replaced.)
  - otherwise (someone does not answer, or no quorum) wait and ask again, for as long as it takes, repeating
    why every `--remind-seconds`. A member with no data never bootstraps while a member that may hold data is
    unreachable. It does not exit to be restarted: in kubelet's back-off (10 s doubling to 5 minutes) its peer
    port would not answer `empty`, so the members of a first formation would need their prepare loops to
    overlap by luck, and one slow volume could delay the cluster by several back-off cycles. Only a refusal
    (PrepareError: bad input, a foreign CA) exits 1.

All calls use mTLS with a client certificate of the etcd CA that carries no SANs (etcd checks a client
certificate's SANs against the caller's address when it has any; v3.6.6 `client/pkg/transport/listener_tls.go`).
The member API is etcd's gRPC gateway (`POST /v3/cluster/member/{list,remove,add}`, `/v3/kv/range`).
"""

from __future__ import annotations

import argparse
import base64
import http.client
import http.server
import json
import os
import shutil
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

EMPTY_HEADER = "X-Karmada-Hub-Etcd-Prepare"
RUNBOOK = "docs/runbooks/one-hub-server-lost.md"

# flag -> (path in etcd's config file, type). Key names and nesting: etcd v3.4.23 `embed/config.go` and
# v3.6.6 `server/embed/config.go` (`Config`, `configJSON`, `securityConfig` json tags); the peer TLS flags
# lose their `peer-` prefix under `peer-transport-security`.
FLAG_TABLE: Mapping[str, tuple[tuple[str, ...], str]] = {
    "name": (("name",), "str"),
    "data-dir": (("data-dir",), "str"),
    "wal-dir": (("wal-dir",), "str"),
    "listen-client-urls": (("listen-client-urls",), "str"),
    "advertise-client-urls": (("advertise-client-urls",), "str"),
    "listen-peer-urls": (("listen-peer-urls",), "str"),
    "initial-advertise-peer-urls": (("initial-advertise-peer-urls",), "str"),
    "listen-metrics-urls": (("listen-metrics-urls",), "str"),
    "initial-cluster": (("initial-cluster",), "str"),
    "initial-cluster-state": (("initial-cluster-state",), "str"),
    "initial-cluster-token": (("initial-cluster-token",), "str"),
    "client-cert-auth": (("client-transport-security", "client-cert-auth"), "bool"),
    "trusted-ca-file": (("client-transport-security", "trusted-ca-file"), "str"),
    "cert-file": (("client-transport-security", "cert-file"), "str"),
    "key-file": (("client-transport-security", "key-file"), "str"),
    "peer-client-cert-auth": (("peer-transport-security", "client-cert-auth"), "bool"),
    "peer-trusted-ca-file": (("peer-transport-security", "trusted-ca-file"), "str"),
    "peer-cert-file": (("peer-transport-security", "cert-file"), "str"),
    "peer-key-file": (("peer-transport-security", "key-file"), "str"),
    "cipher-suites": (("cipher-suites",), "list"),
    "snapshot-count": (("snapshot-count",), "int"),
    "quota-backend-bytes": (("quota-backend-bytes",), "int"),
    "auto-compaction-mode": (("auto-compaction-mode",), "str"),
    "auto-compaction-retention": (("auto-compaction-retention",), "str"),
    "heartbeat-interval": (("heartbeat-interval",), "int"),
    "election-timeout": (("election-timeout",), "int"),
    "max-snapshots": (("max-snapshots",), "int"),
    "max-wals": (("max-wals",), "int"),
    "max-request-bytes": (("max-request-bytes",), "int"),
    "max-txn-ops": (("max-txn-ops",), "int"),
    "strict-reconfig-check": (("strict-reconfig-check",), "bool"),
    "pre-vote": (("pre-vote",), "bool"),
    "enable-pprof": (("enable-pprof",), "bool"),
    "logger": (("logger",), "str"),
    "log-level": (("log-level",), "str"),
    "log-outputs": (("log-outputs",), "list"),
    "enable-grpc-gateway": (("enable-grpc-gateway",), "bool"),
}
"""Every etcd flag this agent can carry into the config file; any other flag is refused, not dropped."""

FLAG_DEFAULTS: Mapping[str, str] = {
    "enable-grpc-gateway": "true",
    "auto-compaction-mode": "periodic",
    "auto-compaction-retention": "0",
}
"""Where a config file and the command line disagree on a default, the command line's, so the file means what
the flags meant. etcd v3.4.23 `etcdmain/config.go` declares `--enable-grpc-gateway` true and
`--auto-compaction-mode` periodic, but `embed.NewConfig` (the base of a config file) leaves them false and
empty: a 3.4 config file without them turns off the JSON gateway this agent and the tests talk to. v3.6.6
`server/embed/config.go` `NewConfig` already has these values."""


class PrepareError(Exception):
    """Something this agent cannot decide around (bad input, a foreign CA answering): exit 1 at once."""


class NotYet(Exception):
    """The safe action is not possible now (no quorum, a member unreachable): wait and ask again."""


def log(message: str) -> None:
    print(f"etcd-prepare: {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------ pure parts


def parse_flags(args: Sequence[str]) -> dict[str, str]:
    """`--name=value` pairs (the form the program renders); anything else is refused."""
    values: dict[str, str] = {}
    for arg in args:
        if not arg.startswith("--") or "=" not in arg:
            raise PrepareError(f"etcd argument {arg!r} is not --name=value")
        name, value = arg[2:].split("=", 1)
        if name in values:
            raise PrepareError(f"etcd flag --{name} given twice")
        values[name] = value
    for required in ("name", "data-dir", "initial-cluster", "initial-advertise-peer-urls", "listen-peer-urls",
                     "peer-trusted-ca-file", "peer-cert-file", "peer-key-file", "trusted-ca-file"):
        if required not in values:
            raise PrepareError(f"etcd flag --{required} is required")
    for name, value in values.items():
        if "$(" in value:
            raise PrepareError(f"--{name}={value}: kubelet did not expand it (is the variable in the env?)")
    return values


def _typed(flag: str, value: str, kind: str) -> Any:
    if kind == "str":
        return value
    if kind == "bool":
        if value not in ("true", "false"):
            raise PrepareError(f"--{flag}={value}: expected true or false")
        return value == "true"
    if kind == "int":
        try:
            return int(value)
        except ValueError:
            raise PrepareError(f"--{flag}={value}: expected an integer") from None
    return [item for item in value.split(",") if item]


def config_document(values: Mapping[str, str], state: str, initial_cluster: str) -> dict[str, Any]:
    """etcd's config file for these flags, with the decided `initial-cluster-state` and `initial-cluster`."""
    if state not in ("new", "existing"):
        raise PrepareError(f"initial-cluster-state must be new or existing (got {state!r})")
    merged = {**FLAG_DEFAULTS, **values, "initial-cluster-state": state, "initial-cluster": initial_cluster}
    unknown = sorted(set(merged) - set(FLAG_TABLE))
    if unknown:
        raise PrepareError(f"etcd flags {', '.join('--' + u for u in unknown)} have no config-file mapping here; "
                           "add them to FLAG_TABLE in agents/etcd_member_prepare.py")
    doc: dict[str, Any] = {}
    for flag in sorted(merged):
        path, kind = FLAG_TABLE[flag]
        node = doc
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = _typed(flag, merged[flag], kind)
    return doc


def initial_cluster_map(initial_cluster: str) -> dict[str, list[str]]:
    """`a=https://x:2380,b=https://y:2380` -> {name: [peer URLs]} (a member may list several)."""
    out: dict[str, list[str]] = {}
    for item in initial_cluster.split(","):
        if "=" not in item:
            raise PrepareError(f"--initial-cluster entry {item!r} is not name=url")
        name, url = item.split("=", 1)
        out.setdefault(name, []).append(url)
    return out


@dataclass(frozen=True)
class Member:
    id: str
    name: str
    peer_urls: tuple[str, ...]
    client_urls: tuple[str, ...]

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Member:
        """Both shapes: the peer handler (`id`, `peerURLs`, `clientURLs`) and the gateway (`ID`, …).
        The gateway writes uint64 IDs as strings; the peer handler as hex strings."""
        ident = raw.get("ID", raw.get("id", ""))
        return cls(id=str(ident), name=str(raw.get("name") or ""), peer_urls=tuple(raw.get("peerURLs") or ()),
                   client_urls=tuple(raw.get("clientURLs") or ()))


@dataclass(frozen=True)
class PeerState:
    """What one other member's peer port said: `empty` (its prepare agent, no data), `members` (a running
    etcd and its member list), or `down` (no answer; `detail` says why)."""

    name: str
    kind: str
    members: tuple[Member, ...] = ()
    detail: str = ""


@dataclass(frozen=True)
class Decision:
    action: str
    """`new`, `rejoin` or `wait`."""
    reason: str
    members: tuple[Member, ...] = field(default=())
    """For `rejoin`: the formed cluster's members as the peers reported them."""


def decide(states: Sequence[PeerState]) -> Decision:
    """The start-up decision for a member with no WAL, from what every other member's peer port said."""
    formed: dict[str, Member] = {}
    for state in states:
        if state.kind == "members" and any(m.client_urls for m in state.members):
            for m in state.members:
                formed.setdefault(m.id, m)
    if formed:
        reporters = ", ".join(s.name for s in states if s.kind == "members")
        return Decision("rejoin", f"the cluster has run before (reported by {reporters}); this member has no data",
                        tuple(formed.values()))
    down = [s for s in states if s.kind == "down"]
    if down:
        detail = "; ".join(f"{s.name}: {s.detail}" for s in down)
        return Decision("wait", f"no member reports a formed cluster and not every member answers ({detail}); a "
                        "member that does not answer may hold the data, so this empty member does not bootstrap")
    return Decision("new", "every other member answers and none has formed a cluster: creating it")


def rejoin_initial_cluster(members: Sequence[Member], rendered: Mapping[str, Sequence[str]], self_name: str,
                           self_peer_url: str) -> str:
    """`--initial-cluster` for `existing` after the add: every member of the cluster by the name etcd will
    compare, one entry per peer URL. Unstarted members (no name yet) take the name the program renders
    for their peer URL, this member its own."""
    by_url = {url: name for name, urls in rendered.items() for url in urls}
    entries = []
    for m in members:
        if self_peer_url in m.peer_urls:
            name = self_name
        else:
            name = m.name or next((by_url[u] for u in m.peer_urls if u in by_url), "")
        if not name:
            raise PrepareError(f"member {m.id} with peer URLs {list(m.peer_urls)} has no name and is not in the "
                               "rendered --initial-cluster")
        entries += [f"{name}={url}" for url in m.peer_urls]
    if not any(e == f"{self_name}={self_peer_url}" for e in entries):
        raise PrepareError(f"the member list after the add does not contain {self_peer_url}")
    return ",".join(sorted(entries))


def has_wal(data_dir: str) -> bool:
    wal = os.path.join(data_dir, "member", "wal")
    try:
        return any(name.endswith(".wal") for name in os.listdir(wal))
    except FileNotFoundError:
        return False


def set_aside_incomplete(data_dir: str) -> str | None:
    """A `member/` without a WAL is what a failed first start leaves (etcd creates `member/snap` and the
    backend before it bootstraps): nothing durable, but etcd would open that backend. Keep the last one
    as `member.incomplete` for inspection and start clean."""
    member = os.path.join(data_dir, "member")
    if not os.path.isdir(member):
        return None
    target = os.path.join(data_dir, "member.incomplete")
    if os.path.isdir(target):
        shutil.rmtree(target)
    os.replace(member, target)
    return target


def write_config(path: str, doc: Mapping[str, Any]) -> None:
    """JSON is YAML, and etcd reads its config file with sigs.k8s.io/yaml (YAML -> JSON -> Go structs)."""
    tmp = f"{path}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(doc, fh, indent=2, sort_keys=True)
        fh.write("\n")
    os.replace(tmp, path)


# ------------------------------------------------------------------------------------------ talking to etcd


@dataclass
class Tls:
    peer_ca: str
    client_ca: str
    cert: str
    key: str
    timeout: float = 3.0

    def context(self, ca: str) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=ca)
        ctx.load_cert_chain(self.cert, self.key)
        return ctx


def _request(url: str, ctx: ssl.SSLContext, method: str, path: str, body: Any, timeout: float
             ) -> tuple[int, Mapping[str, str], bytes]:
    parts = urlsplit(url)
    conn = http.client.HTTPSConnection(parts.hostname or "", parts.port or 443, context=ctx, timeout=timeout)
    try:
        payload = None if body is None else json.dumps(body)
        headers = {"Content-Type": "application/json"} if payload is not None else {}
        conn.request(method, path, body=payload, headers=headers)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def probe_peer(name: str, peer_url: str, tls: Tls) -> PeerState:
    """Ask one member's peer port who it is: an empty prepare agent, or a running etcd with its members."""
    try:
        status, headers, body = _request(peer_url, tls.context(tls.peer_ca), "GET", "/members", None, tls.timeout)
    except ssl.SSLCertVerificationError as exc:
        # not one of ours (a recycled pod IP, a stale DNS answer): nothing it says counts
        return PeerState(name, "down", detail=f"certificate not from the etcd CA for {peer_url} ({exc.verify_message})")
    except (OSError, http.client.HTTPException) as exc:
        return PeerState(name, "down", detail=f"{type(exc).__name__}: {exc}")
    if headers.get(EMPTY_HEADER.lower()) == "empty":
        return PeerState(name, "empty")
    if status != 200:
        return PeerState(name, "down", detail=f"HTTP {status} on /members")
    try:
        raw = json.loads(body)
        members = tuple(Member.from_json(m) for m in raw)
    except (ValueError, TypeError, AttributeError) as exc:
        return PeerState(name, "down", detail=f"unreadable /members answer ({exc})")
    return PeerState(name, "members", members=members)


class Gateway:
    """etcd's gRPC gateway (JSON over the client port), the way etcdctl's member commands use the API."""

    def __init__(self, tls: Tls) -> None:
        self.tls = tls

    def call(self, endpoint: str, path: str, body: Mapping[str, Any], timeout: float | None = None
             ) -> dict[str, Any]:
        status, _, raw = _request(endpoint, self.tls.context(self.tls.client_ca), "POST", path, body,
                                  timeout or self.tls.timeout)
        try:
            data = json.loads(raw or b"{}")
        except ValueError:
            data = {"error": raw[:200].decode(errors="replace")}
        if status != 200 or "error" in data:
            raise NotYet(f"{endpoint}{path}: HTTP {status} {data.get('error') or data.get('message') or data}")
        return data

    def unhealthy(self, endpoint: str) -> str | None:
        """None if a linearizable read succeeds, which it does only through a leader with quorum (what
        `etcdctl endpoint health` checks: etcd v3.4.23 / v3.6.6 `etcdctl/ctlv3/command/ep_command.go`, a Get
        of key `health`); otherwise why not."""
        try:
            self.call(endpoint, "/v3/kv/range", {"key": base64.b64encode(b"health").decode()}, timeout=6.0)
            return None
        except (NotYet, OSError, http.client.HTTPException) as exc:
            return f"{type(exc).__name__}: {exc}"

    def members(self, endpoint: str) -> list[Member]:
        return [Member.from_json(m) for m in self.call(endpoint, "/v3/cluster/member/list", {}).get("members", [])]

    def remove(self, endpoint: str, member_id: str) -> None:
        self.call(endpoint, "/v3/cluster/member/remove", {"ID": member_id})

    def add(self, endpoint: str, peer_url: str) -> list[Member]:
        data = self.call(endpoint, "/v3/cluster/member/add", {"peerURLs": [peer_url]})
        return [Member.from_json(m) for m in data.get("members", [])]


def rejoin(gateway: Gateway, formed: Sequence[Member], self_name: str, self_peer_url: str,
           rendered: Mapping[str, Sequence[str]], add_attempts: int = 20, pause: float = 3.0,
           sleep: Callable[[float], None] = time.sleep) -> str:
    """Replace this member's entry by a new one; return the `--initial-cluster` to start with `existing`."""
    endpoints = sorted({u for m in formed if self_peer_url not in m.peer_urls for u in m.client_urls})
    healthy, why = None, []
    for endpoint in endpoints:
        problem = gateway.unhealthy(endpoint)
        if problem is None:
            healthy = endpoint
            break
        why.append(f"{endpoint}: {problem}")
    if healthy is None:
        asked = "; ".join(why) or "no member has a client URL"
        raise NotYet(f"no member serves a linearizable read, so the cluster has no quorum ({asked}); "
                     "not changing membership")
    for m in gateway.members(healthy):
        if self_peer_url in m.peer_urls:
            log(f"removing member {m.id} ({m.name or 'unstarted'}) that holds {self_peer_url}")
            gateway.remove(healthy, m.id)
    last = ""
    for attempt in range(1, add_attempts + 1):
        try:
            members = gateway.add(healthy, self_peer_url)
            log(f"added {self_peer_url} as a new member (attempt {attempt})")
            return rejoin_initial_cluster(members, rendered, self_name, self_peer_url)
        except NotYet as exc:
            # strict-reconfig-check: an add is refused until the voting members have been connected for
            # etcd's HealthInterval (5 s) in the new configuration ("etcdserver: unhealthy cluster").
            last = str(exc)
            sleep(pause)
    raise NotYet(f"member add of {self_peer_url} did not succeed: {last}")


# ------------------------------------------------------------------------------------------ the empty beacon


class _Beacon(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], ctx: ssl.SSLContext, name: str) -> None:
        self.ctx = ctx
        self.member_name = name
        super().__init__(address, _BeaconHandler)

    def get_request(self) -> tuple[Any, Any]:
        sock, addr = self.socket.accept()
        return self.ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr


class _BeaconHandler(http.server.BaseHTTPRequestHandler):
    server: _Beacon

    def setup(self) -> None:
        self.request.settimeout(5)
        self.request.do_handshake()
        super().setup()

    def do_GET(self) -> None:
        body = json.dumps({"name": self.server.member_name, "data": False}).encode()
        # 404 to anything else that dials the peer port (etcd's own bootstrap checks, raft streams)
        self.send_response(404)
        self.send_header(EMPTY_HEADER, "empty")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


def start_beacon(values: Mapping[str, str]) -> _Beacon | None:
    """Answer on this member's peer port, with its peer certificate, until etcd takes the port."""
    listen = urlsplit(values["listen-peer-urls"].split(",")[0])
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=values["peer-trusted-ca-file"])
    ctx.load_cert_chain(values["peer-cert-file"], values["peer-key-file"])
    ctx.verify_mode = ssl.CERT_REQUIRED
    try:
        beacon = _Beacon((listen.hostname or "0.0.0.0", listen.port or 2380), ctx, values["name"])
    except OSError as exc:
        raise PrepareError(f"cannot listen on {values['listen-peer-urls']} ({exc}); is etcd already running?") from None
    threading.Thread(target=beacon.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()
    return beacon


# ------------------------------------------------------------------------------------------ main


def prepare(values: Mapping[str, str], tls: Tls, remind_seconds: float, config_path: str,
            clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> int:
    name = values["name"]
    self_peer_url = values["initial-advertise-peer-urls"].split(",")[0]
    rendered = initial_cluster_map(values["initial-cluster"])
    if self_peer_url not in rendered.get(name, []):
        raise PrepareError(f"{name}={self_peer_url} is not in --initial-cluster")
    data_dir = values["data-dir"]
    if has_wal(data_dir):
        log(f"{name}: the data dir has a WAL; etcd restarts from it (initial-cluster settings are ignored)")
        write_config(config_path, config_document(values, values.get("initial-cluster-state", "new"),
                                                  values["initial-cluster"]))
        return 0
    aside = set_aside_incomplete(data_dir)
    if aside:
        log(f"{name}: {data_dir}/member had no WAL (a start that never completed); moved it to {aside}")
    peers = [(n, urls[0]) for n, urls in sorted(rendered.items()) if n != name]
    beacon = start_beacon(values)
    gateway = Gateway(tls)
    started = clock()
    remind_at = started + remind_seconds
    said = ""
    try:
        while True:
            decision = decide([probe_peer(n, url, tls) for n, url in peers])
            reason = decision.reason
            if decision.action == "new":
                log(f"{name}: {reason}")
                doc = config_document(values, "new", values["initial-cluster"])
                break
            if decision.action == "rejoin":
                try:
                    initial = rejoin(gateway, decision.members, name, self_peer_url, rendered, sleep=sleep)
                    log(f"{name}: {reason}; joined as a new member, starting with state existing")
                    doc = config_document(values, "existing", initial)
                    break
                except NotYet as exc:
                    reason = f"{reason}, but {exc}"
            now = clock()
            if reason != said:
                log(f"{name}: waiting: {reason}")
                said = reason
            elif now >= remind_at:
                log(f"{name}: still waiting after {now - started:.0f}s: {reason} (runbook: {RUNBOOK})")
            if now >= remind_at:
                remind_at = now + remind_seconds
            sleep(2.0)
    finally:
        if beacon is not None:
            beacon.shutdown()
            beacon.server_close()
    write_config(config_path, doc)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" not in argv:
        print("usage: etcd_member_prepare.py --config-file=PATH --client-cert=PATH --client-key=PATH "
              "[--remind-seconds=N] -- <etcd flags>", file=sys.stderr)
        return 2
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="etcd_member_prepare.py")
    parser.add_argument("--config-file", required=True, help="where to write etcd's config file")
    parser.add_argument("--client-cert", required=True, help="SAN-less client certificate of the etcd CA")
    parser.add_argument("--client-key", required=True)
    parser.add_argument("--remind-seconds", type=float, default=300.0,
                        help="how often a member that keeps waiting repeats why")
    opts = parser.parse_args(argv[:split])
    socket.setdefaulttimeout(10)
    try:
        values = parse_flags(argv[split + 1:])
        tls = Tls(peer_ca=values["peer-trusted-ca-file"], client_ca=values["trusted-ca-file"],
                  cert=opts.client_cert, key=opts.client_key)
        return prepare(values, tls, opts.remind_seconds, opts.config_file)
    except PrepareError as exc:
        log(f"refusing: {exc} (runbook: {RUNBOOK})")
        return 1


if __name__ == "__main__":
    sys.exit(main())
