"""Real network pieces on loopback for the traffic tests: region endpoints, an authoritative DNS server, a caching
resolver, and throwaway TLS material.

- `RegionEndpoint`: an HTTP server on its own loopback address (random `127.x.y.z`, one shared random port for
  every region, as every regional LB listens on the same ports) that answers 200 for the hosts it serves, 404
  otherwise; `kill()` makes it refuse connections (or, with `mode="hang"`, accept and never answer) and
  `revive()` brings it back on the same address.
- `AuthoritativeDns`: a real DNS server (dnspython messages, stdlib `socketserver`, UDP) answering A queries with
  the AA flag from a zone the test updates on cue.
- `CachingResolver`: a recursive resolver in front of it that caches answers for their TTL times `ttl_scale`, so
  the "recursive answer after the TTL" phase is real, only shorter.

Everything binds to loopback with port 0 or a random port, stops on `close()`, and its loops end by themselves.
"""

from __future__ import annotations

import random
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import dns.rrset

from tests.support.httpfake import Handler, LoopbackServer


def random_loopback(count: int) -> list[str]:
    """`count` distinct random addresses in 127.0.0.0/8 (Linux routes the whole /8 to lo)."""
    seen: set[str] = set()
    while len(seen) < count:
        seen.add(f"127.{random.randint(1, 254)}.{random.randint(1, 254)}.{random.randint(2, 254)}")
    return sorted(seen)


def free_port(addresses: Iterable[str]) -> int:
    """A port free on every given address (tried a few times; bound briefly, then released)."""
    addrs = list(addresses)
    for _ in range(50):
        port = random.randint(20000, 60000)
        socks = []
        try:
            for a in addrs:
                s = socket.socket()
                s.bind((a, port))
                socks.append(s)
            return port
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free port")


# ------------------------------------------------------------------------------------------ regions


class RegionEndpoint:
    """One region's "load balancer": HTTP on (address, port), Host-routed like an ingress controller."""

    def __init__(self, region: str, address: str, port: int, hosts: Iterable[str] = ()) -> None:
        self.region, self.address, self.port = region, address, port
        self.hosts: set[str] = set(hosts)
        self.hits = 0
        self.mode = "alive"
        self._httpd: LoopbackServer | None = None
        self._hang: socket.socket | None = None
        self._start()

    def _start(self) -> None:
        endpoint = self

        class RegionHandler(Handler):
            protocol_version = "HTTP/1.0"  # one probe, one connection: a killed region is seen at once

            def do_GET(self) -> None:  # noqa: N802 - http.server names it
                host = (self.headers.get("Host") or "").split(":")[0]
                ok = host in endpoint.hosts
                endpoint.hits += 1
                body = f"{endpoint.region}\n".encode() if ok else b"default backend - 404\n"
                self.reply(200 if ok else 404, body, {"X-Region": endpoint.region})

        self._httpd = LoopbackServer(RegionHandler, address=self.address, port=self.port)
        self.mode = "alive"

    def kill(self, mode: str = "refuse") -> None:
        """`refuse`: nothing listens (RST at once); `hang`: the port accepts and never answers (black hole)."""
        if self._httpd is not None:
            self._httpd.close()
            self._httpd = None
        if mode == "hang":
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((self.address, self.port))
            s.listen(512)  # never accepted: the kernel completes handshakes, nobody reads
            self._hang = s
        self.mode = mode

    def revive(self) -> None:
        if self._hang is not None:
            self._hang.close()
            self._hang = None
        if self._httpd is None:
            self._start()

    def close(self) -> None:
        self.kill()
        if self._hang is not None:
            self._hang.close()
            self._hang = None


# ------------------------------------------------------------------------------------------- DNS


