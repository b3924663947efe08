"""Pod networking for the process kubelet: one bridge, a network namespace per pod, Service ClusterIPs.

Every pod (and every stand-in cluster's control plane) gets a network namespace with one veth on a private bridge
and its own address in a free /20 of 10.216.0.0/13, so the rendered `$(POD_IP)` binds and `0.0.0.0` listeners work
unchanged. Names are files, as kubelet's cluster DNS would answer them: `/etc/netns/<ns>/hosts`, which
`ip netns exec` bind-mounts over `/etc/hosts` for that namespace only. A Service's ClusterIP (allocated by the
stand-in API server the Service was applied to) is added to the bridge in the root namespace, where a small TCP
proxy forwards each of its ports to the target port of a ready endpoint, like kube-proxy's userspace mode; pods reach
it through their default route. `blackhole()` drops everything a namespace sends or receives but loopback (a member
whose network died: peers see timeouts, not refusals).

Everything made is recorded in a ledger file under /run before it is made, so `reap_stale()` can remove what a run
that was killed (SIGKILL, a crashed interpreter) left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LEDGER_DIR = Path("/run/karmada-hub-kubelet")
NO_DNS = "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n"
POOL = ipaddress.ip_network("10.216.0.0/13")


class NetworkError(RuntimeError):
    pass


def run(*cmd: str, check: bool = True, timeout: float = 20.0) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout)
    if check and res.returncode != 0:
        raise NetworkError(f"{' '.join(cmd)} failed: {res.stderr.strip() or res.stdout.strip()}")
    return res


def unavailable_reason() -> str | None:
    """Why pods cannot get network namespaces here (None when they can)."""
    if os.geteuid() != 0:
        return "network namespaces and bind mounts need root"
    for tool in ("ip", "iptables", "mount"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed (Debian: iproute2, iptables, mount)"
    probe = f"khprobe{secrets.token_hex(3)}"
    res = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True, timeout=10)
    if res.returncode != 0:
        return f"`ip netns add` failed: {res.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=10)
    return None


# ----------------------------------------------------------------------------------------------- ledger


class Ledger:
    """What one run created, on disk before it is created: {kind: [names]} plus the owner's pid."""

    def __init__(self, tag: str) -> None:
        LEDGER_DIR.mkdir(mode=0o700, exist_ok=True)
        self.path = LEDGER_DIR / f"{tag}.json"
        self.items: dict[str, list[str]] = {"netns": [], "links": [], "vips": [], "routes": [], "dirs": [],
                                            "pgids": []}
        self._lock = threading.Lock()
        self._save()

    def add(self, kind: str, name: str) -> None:
        with self._lock:
            if name not in self.items[kind]:
                self.items[kind].append(name)
                self._save()

    def remove(self, kind: str, name: str) -> None:
        with self._lock:
            if name in self.items[kind]:
                self.items[kind].remove(name)
                self._save()

    def _save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"owner": os.getpid(), **self.items}))
        tmp.replace(self.path)

    def close(self) -> None:
        self.path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def undo(items: dict[str, Any]) -> None:
    """Remove what a ledger lists: process groups, namespaces (and their /etc/netns), links, addresses, dirs."""
    import signal

    for pgid in items.get("pgids", []):
        with contextlib.suppress(ProcessLookupError, PermissionError, ValueError):
            os.killpg(int(pgid), signal.SIGKILL)
    for link in items.get("links", []):
        run("ip", "link", "del", link, check=False)
    for ns in items.get("netns", []):
        run("ip", "netns", "del", ns, check=False)
        shutil.rmtree(f"/etc/netns/{ns}", ignore_errors=True)
    for vip in items.get("vips", []):
        dev, _, addr = vip.partition(" ")
        run("ip", "addr", "del", f"{addr}/32", "dev", dev, check=False)
    for route in items.get("routes", []):
        dev, _, addr = route.partition(" ")
        run("ip", "route", "del", f"{addr}/32", "dev", dev, check=False)
    for directory in sorted(items.get("dirs", []), key=len, reverse=True):
        path = Path(directory)
        if path.is_dir() and not os.path.ismount(path):
            shutil.rmtree(path, ignore_errors=True) if path.is_relative_to("/tmp") else _rmdir_empty(path)


