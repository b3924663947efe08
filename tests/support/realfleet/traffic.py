"""The traffic path of the local real fleet: each region's load balancer, a recursive resolver, a client's namespace.

- `RegionalLB`: the region's Hetzner load balancer stood in by a listener on its address (`fleet-<region>`'s IPv4
  of the plan) inside the region's member namespace, in front of what ingress-nginx would do on the member: a
  request for host H is answered 200 when the member has an Ingress for H whose Service has a ready endpoint, 503
  when it has none. Its targets are health-checked like the Hetzner LB's (`regions.<r>.healthCheck`: every
  `interval` s, `timeout` s each, unhealthy after `retries` failures in a row, healthy again on the first success):
  a member whose API does not answer has no healthy target, and the LB answers 503; until the checks notice, each
  request is still forwarded to the target, and fails with 502 (as a proxy's does) once the member is dead (its
  address refuses or does not answer), from the first request after the kill. Black-holing the member's
  namespace black-holes the LB's address with it (clients time out), as the issue's drill asks.
- `Resolver`: Unbound (tests/support/dnslab.py) in its own namespace, its stub zone the fleet's subzone at the hub
  servers' public addresses (the delegation's glue), honouring TTLs.
- the client's namespace: the names an operator's machine resolves, and the resolver as its nameserver.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.support.dnslab import UnboundResolver, _setns_fd
from tests.support.kubelet.api import Api, ApiError
from tests.support.kubelet.network import Netns, Network


@dataclass
class HealthCheck:
    interval: float = 5.0
    timeout: float = 3.0
    retries: int = 2


@dataclass
class RegionalLB:
    region: str
    address: str
    member_api: Api
    network: Network
    netns: Netns
    check: HealthCheck = field(default_factory=HealthCheck)
    port: int = 80
    healthy: bool = False
    failures: int = 0
    routes: dict[str, bool] = field(default_factory=dict)
    """host -> has a ready endpoint, as of the last successful check."""

    def start(self) -> None:
        self.network.add_address(self.netns.name, self.address)
        self._stop = threading.Event()
        self._checker = threading.Thread(target=self._check_loop, daemon=True, name=f"lb {self.region}")
        self._checker.start()
        lb = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                code = lb.answer((self.headers.get("Host") or "").split(":")[0])
                body = {200: b"ok\n", 502: b"bad gateway\n"}.get(code, b"no healthy target\n")
                self.send_response(code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer((self.address, self.port), Handler, bind_and_activate=False)
        self.server.socket.close()
        self.server.socket = _socket_in(self.netns.name, self.address, self.port)
        self.server.daemon_threads = True
        self._serving = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.2},
                                         daemon=True, name=f"lb {self.region} serve")
        self._serving.start()

    def answer(self, host: str) -> int:
        """As the Hetzner LB answers an HTTP request: 503 when no target is healthy, else the request goes to the
        target: 502 when the target is dead (the member's address refuses or stays silent for a second), else what
        ingress-nginx would answer from its last view of the member (200 with a ready endpoint, 503 without)."""
        if not self.healthy:
            return 503
        if not self._target_alive():
            return 502
        return 200 if self.routes.get(host, False) else 503

    def _target_alive(self, timeout: float = 1.0) -> bool:
        """A TCP connection to the member's API address: the stand-in for reaching ingress-nginx on its nodes."""
        url = urlsplit(self.member_api.server)
        host = url.hostname or ""
        try:
            with socket.create_connection((self.member_api.pins.get(host, host), url.port or 443), timeout=timeout):
                return True
        except OSError:
            return False

    def _check_loop(self) -> None:
        while not self._stop.wait(0 if not self.routes and not self.failures else self.check.interval):
            try:
                self.routes = self._routes()
                self.healthy, self.failures = True, 0
            except (ApiError, OSError, ValueError, KeyError):
                self.failures += 1
                if self.failures >= self.check.retries:
                    self.healthy = False

    def _routes(self, timeout: float | None = None) -> dict[str, bool]:
        """What ingress-nginx on the member would route: each Ingress host -> its backend has a ready endpoint."""
        api = Api(self.member_api.server, self.member_api.ca_pem, self.member_api.cert_pem, self.member_api.key_pem,
                  self.member_api.token, timeout=timeout or self.check.timeout, pins=dict(self.member_api.pins))
        ready_services = set()
        for slice_ in api.list("discovery.k8s.io/v1", "EndpointSlice"):
            service = (slice_["metadata"].get("labels") or {}).get("kubernetes.io/service-name")
            if service and any((e.get("conditions") or {}).get("ready") for e in slice_.get("endpoints") or []):
                ready_services.add((slice_["metadata"]["namespace"], service))
        routes: dict[str, bool] = {}
        for ingress in api.list("networking.k8s.io/v1", "Ingress"):
            namespace = ingress["metadata"]["namespace"]
            for rule in ingress["spec"].get("rules") or []:
                backends = [p["backend"]["service"]["name"] for p in (rule.get("http") or {}).get("paths") or []
                            if "service" in p.get("backend", {})]
                routes[rule.get("host", "")] = any((namespace, b) in ready_services for b in backends)
        return routes

    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(Exception):
            self.server.shutdown()
            self.server.server_close()


def _socket_in(netns: str, ip: str, port: int) -> Any:
    """A blocking listening TCP socket on ip:port inside `netns`."""
    from tests.support.kubelet.network import listening_socket

    sock = listening_socket(ip, port, netns)
    sock.setblocking(True)
    return sock


class _NetnsLab:
    """Just what dnslab's UnboundResolver uses of a Lab, over the real fleet's network namespaces."""

    @dataclass
    class _Node:
        netns: str

    def __init__(self, network: Network) -> None:
        self.network = network
        self.nodes: dict[str, _NetnsLab._Node] = {}
        self.processes: list[Any] = []

    def add(self, name: str, netns: Netns) -> None:
        self.nodes[name] = self._Node(netns.name)

    def spawn(self, node: str | None, argv: Sequence[str], *, log: Path, env: dict[str, str] | None = None,
              cwd: Path | None = None) -> Any:
        import subprocess

        prefix = ["ip", "netns", "exec", self.nodes[node].netns] if node is not None else []
        with log.open("ab") as out:
            proc = subprocess.Popen([*prefix, *argv], stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                    start_new_session=True)
        self.network.ledger.add("pgids", str(proc.pid))
        self.processes.append(proc)
        return proc

    @contextlib.contextmanager
    def inside(self, node: str) -> Iterator[None]:
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


@dataclass
class Resolver:
    """Unbound in its own namespace, asking the hub's nameservers for the fleet's subzone."""

    network: Network
    workdir: Path
    zone: str
    nameservers: Sequence[str]
    netns: Netns | None = None
    unbound: UnboundResolver | None = None

    def start(self) -> str:
        self.netns = self.network.add_namespace("resolver")
        lab = _NetnsLab(self.network)
        lab.add("resolver", self.netns)
        self.unbound = UnboundResolver(lab, "resolver", self.workdir / "unbound", self.netns.ip,  # type: ignore[arg-type]
                                       self.zone, list(self.nameservers))
        deadline = time.monotonic() + 120
        while True:  # the zone's servers may still be seeding
            try:
                self.unbound.start()
                return self.netns.ip
            except RuntimeError:
                if self.unbound.proc is not None:
                    self.unbound.stop()
                if time.monotonic() > deadline:
                    raise
                time.sleep(2)

    def stop(self) -> None:
        if self.unbound is not None:
            self.unbound.stop()