class _UdpDns:
    """A DNS server on loopback UDP: each query that parses gets `reply(query)`, one thread per request;
    `address` and `port` are where it listens, `close()` stops it."""

    def _serve(self, address: str, reply: Callable[[dns.message.Message], dns.message.Message]) -> None:
        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                data, sock = self.request
                try:
                    query = dns.message.from_wire(data)
                except Exception:
                    return
                sock.sendto(reply(query).to_wire(), self.client_address)

        self.server = socketserver.ThreadingUDPServer((address, 0), Handler)
        self.server.daemon_threads = True
        self.address, self.port = self.server.server_address[:2]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class AuthoritativeDns(_UdpDns):
    """A zone on loopback, UDP, answering A queries authoritatively (AA set); `set()` updates it on cue."""

    def __init__(self, zone: str, address: str = "127.0.0.1") -> None:
        self.zone = zone.rstrip(".") + "."
        self.records: dict[str, tuple[list[str], int]] = {}
        self.lock = threading.Lock()
        self.changes: list[tuple[float, str, tuple[str, ...]]] = []
        self._serve(address, self.answer)

    def set(self, name: str, ips: Iterable[str], ttl: int) -> None:
        fqdn = name.rstrip(".") + "."
        ips = sorted(ips)
        with self.lock:
            if ips:
                self.records[fqdn] = (ips, ttl)
            else:
                self.records.pop(fqdn, None)
            self.changes.append((time.monotonic(), fqdn, tuple(ips)))

    def answer(self, query: dns.message.Message) -> dns.message.Message:
        response = dns.message.make_response(query)
        response.flags |= dns.flags.AA
        response.flags &= ~dns.flags.RA
        question = query.question[0]
        name = question.name.to_text().lower()
        if not name.endswith(self.zone):
            response.set_rcode(dns.rcode.REFUSED)
            response.flags &= ~dns.flags.AA
            return response
        with self.lock:
            record = self.records.get(name)
        if record is None:
            response.set_rcode(dns.rcode.NXDOMAIN)
        elif question.rdtype == dns.rdatatype.A:
            ips, ttl = record
            response.answer.append(dns.rrset.from_text_list(name, ttl, "IN", "A", ips))
        return response


class CachingResolver(_UdpDns):
    """A recursive resolver on loopback: forwards a miss to the authoritative server and keeps the answer for
    its TTL x `ttl_scale` seconds (the TTL it hands out counts down the same way)."""

    def __init__(self, upstream: AuthoritativeDns, ttl_scale: float, address: str = "127.0.0.1") -> None:
        self.upstream = upstream
        self.scale = ttl_scale
        self.cache: dict[tuple[str, int], tuple[float, dns.message.Message]] = {}
        self.lock = threading.Lock()
        self._serve(address, self.resolve)

    def resolve(self, query: dns.message.Message) -> dns.message.Message:
        question = query.question[0]
        key = (question.name.to_text().lower(), question.rdtype)
        now = time.monotonic()
        with self.lock:
            cached = self.cache.get(key)
        if cached is None or cached[0] <= now:
            forwarded = dns.message.make_query(question.name, question.rdtype)
            upstream = dns.query.udp(forwarded, self.upstream.address, port=self.upstream.port, timeout=2)
            ttl = min((rr.ttl for rr in upstream.answer), default=0)
            cached = (now + ttl * self.scale, upstream)
            with self.lock:
                self.cache[key] = cached
        expires, upstream = cached
        response = dns.message.make_response(query)
        response.flags |= dns.flags.RA
        response.set_rcode(upstream.rcode())
        left = max(0, int((expires - now) / self.scale)) if self.scale else 0
        for rr in upstream.answer:
            response.answer.append(dns.rrset.from_text_list(rr.name, left, "IN", rr.rdtype,
                                                            [r.to_text() for r in rr]))
        return response


# ------------------------------------------------------------------------------------------- TLS


def tls_material(directory: Path, server_ips: Iterable[str] = ("127.0.0.1",),
                 clients: Iterable[str] = ()) -> dict[str, Path]:
    """A throwaway CA, a server certificate for the given IPs, and a client certificate per CN, as files.

    Returns paths: `ca`, `server.crt`, `server.key`, `<cn>.crt`, `<cn>.key` (a CN's `:` written as `_`)."""
    from tests.support.testpki import make_ca, make_leaf

    ca = make_ca("test-ca")
    out: dict[str, Path] = {}

    def write(name: str, pem: str) -> None:
        out[name] = directory / name
        out[name].write_text(pem)

    write("ca", ca.cert_pem)
    server = make_leaf(ca, "127.0.0.1", True, ips=tuple(server_ips))
    write("server.crt", server.cert_pem)
    write("server.key", server.key_pem)
    for cn in clients:
        client = make_leaf(ca, cn, False)
        safe = cn.replace(":", "_")
        write(f"{safe}.crt", client.cert_pem)
        write(f"{safe}.key", client.key_pem)
    return out


def wait_for(predicate: Any, timeout: float, interval: float = 0.05) -> bool:
    """Poll `predicate()` until it is true or `timeout` seconds pass (a bounded loop)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())
