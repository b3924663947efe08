"""A DNS lab with real software, for the traffic tests and the real-fleet drill: Knot primaries and secondaries,
an Unbound resolver, and network namespaces to put them (and anything else) in.

Reusable pieces, each cleaning up after itself:

- `Lab`: network namespaces on one bridge (its own switch namespace), each node with the addresses it is given;
  `exec` / `spawn` run a program in a node, `inside` runs Python code (sockets it creates stay in that namespace:
  servers of the test process can live in a node), `blackhole` / `restore` cut one node's path to an address.
  Requires root (`ip netns`); everything it creates is removed by `close()`.
- `KnotServer`: knotd with a given configuration text, in a node (or the root namespace), optionally after an
  init step (the seed agent, as the DaemonSet runs it); `start`, `kill` (SIGKILL), `stop`, `wait_serving`.
- `UnboundResolver`: a recursive resolver whose stub zone points at the given nameservers (it honours TTLs:
  `cache-min-ttl: 0`, no serve-expired).
- `query`: one DNS query (dnspython) from inside a node, returning rcode, flags and the A records.

Every loop here is bounded; processes are started with their own process group and killed by it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dns.exception
import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(list(argv), capture_output=True, text=True, timeout=30)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {result.stderr.strip() or result.stdout.strip()}")
    return result


def _setns_fd(fd: int, what: str) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns({what}): {os.strerror(err)}")


@dataclass
class Node:
    name: str
    netns: str
    addresses: tuple[str, ...]

    @property
    def address(self) -> str:
        return self.addresses[0]


@dataclass
class Lab:
    """Network namespaces on one bridge. `prefix` keeps names unique per test run (interface names <= 15 chars)."""

    prefix: str = field(default_factory=lambda: "kl" + secrets.token_hex(2))
    nodes: dict[str, Node] = field(default_factory=dict)
    processes: list[subprocess.Popen[Any]] = field(default_factory=list)
    subnets: tuple[str, ...] = ()
    """Every CIDR in use: each node gets an on-link route to each, so nodes of different subnets talk on the one
    bridge without a router."""

    def __post_init__(self) -> None:
        self.switch = f"{self.prefix}-sw"
        _run("ip", "netns", "add", self.switch)
        self._ns_exec(self.switch, "ip", "link", "add", "br0", "type", "bridge")
        self._ns_exec(self.switch, "ip", "link", "set", "br0", "up")
        self._ns_exec(self.switch, "ip", "link", "set", "lo", "up")

    def _ns_exec(self, netns: str, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return _run("ip", "netns", "exec", netns, *argv, check=check)

    def add_node(self, name: str, addresses: Sequence[str]) -> Node:
        """A namespace with `addresses` (CIDR notation, e.g. `10.0.77.11/24`) on its one interface `eth0`."""
        index = len(self.nodes)
        netns = f"{self.prefix}-{name}"
        host_if, peer_if = f"{self.prefix}h{index}", f"{self.prefix}p{index}"
        _run("ip", "netns", "add", netns)
        _run("ip", "link", "add", host_if, "netns", self.switch, "type", "veth", "peer", "name", peer_if, "netns",
             netns)
        self._ns_exec(self.switch, "ip", "link", "set", host_if, "master", "br0")
        self._ns_exec(self.switch, "ip", "link", "set", host_if, "up")
        self._ns_exec(netns, "ip", "link", "set", peer_if, "name", "eth0")
        for address in addresses:
            self._ns_exec(netns, "ip", "addr", "add", address, "dev", "eth0")
        self._ns_exec(netns, "ip", "link", "set", "eth0", "up")
        self._ns_exec(netns, "ip", "link", "set", "lo", "up")
        node = Node(name, netns, tuple(a.split("/")[0] for a in addresses))
        self.nodes[name] = node
        subnets = {str(_network(a)) for a in addresses}
        for other in self.nodes.values():
            for subnet in sorted(set(self.subnets) | subnets):
                self._ns_exec(other.netns, "ip", "route", "replace", subnet, "dev", "eth0", check=False)
        self.subnets = tuple(sorted(set(self.subnets) | subnets))
        return node

    def exec(self, node: str, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self._ns_exec(self.nodes[node].netns, *argv, check=check)

    def spawn(self, node: str | None, argv: Sequence[str], *, log: Path, env: dict[str, str] | None = None,
              cwd: Path | None = None) -> subprocess.Popen[Any]:
        """A long-running program in `node` (None: the root namespace), output to `log`; killed by `close()`."""
        prefix = ["ip", "netns", "exec", self.nodes[node].netns] if node is not None else []
        handle = log.open("ab")
        proc = subprocess.Popen([*prefix, *argv], stdout=handle, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                start_new_session=True)
        handle.close()
        self.processes.append(proc)
        return proc

    @contextlib.contextmanager
    def inside(self, node: str) -> Iterator[None]:
        """Run the block in `node`'s network namespace (this thread only); sockets it opens stay there."""
        here = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        target = os.open(f"/var/run/netns/{self.nodes[node].netns}", os.O_RDONLY)
        try:
            _setns_fd(target, node)
            try:
                yield
            finally:
                _setns_fd(here, "the test's own namespace")
        finally:
            os.close(target)
            os.close(here)

    def blackhole(self, node: str, address: str) -> None:
        """`node` no longer reaches `address` (packets dropped silently, as on a dead path)."""
        self.exec(node, "ip", "route", "replace", "blackhole", f"{address}/32")

    def restore(self, node: str, address: str) -> None:
        self.exec(node, "ip", "route", "del", "blackhole", f"{address}/32", check=False)

    def close(self) -> None:
        for proc in self.processes:
            stop_process(proc)
        for node in self.nodes.values():
            _run("ip", "netns", "del", node.netns, check=False)
        _run("ip", "netns", "del", self.switch, check=False)