def _rmdir_empty(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.rmdir()


def reap_stale() -> list[str]:
    """Undo every ledger whose owner is gone (a run killed before its cleanup); returns their names."""
    reaped = []
    if not LEDGER_DIR.is_dir():
        return reaped
    for ledger in LEDGER_DIR.glob("*.json"):
        try:
            items = json.loads(ledger.read_text())
        except (OSError, ValueError):
            continue
        if _alive(int(items.get("owner", 0))):
            continue
        undo(items)
        ledger.unlink(missing_ok=True)
        reaped.append(ledger.stem)
    return reaped


# ---------------------------------------------------------------------------------------------- network


@dataclass
class Netns:
    name: str
    ip: str
    veth: str
    label: str


def _used_networks() -> list[ipaddress.IPv4Network]:
    used = []
    text = run("ip", "-4", "-o", "addr").stdout + run("ip", "-4", "route").stdout
    for token in re.findall(r"\b\d+\.\d+\.\d+\.\d+(?:/\d+)?\b", text):
        used.append(ipaddress.ip_network(token, strict=False))
    return used


def free_subnet(prefix: int = 20, pool: ipaddress.IPv4Network = POOL) -> ipaddress.IPv4Network:
    used = _used_networks()
    candidates = list(pool.subnets(new_prefix=prefix))
    start = secrets.randbelow(len(candidates))
    for k in range(len(candidates)):
        net = candidates[(start + k) % len(candidates)]
        if not any(net.overlaps(u) for u in used):
            return net
    raise NetworkError(f"no free /{prefix} in {pool}")


@dataclass
class Network:
    """One bridge and the namespaces on it. Use as a context manager; `close()` is idempotent."""

    tag: str = field(default_factory=lambda: secrets.token_hex(3))
    namespaces: dict[str, Netns] = field(default_factory=dict)
    pool: str = str(POOL)
    """Where the pods' addresses come from: a cluster's own pod CIDR (k3s's 10.42.0.0/16) when what is rendered
    names it (an ACL, a NetworkPolicy)."""

    def __post_init__(self) -> None:
        self.bridge = f"khb{self.tag}"
        self.ledger = Ledger(self.tag)
        self.subnet = free_subnet(pool=ipaddress.ip_network(self.pool))
        self.host_addresses: dict[str, str] = {}
        """Extra addresses (a server's public and private address) -> the namespace that holds them."""
        hosts = self.subnet.hosts()
        self.gateway = str(next(hosts))
        self._free = (str(a) for a in hosts)
        self._count = 0
        self.vips: set[str] = set()
        self.proxy = ServiceProxy()
        self._started = False

    def __enter__(self) -> Network:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        self.ledger.add("links", self.bridge)
        run("ip", "link", "add", self.bridge, "type", "bridge")
        run("ip", "addr", "add", f"{self.gateway}/{self.subnet.prefixlen}", "dev", self.bridge)
        run("ip", "link", "set", self.bridge, "up")
        self.proxy.start()
        self._started = True

    def add_namespace(self, label: str) -> Netns:
        """A namespace with its own address, loopback up and a default route through the bridge."""
        self._count += 1
        name, veth = f"kh-{self.tag}-{self._count}", f"khv{self.tag}{self._count}"
        ip = next(self._free)
        self.ledger.add("netns", name)
        run("ip", "netns", "add", name)
        self.ledger.add("links", veth)
        run("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", name)
        run("ip", "link", "set", veth, "master", self.bridge, "up")
        run("ip", "-n", name, "link", "set", "lo", "up")
        run("ip", "-n", name, "addr", "add", f"{ip}/{self.subnet.prefixlen}", "dev", "eth0")
        run("ip", "-n", name, "link", "set", "eth0", "up")
        run("ip", "-n", name, "route", "add", "default", "via", self.gateway)
        for address in self.host_addresses:
            run("ip", "-n", name, "route", "replace", f"{address}/32", "dev", "eth0")
        ns = Netns(name, ip, veth, label)
        self.namespaces[name] = ns
        # no cluster DNS server here: every name a pod needs is in its hosts file, and a lookup of any other name
        # must fail at once (nothing answers on the namespace's own loopback), not wait on the host's resolver
        self.write_files(name, hosts="127.0.0.1 localhost\n", resolv=NO_DNS)
        return ns

    def remove_namespace(self, name: str) -> None:
        ns = self.namespaces.pop(name, None)
        if ns is None:
            return
        run("ip", "link", "del", ns.veth, check=False)
        run("ip", "netns", "del", name, check=False)
        shutil.rmtree(f"/etc/netns/{name}", ignore_errors=True)
        self.ledger.remove("links", ns.veth)
        self.ledger.remove("netns", name)

    def write_files(self, name: str, *, hosts: str | None = None, resolv: str | None = None) -> None:
        """`/etc/hosts` (and `/etc/resolv.conf`) as processes in namespace `name` see them."""
        etc = Path("/etc/netns") / name
        etc.mkdir(parents=True, exist_ok=True)
        if hosts is not None:
            (etc / "hosts").write_text(hosts)
        if resolv is not None:
            (etc / "resolv.conf").write_text(resolv)

    def add_address(self, name: str, ip: str) -> None:
        """Give namespace `name` one more address (a server's public or private one): on its eth0, and reached
        on-link over the bridge from every other namespace and from the root namespace."""
        if ip in self.host_addresses:
            raise NetworkError(f"{ip} is already an address of {self.host_addresses[ip]}")
        self._refuse_taken(ip)
        run("ip", "-n", name, "addr", "add", f"{ip}/32", "dev", "eth0")
        self.host_addresses[ip] = name
        for other in self.namespaces:
            if other != name:
                run("ip", "-n", other, "route", "replace", f"{ip}/32", "dev", "eth0")
        self.ledger.add("routes", f"{self.bridge} {ip}")
        run("ip", "route", "replace", f"{ip}/32", "dev", self.bridge)

    def _refuse_taken(self, ip: str) -> None:
        taken = run("ip", "-4", "-o", "addr").stdout + run("ip", "-4", "route").stdout
        if re.search(rf"(?<![\d.]){re.escape(ip)}(?![\d])", taken):
            raise NetworkError(f"{ip} is already an address or gateway of this machine: not taking it")

    def add_vip(self, ip: str) -> None:
        """A Service ClusterIP, local to the root namespace (where the proxy listens)."""
        if ip in self.vips:
            return
        self._refuse_taken(ip)
        self.ledger.add("vips", f"{self.bridge} {ip}")
        run("ip", "addr", "add", f"{ip}/32", "dev", self.bridge)
        self.vips.add(ip)

    def blackhole(self, name: str) -> None:
        """Drop every packet namespace `name` sends or receives, but loopback."""
        for chain in ("INPUT", "OUTPUT"):
            flag = "-i" if chain == "INPUT" else "-o"
            run("ip", "netns", "exec", name, "iptables", "-w", "-I", chain, "1", "!", flag, "lo", "-j", "DROP",
                "-m", "comment", "--comment", "karmada-hub-blackhole")

    def heal(self, name: str) -> None:
        for chain in ("INPUT", "OUTPUT"):
            flag = "-i" if chain == "INPUT" else "-o"
            while run("ip", "netns", "exec", name, "iptables", "-w", "-D", chain, "!", flag, "lo", "-j", "DROP",
                      "-m", "comment", "--comment", "karmada-hub-blackhole", check=False).returncode == 0:
                pass

    def exec_argv(self, name: str, argv: Iterable[str]) -> list[str]:
        return ["ip", "netns", "exec", name, *argv]

    def close(self) -> None:
        self.proxy.close()
        for name in list(self.namespaces):
            self.remove_namespace(name)
        for ip in list(self.vips):
            run("ip", "addr", "del", f"{ip}/32", "dev", self.bridge, check=False)
            self.ledger.remove("vips", f"{self.bridge} {ip}")
        self.vips.clear()
        for ip in list(self.host_addresses):
            run("ip", "route", "del", f"{ip}/32", "dev", self.bridge, check=False)
            self.ledger.remove("routes", f"{self.bridge} {ip}")
        self.host_addresses.clear()
        if self._started:
            run("ip", "link", "del", self.bridge, check=False)
            self._started = False
        self.ledger.remove("links", self.bridge)
        self.ledger.close()


# ---------------------------------------------------------------------------------------------- proxy


Backends = Callable[[], list[tuple[str, int]]]


class ServiceProxy:
    """TCP forwarding from ClusterIP:port to a ready endpoint, on one asyncio loop in a daemon thread."""

    def __init__(self, connect_timeout: float = 3.0) -> None:
        self.connect_timeout = connect_timeout
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="service-proxy", daemon=True)
        self._servers: dict[tuple[str, int], asyncio.base_events.Server] = {}
        self._next: dict[tuple[str, int], int] = {}

    def start(self) -> None:
        self._thread.start()

    def listen(self, ip: str, port: int, backends: Backends, netns: str | None = None) -> None:
        """Forward `ip:port` to one of `backends()` (read at each connection), trying the next on failure. With
        `netns`, the listening socket lives in that namespace (a node port on a server's own address)."""
        key = (ip, port)
        if key in self._servers:
            return
        sock = listening_socket(ip, port, netns) if netns else None

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            targets = backends()
            start = self._next.get(key, 0)
            self._next[key] = start + 1
            for k in range(len(targets)):
                host, target_port = targets[(start + k) % len(targets)]
                try:
                    up_reader, up_writer = await asyncio.wait_for(
                        asyncio.open_connection(host, target_port), self.connect_timeout)
                except (OSError, TimeoutError):
                    continue
                await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
                return
            writer.close()

        async def serve() -> asyncio.base_events.Server:
            if sock is not None:
                return await asyncio.start_server(handle, sock=sock)
            return await asyncio.start_server(handle, ip, port, reuse_address=True)

        self._servers[key] = asyncio.run_coroutine_threadsafe(serve(), self._loop).result(10)

    def close(self) -> None:
        if not self._thread.is_alive():
            return

        async def shutdown() -> None:
            for server in self._servers.values():
                server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._servers.clear()


def listening_socket(ip: str, port: int, netns: str) -> socket.socket:
    """A TCP socket listening on `ip:port` inside namespace `netns`: made by a thread that enters the namespace
    (setns affects only the calling thread), which keeps its namespace for life."""
    import ctypes

    made: list[socket.socket | BaseException] = []

    def make() -> None:
        try:
            fd = os.open(f"/var/run/netns/{netns}", os.O_RDONLY)
            try:
                if ctypes.CDLL(None, use_errno=True).setns(fd, 0x40000000) != 0:
                    raise OSError(ctypes.get_errno(), f"setns({netns})")
            finally:
                os.close(fd)
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((ip, port))
            sock.listen(128)
            sock.setblocking(False)
            made.append(sock)
        except BaseException as exc:  # handed to the caller's thread
            made.append(exc)

    thread = threading.Thread(target=make, name=f"listen {netns}")
    thread.start()
    thread.join(10)
    if not made or isinstance(made[0], BaseException):
        raise NetworkError(f"listening on {ip}:{port} in {netns}: {made[0] if made else 'timed out'}")
    return made[0]


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (OSError, asyncio.CancelledError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()
