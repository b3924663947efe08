"""Probe-round benchmark of the DNS failover controller: how long one round takes against the probe period, as the
number of names grows, with one region black-holed (review-host-and-traffic F5).

    .venv/bin/python -m bench.failover_probe                    # 50, 150, 300 and 500 names, 3 regions
    .venv/bin/python -m bench.failover_probe --names 500 --regions 4

Everything on loopback: a healthy region (an HTTP server answering 200) and a black-holed one (a listener that
accepts and never answers, so every attempt waits for the whole timeout) per pair of regions. Each size runs
`Controller.probe_all` (agents/traffic_failover.py, the shipped probe period and timeout) and prints the round's
wall time, its ratio to the probe period (must stay below 1: the round ends before the next one is due) and the
pairs it had to skip (0 unless the open-files limit is too low for the attempts). For comparison it also runs the
previous controller's design: a pool of 32 round threads, each waiting for its own attempts.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import resource
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "agents"))

from agents import traffic_failover as tf  # noqa: E402
from components.config import DnsFailoverConfig  # noqa: E402

DEFAULTS = DnsFailoverConfig()


class _Ok(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


class Loopback:
    """`healthy` answering servers and `dead` black holes on 127.0.0.x, one shared port."""

    def __init__(self, healthy: int, dead: int) -> None:
        self.servers: list[ThreadingHTTPServer] = []
        self.holes: list[socket.socket] = []
        self.accepted: list[socket.socket] = []
        self.stop = threading.Event()
        self.regions: dict[str, str] = {}
        port = 0
        for i in range(healthy):
            httpd = ThreadingHTTPServer((f"127.0.1.{i + 1}", port), _Ok)
            httpd.daemon_threads = True
            port = httpd.server_address[1]
            threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
            self.servers.append(httpd)
            self.regions[f"live-{i}"] = f"127.0.1.{i + 1}"
        for i in range(dead):
            hole = socket.socket()
            hole.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            hole.bind((f"127.0.2.{i + 1}", port))
            hole.listen(4096)
            hole.settimeout(0.05)
            self.holes.append(hole)
            threading.Thread(target=self._swallow, args=(hole,), daemon=True).start()
            self.regions[f"dead-{i}"] = f"127.0.2.{i + 1}"
        self.port = port

    def _swallow(self, hole: socket.socket) -> None:
        while not self.stop.is_set():
            try:
                self.accepted.append(hole.accept()[0])
            except OSError:
                continue

    def close(self) -> None:
        self.stop.set()
        for httpd in self.servers:
            httpd.shutdown()
            httpd.server_close()
        for s in [*self.holes, *self.accepted]:
            s.close()


class _Api:
    def request(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return {"items": []}


def controller(net: Loopback, names: int, tls: bool = False) -> tf.Controller:
    settings = tf.Settings(
        namespace="external-dns", vantage="bench", identity="bench", domain="bench.example.com", exclude=(), ttl=15,
        period=DEFAULTS.probe_period_seconds, timeout=DEFAULTS.probe_timeout_seconds,
        attempts=DEFAULTS.probe_attempts, failure_threshold=3, success_threshold=6, hold_down=60, vantage_points=3,
        decision_period=1, lease_duration=15, http_port=net.port, https_port=net.port)
    c = tf.Controller(settings, _Api(), _Api())  # type: ignore[arg-type]
    c.targets = {f"n{i}.bench.example.com": tf.Target(f"n{i}.bench.example.com", tls) for i in range(names)}
    c.regions = dict(net.regions)
    return c


def old_round(c: tf.Controller) -> float:
    """The previous design: one thread per pair out of 32, each opening its attempts in a pool of 64 and waiting
    for all of them (blocking sockets)."""
    def probe(ip: str, host: str) -> bool:
        def attempt() -> bool:
            try:
                with socket.create_connection((ip, c.s.http_port), timeout=c.s.timeout) as s:
                    s.settimeout(c.s.timeout)
                    s.sendall(f"GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
                    return s.recv(64).startswith(b"HTTP/1.0 200")
            except OSError:
                return False

        futures = [attempts.submit(attempt) for _ in range(c.s.attempts)]
        return any(f.result() for f in futures)

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(32) as rounds, \
            concurrent.futures.ThreadPoolExecutor(64) as attempts:
        futures = [rounds.submit(probe, ip, t.host) for t in c.targets.values() for ip in c.regions.values()]
        for f in futures:
            f.result()
    return time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--names", default="50,150,300,500")
    p.add_argument("--regions", type=int, default=3, help="regions; one of them black-holed")
    p.add_argument("--old", action="store_true", help="also time the previous design (slow: minutes at 500)")
    p.add_argument("--tls", action="store_true", help="TLS names (every attempt an SSL object: memory)")
    args = p.parse_args(argv)
    net = Loopback(healthy=args.regions - 1, dead=1)
    period = DEFAULTS.probe_period_seconds
    print(f"probe period {period} s, timeout {DEFAULTS.probe_timeout_seconds} s, {DEFAULTS.probe_attempts} attempts "
          f"per pair, {args.regions} regions (1 black-holed)")
    print(f"{'names':>6} {'pairs':>6} {'round s':>8} {'round/period':>13} {'skipped':>8} {'peak open':>10} "
          f"{'max RSS MiB':>12}"
          + ("  old round s  old/period" if args.old else ""))
    try:
        for names in (int(n) for n in args.names.split(",")):
            c = controller(net, names, args.tls)
            started = time.monotonic()
            c.probe_all()
            took = time.monotonic() - started
            line = (f"{names:>6} {names * args.regions:>6} {took:>8.2f} {took / period:>13.2f} "
                    f"{int(c.stats['probes_skipped']):>8} {c.prober.peak_inflight:>10} "
                    f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:>12.0f}")
            if args.old:
                old = old_round(c)
                line += f"  {old:>11.2f}  {old / period:>10.2f}"
            print(line, flush=True)
    finally:
        net.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