def _network(cidr: str) -> Any:
    import ipaddress

    return ipaddress.ip_interface(cidr).network


def stop_process(proc: subprocess.Popen[Any], sig: int = signal.SIGTERM, timeout: float = 5.0) -> None:
    """Stop a process started with its own session (and its children), SIGKILL if it does not go in time."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=timeout)


# ------------------------------------------------------------------------------------------- queries


@dataclass(frozen=True)
class Answer:
    rcode: str
    authoritative: bool
    addresses: tuple[str, ...]
    ttl: int | None
    truncated: bool = False


def query(lab: Lab | None, node: str | None, server: str, name: str, rtype: str = "A", *, port: int = 53,
          recursion: bool = False, tcp: bool = False, timeout: float = 2.0) -> Answer | None:
    """One query from inside `node` (None: here); None when nothing answered in time."""
    q = dns.message.make_query(name, rtype)
    if not recursion:
        q.flags &= ~dns.flags.RD

    def ask() -> dns.message.Message:
        if tcp:
            return dns.query.tcp(q, server, port=port, timeout=timeout)
        return dns.query.udp(q, server, port=port, timeout=timeout, ignore_unexpected=True)

    try:
        with lab.inside(node) if (lab is not None and node is not None) else contextlib.nullcontext():
            r = ask()
    except (dns.exception.Timeout, OSError):
        return None
    addresses = tuple(sorted(rr.to_text() for rrset in r.answer if rrset.rdtype == dns.rdatatype.A for rr in rrset))
    ttls = [rrset.ttl for rrset in r.answer]
    return Answer(dns.rcode.to_text(r.rcode()), bool(r.flags & dns.flags.AA), addresses, min(ttls) if ttls else None,
                  bool(r.flags & dns.flags.TC))


def soa_serial(lab: Lab | None, node: str | None, server: str, zone: str, port: int = 53) -> int | None:
    q = dns.message.make_query(zone, "SOA")
    q.flags &= ~dns.flags.RD
    try:
        with lab.inside(node) if (lab is not None and node is not None) else contextlib.nullcontext():
            r = dns.query.udp(q, server, port=port, timeout=2)
    except (dns.exception.Timeout, OSError):
        return None
    for rrset in r.answer:
        if rrset.rdtype == dns.rdatatype.SOA:
            return int(rrset[0].serial)
    return None


def wait_until(predicate: Callable[[], Any], timeout: float, interval: float = 0.1) -> Any:
    """Poll until `predicate()` is truthy or `timeout` passes; the last value (bounded loop)."""
    deadline = time.monotonic() + timeout
    value = predicate()
    while not value and time.monotonic() < deadline:
        time.sleep(interval)
        value = predicate()
    return value


# --------------------------------------------------------------------------------------------- Knot


@dataclass
class KnotServer:
    """knotd with `config` (text, as rendered), in `node` of `lab` (None: the root namespace)."""

    lab: Lab
    node: str | None
    workdir: Path
    config: str
    address: str
    port: int = 53
    init: Sequence[str] | None = None
    """An init step (the seed agent's command line) run to completion before every start."""
    proc: subprocess.Popen[Any] | None = None

    def __post_init__(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.conf = self.workdir / "knot.conf"
        self.log = self.workdir / "knotd.log"

    def start(self) -> None:
        if self.init is not None:
            prefix = ["ip", "netns", "exec", self.lab.nodes[self.node].netns] if self.node is not None else []
            result = subprocess.run([*prefix, *self.init], capture_output=True, text=True, timeout=60)
            (self.workdir / "init.log").open("a").write(result.stdout + result.stderr)
            if result.returncode != 0:
                raise RuntimeError(f"init step failed ({result.returncode}): {result.stderr[-2000:]}")
        else:
            self.conf.write_text(self.config)
        conf = self.rendered_conf()
        self.proc = self.lab.spawn(self.node, [shutil.which("knotd") or "knotd", "-c", str(conf)], log=self.log)

    def rendered_conf(self) -> Path:
        """The configuration knotd runs (the init step writes its own; see `init`)."""
        return self.conf

    def kill(self) -> None:
        if self.proc is not None:
            stop_process(self.proc, signal.SIGKILL)
            self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
            self.proc = None

    def serial(self, zone: str) -> int | None:
        return soa_serial(self.lab, self.node, self.address, zone, self.port)

    def wait_serving(self, zone: str, timeout: float = 15.0) -> int:
        serial = wait_until(lambda: self.serial(zone), timeout)
        if not serial:
            raise RuntimeError(f"knotd at {self.address}:{self.port} does not serve {zone}: "
                               f"{self.log.read_text()[-2000:] if self.log.exists() else ''}")
        return int(serial)


# ------------------------------------------------------------------------------------------ Unbound


@dataclass
class UnboundResolver:
    """A recursive resolver for `zone` (a stub zone: it asks `nameservers` (`ip` or `ip@port`) and caches every
    answer exactly for its TTL)."""

    lab: Lab
    node: str | None
    workdir: Path
    address: str
    zone: str
    nameservers: Sequence[str]
    port: int = 53
    proc: subprocess.Popen[Any] | None = None

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        conf = self.workdir / "unbound.conf"
        conf.write_text("\n".join([
            "server:",
            f"  interface: {self.address}@{self.port}",
            "  access-control: 0.0.0.0/0 allow",
            "  do-not-query-localhost: no",
            '  username: ""',
            '  chroot: ""',
            f'  directory: "{self.workdir}"',
            f'  pidfile: "{self.workdir}/unbound.pid"',
            '  logfile: ""',
            "  use-syslog: no",
            "  verbosity: 1",
            '  module-config: "iterator"',
            "  cache-min-ttl: 0",
            "  serve-expired: no",
            "  prefetch: no",
            "  qname-minimisation: no",
            "  do-ip6: no",
            "stub-zone:",
            f'  name: "{self.zone}"',
            *[f"  stub-addr: {ns}" for ns in self.nameservers],
            "",
        ]))
        self.proc = self.lab.spawn(self.node, [shutil.which("unbound") or "unbound", "-d", "-c", str(conf)],
                                   log=self.workdir / "unbound.log")
        if not wait_until(lambda: query(self.lab, self.node, self.address, self.zone, "SOA", port=self.port,
                                        recursion=True) is not None, 10):
            raise RuntimeError(f"unbound does not answer: {(self.workdir / 'unbound.log').read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
            self.proc = None


# ------------------------------------------------------------------------------------------- regions


class RegionServer:
    """One region's "load balancer" for the probes: HTTP on (`address`, `port`) inside a lab node, 200 for the
    hosts it serves and 404 otherwise. `kill()` closes it (connections refused), `revive()` brings it back."""

    def __init__(self, lab: Lab, node: str, address: str, hosts: Sequence[str], port: int = 80) -> None:
        self.lab, self.node, self.address, self.port = lab, node, address, port
        self.hosts = set(hosts)
        self.httpd: Any = None
        self.thread: Any = None
        self.revive()

    def revive(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        if self.httpd is not None:
            return
        region = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_GET(self) -> None:
                ok = (self.headers.get("Host") or "").split(":")[0] in region.hosts
                body = b"ok\n" if ok else b"default backend - 404\n"
                self.send_response(200 if ok else 404)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        with self.lab.inside(self.node):
            self.httpd = ThreadingHTTPServer((self.address, self.port), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def kill(self) -> None:
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.thread.join(timeout=5)
            self.httpd = None


# -------------------------------------------------------------------------------------- nameservers


@dataclass
class Nameservers:
    """Primaries (each in its node, started by an init step such as the seed agent) and an optional secondary:
    what `start_nameservers` returns. `addresses` maps every server's name to its address."""

    primaries: dict[str, KnotServer]
    secondaries: dict[str, KnotServer]

    @property
    def all(self) -> dict[str, KnotServer]:
        return {**self.primaries, **self.secondaries}

    def serials(self, zone: str) -> dict[str, int | None]:
        return {name: server.serial(zone) for name, server in self.all.items()}

    def answers(self, name: str) -> dict[str, Answer | None]:
        return {n: query(s.lab, s.node, s.address, name, port=s.port) for n, s in self.all.items()}

    def close(self) -> None:
        for server in self.all.values():
            server.stop()


def lab_root(prefix: str = "karmada-dnslab-") -> Path:
    """A working directory knotd can still reach after it dropped to its own user (pytest's tmp_path is 0700)."""
    import tempfile

    root = Path(tempfile.mkdtemp(prefix=prefix))
    root.chmod(0o755)
    return root


def chown_tree(path: Path, user: str) -> None:
    import grp
    import pwd

    uid, gid = pwd.getpwnam(user).pw_uid, grp.getgrnam(user).gr_gid
    for directory, dirs, files in os.walk(path):
        os.chown(directory, uid, gid)
        for name in (*dirs, *files):
            os.chown(os.path.join(directory, name), uid, gid)


def start_nameservers(lab: Lab, zone: str, primaries: dict[str, tuple[str | None, str, Sequence[str], str]],
                      secondaries: dict[str, tuple[str | None, str, str]], workdir: Path) -> Nameservers:
    """Start `primaries` (name -> (node, address, init command, config text or "" when the init step writes it))
    and then `secondaries` (name -> (node, address, config text)), and wait until each serves `zone`.
    `workdir/<name>` holds each server's files; the caller renders the configurations (the program's
    `nameserver_docs.knot_conf` / `secondary_knot_conf` with the lab's paths and addresses)."""
    servers = Nameservers({}, {})
    try:
        for name, (node, address, init, config) in primaries.items():
            server = KnotServer(lab, node, workdir / name, config, address, init=list(init) or None)
            if init:
                server.conf = workdir / name / "run" / "knot.conf"
            servers.primaries[name] = server
            server.start()
        for server in servers.primaries.values():
            server.wait_serving(zone)
        for name, (node, address, config) in secondaries.items():
            server = KnotServer(lab, node, workdir / name, config, address)
            servers.secondaries[name] = server
            server.start()
        for server in servers.secondaries.values():
            server.wait_serving(zone)
    except BaseException:
        servers.close()
        raise
    return servers
