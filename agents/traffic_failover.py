"""Traffic failover controller: health-checked DNS for the fleet's names, independent of Karmada's detection.

This runs on the hub's host cluster, one replica per hub server (three vantage points). It is stdlib-only
because the file itself is the container's program: `components/traffic/failover_docs.py` mounts it from a
ConfigMap, with its helper `_incluster.py`, into a pinned Python image.

Every replica is a prober. Each round (every `--period` seconds) it

1. lists the Ingress templates in karmada-apiserver and keeps their hosts under `--domain` (the names the
   fleet publishes; wildcards and the `lb.<domain>` subtree of the regions' drill records are skipped);
2. lists the region ConfigMaps in its namespace on the host cluster (`karmada-hub.io/traffic-region`), each
   naming one region's load balancer address (written by the stack that owns the region; the region is the one
   the ConfigMap's name says, `traffic-region-<region>`, which is what the hub's RBAC grants that region's
   identity); a region missing from a list keeps its address for a few lists (a ConfigMap being replaced), an
   empty list changes nothing;
3. probes every (name, region) pair through that region's load balancer the way a client would: TCP, TLS with
   SNI = the name when the Ingress has TLS for it, `GET <path>` with `Host: <name>`; `--attempts` new
   connections at once, and the round fails only if all of them fail (status outside 200-399 is a failure).
   Every attempt of a round is in flight together (non-blocking sockets, `Prober`), so a round lasts about
   one `--timeout` whatever the number of names, and never longer than `--period`;
4. writes its consecutive failure/success counts into its own Lease (`traffic-failover-vantage-<node>`).

One replica holds the leader Lease and decides, every `--decision-period` seconds, from the Leases that are
fresh (their resourceVersion changed within three periods, measured on the leader's own clock):

- a published region is withdrawn when a majority of all `--vantage-points` report >= `--failure-threshold`
  failed rounds in a row; a region comes back when a majority report >= `--success-threshold` good rounds and
  `--hold-down` seconds have passed since it was withdrawn (hysteresis);
- a name never loses its last region (fail open): if every region of a name is down, or if no majority can be
  formed, the last published set stays, so a hub-side network problem cannot blank the zone;
- the decision is written as one DNSEndpoint per name in `--namespace` (externaldns.k8s.io/v1alpha1, never
  with an empty target list). With `--dns-mode=hetzner` external-dns (`--source=crd` alone) turns them into the
  records. With `--dns-mode=self-hosted` the leader first writes the zone itself (`ZoneWriter`): the same RFC 2136
  UPDATE, signed with TSIG (`_dnswire`), to every `--nameserver` at once, with one SOA serial it chooses, so every
  hub nameserver holds the same (serial, content); a server that missed a write is brought up to date by a full
  sync (AXFR, then the whole difference). Every replica also asks every nameserver (and `--secondary`) for its
  serial (metrics), and the leader keeps the zone in a snapshot ConfigMap for nameservers that start from nothing.
  Each region's drill record `<region>.lb.<domain>` (its LB address, for drills and people) is the leader's too:
  in the zone (self-hosted), or one DNSEndpoint per region (hetzner; labelled with the region, never counted as
  a name). Region stacks hold no DNS token (security review 2, H5).
  A name whose Ingress is gone loses its DNSEndpoint only after it was missing from three successful lists in
  a row and for `--delete-after` seconds; never while karmada-apiserver cannot be read, never after an empty
  list, never more than half of the names at once. A write that fails for one name does not stop the others.
- a vantage Lease the leader has never seen change (it just became leader) is as old as its `renewTime`, so a
  prober that died long ago does not vote.

`/healthz` answers 200 while the probe loop turns (whatever the API answers: a hub API outage is not fixed by a
restart); `/readyz` once the leader has decided every known name
(the program orders external-dns after this Deployment, so on first deploy external-dns switches to the CRD
source only after the DNSEndpoints exist: with `--policy=sync` it would otherwise delete the records).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import datetime as dt
import errno
import http.server
import json
import logging
import os
import selectors
import socket
import ssl
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import _dnswire as wire
from _incluster import ApiError, Client, Response, serve

INGRESSES_PATH = "/apis/networking.k8s.io/v1/ingresses"
LEASES_PATH = "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
CONFIGMAPS_PATH = "/api/v1/namespaces/{namespace}/configmaps"
DNSENDPOINTS_PATH = "/apis/externaldns.k8s.io/v1alpha1/namespaces/{namespace}/dnsendpoints"

REGION_LABEL = "karmada-hub.io/traffic-region"
"""Label of a region ConfigMap (value: the region, which must be the one its name says); its data holds `lbIpv4`.
Also on the DNSEndpoint of a region's drill record (mode hetzner), which is no name's decision."""
REGION_RECORD_SUBDOMAIN = "lb"
"""A region's drill record is `<region>.lb.<domain>` (components/traffic/docs.py REGION_RECORD_LABEL)."""
REGION_IP_KEY = "lbIpv4"
VANTAGE_LABEL = "karmada-hub.io/failover-vantage"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "karmada-hub-traffic-failover"
"""external-dns runs with `--label-filter=app.kubernetes.io/managed-by=<this>`: it reads only our DNSEndpoints."""
OBSERVATIONS_ANNOTATION = "karmada-hub.io/observations"
WITHDRAWN_ANNOTATION = "karmada-hub.io/withdrawn"
"""On a DNSEndpoint: region -> when it was withdrawn (the hold-down clock survives a leader change)."""
FAIL_OPEN_ANNOTATION = "karmada-hub.io/fail-open"
DECISION_ANNOTATION = "karmada-hub.io/last-decision"
"""On the leader Lease: `{"at": <time>, "pending": <names not yet decided>}` after every decision pass."""
PROBE_PATH_ANNOTATION = "karmada-hub.io/probe-path"
"""On a tenant Ingress: the path the probe asks for (default `/`); it must answer 200-399 through the ingress."""
LEADER_LEASE = "traffic-failover-leader"
VANTAGE_LEASE_PREFIX = "traffic-failover-vantage-"
ABSENT_LISTS_BEFORE_DELETE = 3
"""Successful lists in a row a name (or a region) must be missing from before it goes."""
REGION_GRACE_PERIODS = 6
"""...and for this many probe periods (a region ConfigMap that Pulumi replaces is back within seconds)."""
CLOCK_SKEW_SECONDS = 2.0
"""Tolerated wall-clock difference between hub servers (NTP keeps them far closer) when a new leader judges a
vantage Lease it has never seen change by its `renewTime`."""
USER_AGENT = "karmada-hub-traffic-failover"

log = logging.getLogger("traffic-failover")


# ------------------------------------------------------------------------------------------ names


@dataclass(frozen=True, order=True)
class Target:
    """One published name and how to probe it."""

    host: str
    tls: bool = False
    path: str = "/"


def published_hosts(ingress_list: Mapping[str, Any], domain: str, exclude: Iterable[str] = ()) -> dict[str, Target]:
    """The hosts the fleet publishes, from the Ingress templates: under `domain`, not wildcards, not excluded.

    A host served by several Ingresses is probed with TLS if any of them terminates TLS for it, and with the
    first probe-path annotation in (namespace, name) order."""
    suffix = "." + domain
    excluded = tuple(exclude)
    found: dict[str, Target] = {}
    items = sorted(ingress_list.get("items", []), key=lambda i: ((i.get("metadata") or {}).get("namespace", ""),
                                                                  (i.get("metadata") or {}).get("name", "")))
    for ingress in items:
        meta = ingress.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            continue
        spec = ingress.get("spec") or {}
        tls_hosts = {h for t in spec.get("tls") or [] for h in t.get("hosts") or []}
        path = ((meta.get("annotations") or {}).get(PROBE_PATH_ANNOTATION) or "").strip()
        for rule in spec.get("rules") or []:
            host = (rule.get("host") or "").strip().lower().rstrip(".")
            if not host or host.startswith("*") or not (host == domain or host.endswith(suffix)):
                continue
            if any(host == x or host.endswith("." + x) for x in excluded):
                continue
            old = found.get(host)
            tls = host in tls_hosts or (old is not None and old.tls)
            probe = old.path if old is not None and old.path != "/" else (path if path.startswith("/") else "/")
            found[host] = Target(host, tls, probe)
    return found


REGION_CONFIGMAP_PREFIX = "traffic-region-"


def region_addresses(configmap_list: Mapping[str, Any]) -> dict[str, str]:
    """region -> LB IPv4, from the region ConfigMaps (a malformed one is skipped). The region is the one the
    ConfigMap's *name* says (`traffic-region-<region>`): that name is what the hub grants a region's identity
    (trust/region_rbac.py), while its label and data are whatever that region wrote; a label naming another region
    is a claim on that region's names and is skipped (security review 2, M1). Should two ConfigMaps still name one
    region, the newest wins (creationTimestamp, then name)."""
    import ipaddress

    regions: dict[str, tuple[str, str, str]] = {}
    for cm in configmap_list.get("items", []):
        meta = cm.get("metadata") or {}
        name = str(meta.get("name", ""))
        region = name[len(REGION_CONFIGMAP_PREFIX):] if name.startswith(REGION_CONFIGMAP_PREFIX) else ""
        if (meta.get("labels") or {}).get(REGION_LABEL) != region:
            continue
        ip = (cm.get("data") or {}).get(REGION_IP_KEY, "")
        try:
            ipaddress.IPv4Address(ip)
        except ValueError:
            continue
        if meta.get("deletionTimestamp") or not region:
            continue
        rank = (str(meta.get("creationTimestamp") or ""), str(meta.get("name") or ""))
        if region not in regions or rank > regions[region][:2]:
            regions[region] = (*rank, ip)
    return {r: v[2] for r, v in sorted(regions.items())}


# ------------------------------------------------------------------------------------------ probes


SKIPPED = "skipped"
"""A pair the round had no time to start: its counters stay as they were (no vote either way)."""


@dataclass
class _Attempt:
    """One connection of a probe: connect, TLS (with SNI) when the name has TLS, `GET`, the status line."""

    key: str
    ip: str
    port: int
    target: Target
    deadline: float
    sock: socket.socket | None = None
    state: str = "connect"
    buffer: bytes = b""
    request: bytes = b""


class Prober:
    """Every (name, region) attempt of a round at once, on one thread: non-blocking sockets under `selectors`.

    A round used to give each pair a thread from a pool of 32 and wait for the slowest, so a black-holed region
    cost `timeout` per 32 pairs and a round grew with the number of names (about 20 s at 300 names). Here every
    attempt is in flight together, up to `max_inflight` open sockets (the rest start as slots free up), so a round
    lasts about one `timeout` whatever the number of names; an attempt that cannot start before `deadline` minus
    `timeout` is not started at all (SKIPPED), so a round never overruns its period."""

    def __init__(self, timeout: float, attempts: int, max_inflight: int) -> None:
        self.timeout = timeout
        self.attempts = max(1, attempts)
        self.max_inflight = max(1, max_inflight)
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        # Not verified: a bad certificate is not a regional failure (Route 53's HTTPS checks do not validate
        # them either), and the probe must follow the path clients take, not judge it.
        self.context.check_hostname = False
        self.context.verify_mode = ssl.CERT_NONE
        self.peak_inflight = 0
        """Most sockets open at once in the last round (tests and the benchmark read it)."""

    def run(self, jobs: Iterable[tuple[str, str, int, Target]], deadline: float | None = None) -> dict[str, str | None]:
        """key -> None (some attempt answered 200-399) or why every attempt failed, or SKIPPED. `jobs` are
        (key, ip, port, target); each gets `attempts` new connections."""
        pending = [(key, ip, port, target) for key, ip, port, target in jobs for _ in range(self.attempts)]
        pending.reverse()
        errors: dict[str, str] = {}
        passed: set[str] = set()
        keys = {job[0] for job in pending}
        started: set[str] = set()
        selector = selectors.DefaultSelector()
        live: dict[int, _Attempt] = {}
        """id(attempt) -> attempt: an attempt's socket changes when TLS wraps it."""
        self.peak_inflight = 0
        try:
            while pending or live:
                now = time.monotonic()
                while pending and len(live) < self.max_inflight:
                    if deadline is not None and now + self.timeout > deadline:
                        pending.clear()
                        break
                    key, ip, port, target = pending.pop()
                    started.add(key)
                    attempt = _Attempt(key, ip, port, target, now + self.timeout)
                    error = self._start(attempt, selector)
                    if error is not None:
                        errors.setdefault(key, error)
                    else:
                        live[id(attempt)] = attempt
                self.peak_inflight = max(self.peak_inflight, len(live))
                if not live:
                    continue
                wait = max(0.0, min(a.deadline for a in live.values()) - time.monotonic())
                for selected, _events in selector.select(min(wait, 0.5)):
                    attempt = selected.data
                    result = self._step(attempt, selector)
                    if result is not False:
                        self._finish(attempt, selector, live)
                        if result is None:
                            passed.add(attempt.key)
                        else:
                            errors.setdefault(attempt.key, result)
                now = time.monotonic()
                for attempt in [a for a in live.values() if a.deadline <= now]:
                    self._finish(attempt, selector, live)
                    errors.setdefault(attempt.key, f"{'connect: ' if attempt.state == 'connect' else ''}TimeoutError")
        finally:
            for attempt in list(live.values()):
                self._finish(attempt, selector, live)
            selector.close()
        return {key: None if key in passed else errors.get(key, SKIPPED) if key in started else SKIPPED
                for key in keys}

    def _start(self, attempt: _Attempt, selector: selectors.BaseSelector) -> str | None:
        try:
            sock = socket.socket(socket.AF_INET6 if ":" in attempt.ip else socket.AF_INET, socket.SOCK_STREAM)
        except OSError as err:
            return f"connect: {err.__class__.__name__}"
        sock.setblocking(False)
        code = sock.connect_ex((attempt.ip, attempt.port))
        if code not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN):
            sock.close()
            return f"connect: {_errno_name(code)}"
        attempt.sock = sock
        attempt.request = (f"GET {attempt.target.path} HTTP/1.1\r\nHost: {attempt.target.host}\r\nUser-Agent: "
                           f"{USER_AGENT}\r\nAccept: */*\r\nConnection: close\r\n\r\n").encode()
        selector.register(sock, selectors.EVENT_WRITE, attempt)
        return None

    def _want(self, attempt: _Attempt, selector: selectors.BaseSelector, events: int) -> None:
        assert attempt.sock is not None
        selector.modify(attempt.sock, events, attempt)

    def _step(self, attempt: _Attempt, selector: selectors.BaseSelector) -> str | bool | None:
        """Advance one attempt: False while it goes on, None when it passed, else why it failed."""
        sock = attempt.sock
        assert sock is not None
        try:
            if attempt.state == "connect":
                code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if code:
                    return f"connect: {_errno_name(code)}"
                if attempt.target.tls:
                    selector.unregister(sock)
                    wrapped = self.context.wrap_socket(sock, server_hostname=attempt.target.host,
                                                       do_handshake_on_connect=False)
                    attempt.sock = wrapped
                    selector.register(wrapped, selectors.EVENT_WRITE, attempt)
                    attempt.state = "handshake"
                    return self._step(attempt, selector)
                attempt.state = "send"
            if attempt.state == "handshake":
                try:
                    attempt.sock.do_handshake()  # type: ignore[union-attr]
                except ssl.SSLWantReadError:
                    self._want(attempt, selector, selectors.EVENT_READ)
                    return False
                except ssl.SSLWantWriteError:
                    self._want(attempt, selector, selectors.EVENT_WRITE)
                    return False
                attempt.state = "send"
            if attempt.state == "send":
                try:
                    sent = attempt.sock.send(attempt.request)  # type: ignore[union-attr]
                except (ssl.SSLWantWriteError, BlockingIOError):
                    self._want(attempt, selector, selectors.EVENT_WRITE)
                    return False
                attempt.request = attempt.request[sent:]
                if attempt.request:
                    self._want(attempt, selector, selectors.EVENT_WRITE)
                    return False
                attempt.state = "recv"
                self._want(attempt, selector, selectors.EVENT_READ)
                return False
            while True:
                try:
                    chunk = attempt.sock.recv(1024)  # type: ignore[union-attr]
                except (ssl.SSLWantReadError, BlockingIOError):
                    return False
                attempt.buffer += chunk
                if not chunk or b"\r\n" in attempt.buffer or len(attempt.buffer) >= 1024:
                    break
                if not (isinstance(attempt.sock, ssl.SSLSocket) and attempt.sock.pending()):
                    return False
            parts = attempt.buffer.split(b"\r\n", 1)[0].split()
            if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
                return "no HTTP status line"
            status = int(parts[1])
            return None if 200 <= status < 400 else f"HTTP {status}"
        except (OSError, ssl.SSLError) as err:
            return f"{err.__class__.__name__}"

    @staticmethod
    def _finish(attempt: _Attempt, selector: selectors.BaseSelector, live: dict[int, _Attempt]) -> None:
        live.pop(id(attempt), None)
        sock = attempt.sock
        if sock is None:
            return
        with contextlib.suppress(KeyError, ValueError):
            selector.unregister(sock)
        sock.close()
        attempt.sock = None


def _errno_name(code: int) -> str:
    return {errno.ECONNREFUSED: "ConnectionRefusedError", errno.ETIMEDOUT: "TimeoutError",
            errno.EHOSTUNREACH: "OSError", errno.ENETUNREACH: "OSError",
            errno.ECONNRESET: "ConnectionResetError"}.get(code, "OSError")


def raise_open_files_limit(wanted: int) -> int:
    """Raise this process' soft RLIMIT_NOFILE towards `wanted` (never above the hard limit); returns the soft limit.
    Container runtimes may start processes with a soft limit of 1024 (containerd 2.x), a round needs more."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return int(soft if soft != resource.RLIM_INFINITY else wanted)


@dataclass
class Counter:
    failures: int = 0
    successes: int = 0
    error: str = ""

    def record(self, error: str | None) -> None:
        if error is None:
            self.failures, self.successes, self.error = 0, self.successes + 1, ""
        else:
            self.failures, self.successes, self.error = self.failures + 1, 0, error


def obs_key(host: str, region: str) -> str:
    return f"{host} {region}"


# ------------------------------------------------------------------------------------------ decisions


@dataclass(frozen=True)
class Vote:
    """One fresh vantage point's counts for one (name, region)."""

    failures: int
    successes: int


@dataclass(frozen=True)
class Decision:
    """What the leader publishes for one name."""

    host: str
    regions: tuple[str, ...]
    targets: tuple[str, ...]
    withdrawn: dict[str, str] = field(default_factory=dict)
    fail_open: bool = False
    changed: bool = False


def majority(vantage_points: int) -> int:
    return vantage_points // 2 + 1


def decide(host: str, regions: Mapping[str, str], current_targets: Iterable[str], votes: Mapping[str, list[Vote]],
           withdrawn: Mapping[str, str], *, vantage_points: int, failure_threshold: int, success_threshold: int,
           hold_down: float, now: float) -> Decision | None:
    """The next published set for one name (None: nothing to publish yet).

    `regions`: region -> LB IP (known now); `current_targets`: the IPs published now; `votes`: region -> the
    counts of every fresh vantage point; `withdrawn`: region -> ISO time it was withdrawn. A strict majority of
    *all* vantage points is needed either way, so a minority (or too many stale probers) changes nothing."""
    need = majority(vantage_points)
    current = set(current_targets)
    by_ip = {ip: r for r, ip in regions.items()}
    published = {by_ip[ip] for ip in current if ip in by_ip}

    def down(region: str) -> bool:
        return sum(v.failures >= failure_threshold for v in votes.get(region, [])) >= need

    def up(region: str) -> bool:
        return sum(v.successes >= success_threshold for v in votes.get(region, [])) >= need

    def held(region: str) -> bool:
        since = withdrawn.get(region)
        return since is not None and now - parse_time(since) < hold_down

    keep = {r for r in published if not down(r)}
    add = {r for r in regions if r not in published and up(r) and not held(r)}
    desired = keep | add
    fail_open = False
    if not desired:
        if not current:
            return None
        # Fail open: never withdraw the last region (and never publish an empty target list).
        fail_open = bool(published) or bool(current)
        targets = tuple(sorted(current))
        return Decision(host, tuple(sorted(published)), targets, dict(withdrawn), fail_open=fail_open,
                        changed=False)
    new_withdrawn = {r: t for r, t in withdrawn.items() if r not in desired and r in regions}
    for r in published - desired:
        new_withdrawn[r] = format_time(now)
    targets = tuple(sorted(regions[r] for r in desired))
    changed = set(targets) != current
    return Decision(host, tuple(sorted(desired)), targets, new_withdrawn, fail_open=False, changed=changed)


def pending(host: str, regions: Mapping[str, str], votes: Mapping[str, list[Vote]], *, vantage_points: int,
            failure_threshold: int) -> bool:
    """A name with no DNSEndpoint yet is pending until every region is voted down (then there is nothing to
    publish) — or it is published."""
    need = majority(vantage_points)
    return not all(sum(v.failures >= failure_threshold for v in votes.get(r, [])) >= need for r in regions)


def region_record_name(region: str, domain: str) -> str:
    return f"{region}.{REGION_RECORD_SUBDOMAIN}.{domain}"


def region_dnsendpoint(namespace: str, region: str, domain: str, ip: str, ttl: int,
                       resource_version: str | None = None) -> dict[str, Any]:
    """Mode hetzner: the DNSEndpoint of one region's drill record, `<region>.lb.<domain>` -> its LB address (from
    the region ConfigMap the hub granted that region; external-dns writes it like every name)."""
    name = region_record_name(region, domain)
    meta: dict[str, Any] = {"name": name, "namespace": namespace,
                            "labels": {MANAGED_BY_LABEL: MANAGED_BY, REGION_LABEL: region}}
    if resource_version:
        meta["resourceVersion"] = resource_version
    return {"apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSEndpoint", "metadata": meta,
            "spec": {"endpoints": [{"dnsName": name, "recordType": "A", "recordTTL": ttl, "targets": [ip]}]}}


def dnsendpoint(namespace: str, decision: Decision, ttl: int, resource_version: str | None = None
                ) -> dict[str, Any]:
    """The DNSEndpoint for one name: one A endpoint with every published region's address."""
    if not decision.targets:
        raise ValueError(f"{decision.host}: refusing to write an empty target list")
    annotations = {WITHDRAWN_ANNOTATION: json.dumps(decision.withdrawn, sort_keys=True)}
    if decision.fail_open:
        annotations[FAIL_OPEN_ANNOTATION] = "true"
    meta: dict[str, Any] = {"name": decision.host, "namespace": namespace,
                            "labels": {MANAGED_BY_LABEL: MANAGED_BY}, "annotations": annotations}
    if resource_version:
        meta["resourceVersion"] = resource_version
    return {
        "apiVersion": "externaldns.k8s.io/v1alpha1",
        "kind": "DNSEndpoint",
        "metadata": meta,
        "spec": {"endpoints": [{"dnsName": decision.host, "recordType": "A", "recordTTL": ttl,
                                "targets": list(decision.targets)}]},
    }


def endpoint_state(host: str, current: Mapping[str, Any] | None) -> tuple[list[str], dict[str, str]]:
    """(published addresses, withdrawn regions -> since) of a name's DNSEndpoint (empty without one)."""
    targets: list[str] = []
    withdrawn: dict[str, str] = {}
    if current is None:
        return targets, withdrawn
    for ep in (current.get("spec") or {}).get("endpoints") or []:
        if ep.get("dnsName") == host and ep.get("recordType") == "A":
            targets = list(ep.get("targets") or [])
    try:
        withdrawn = json.loads(((current.get("metadata") or {}).get("annotations") or {}).get(WITHDRAWN_ANNOTATION)
                               or "{}")
    except ValueError:
        withdrawn = {}
    return targets, withdrawn


def format_time(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(s: str) -> float:
    s = s.rstrip("Z")
    fmt = "%Y-%m-%dT%H:%M:%S.%f" if "." in s else "%Y-%m-%dT%H:%M:%S"
    return dt.datetime.strptime(s, fmt).replace(tzinfo=dt.UTC).timestamp()


# ------------------------------------------------------------------------------------ self-hosted zone


@dataclass
class NameserverState:
    """What this replica last saw of one nameserver (SOA queries) and of its writes to it (leader)."""

    serial: int | None = None
    up: bool = False
    checked_at: float = 0.0
    error: str = ""
    behind_since: float | None = None
    """Wall time since the server's serial differs from the zone's current one (None: in step)."""


class ZoneWriter:
    """Mode self-hosted: the zone every hub nameserver serves, written by this replica while it leads.

    Every primary gets the same RFC 2136 UPDATE (TSIG), in parallel, with the SOA serial chosen here
    (max(unix time, current + 1)), so all hold the same (serial, content) and secondaries may transfer from any.
    An UPDATE is incremental (the names that changed) with the prerequisite that the server's SOA is exactly the
    previous one: a server that missed a write refuses (NXRRSET) and is brought up to date instead by a full
    sync (AXFR, then one UPDATE with the whole difference and the same serial as everyone else). A new leader
    starts with a full sync of every primary. The zone never loses its SOA or NS, and no name is written
    without addresses (`desired` refuses)."""

    MAX_RRSETS_PER_UPDATE = 300
    """An UPDATE over TCP is at most 64 KiB; a sync of a big fleet is split (the last part sets the serial)."""

    def __init__(self, config: Mapping[str, Any], primaries: Sequence[str], secondaries: Sequence[str],
                 key: wire.TsigKey, timeout: float) -> None:
        self.zone = wire.fqdn(config["zone"])
        soa = config["soa"]
        self.soa_fields = (soa["mname"], soa["rname"], int(soa["refresh"]), int(soa["retry"]), int(soa["expire"]),
                           int(soa["minimum"]))
        self.soa_ttl = int(soa["ttl"])
        self.ns = tuple(wire.fqdn(n) for n in config["ns"])
        self.ns_ttl = int(config["nsTtl"])
        self.record_ttl = int(config["recordTtl"])
        self.region_label = str(config.get("regionLabel") or "lb")
        self.static = [wire.RRset(s["name"], s["type"], int(s["ttl"]), tuple(sorted(s["values"])))
                       for s in config.get("static") or []]
        self.primaries = list(primaries)
        self.secondaries = list(secondaries)
        self.key = key
        self.timeout = timeout
        self.current: wire.Soa | None = None
        """The SOA every in-step primary holds (None: nothing published by this replica yet)."""
        self.content: dict[tuple[str, str], wire.RRset] | None = None
        self.state: dict[str, NameserverState] = {s: NameserverState() for s in [*self.primaries, *self.secondaries]}
        self.lock = threading.Lock()
        self.server_locks = {s: threading.Lock() for s in self.primaries}
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(2, 2 * len(self.state)),
                                                          thread_name_prefix="dns")
        self.stats = {"updates": 0, "full_syncs": 0, "update_failures": 0}

    def soa(self, serial: int) -> wire.Soa:
        return wire.Soa(self.soa_fields[0], self.soa_fields[1], serial & 0xFFFFFFFF, *self.soa_fields[2:])

    def desired(self, names: Mapping[str, Sequence[str]], regions: Mapping[str, str]) -> dict[tuple[str, str],
                                                                                             wire.RRset]:
        """The zone's content: the apex NS set, static records, `<region>.<label>.<zone>` for every region, and
        one A RRset per published name. A name without addresses is refused (the zone is never blanked)."""
        out: dict[tuple[str, str], wire.RRset] = {}

        def put(rrset: wire.RRset) -> None:
            if not rrset.values:
                raise ValueError(f"{rrset.name}: refusing to write an empty {rrset.rtype} RRset")
            out[rrset.key()] = rrset

        put(wire.RRset(self.zone, "NS", self.ns_ttl, tuple(sorted(self.ns))))
        for rrset in self.static:
            put(rrset)
        for region, ip in regions.items():
            put(wire.RRset(f"{region}.{self.region_label}.{self.zone}", "A", self.record_ttl, (ip,)))
        for host, targets in names.items():
            put(wire.RRset(host, "A", self.record_ttl, tuple(sorted(set(targets)))))
        return out

    def next_serial(self) -> int:
        serials = [s.serial for s in self.state.values() if s.serial is not None]
        if self.current is not None:
            serials.append(self.current.serial)
        candidate = int(time.time()) & 0xFFFFFFFF
        for serial in serials:
            if not wire.serial_newer(candidate, serial):
                candidate = (serial + 1) & 0xFFFFFFFF
        return candidate or 1

    @staticmethod
    def difference(have: Mapping[tuple[str, str], wire.RRset], want: Mapping[tuple[str, str], wire.RRset]
                   ) -> tuple[list[tuple[str, str]], list[wire.RRset]]:
        """(RRsets to delete, RRsets to add) to turn `have` into `want`; a changed RRset is both."""
        deletes = [k for k in have if want.get(k) != have[k]]
        adds = [v for k, v in want.items() if have.get(k) != v]
        return deletes, adds

    def _send(self, server: str, require: wire.Soa | None, deletes: list[tuple[str, str]],
              adds: list[wire.RRset], soa: wire.Soa) -> None:
        step = self.MAX_RRSETS_PER_UPDATE
        parts = [(deletes[i:i + step], []) for i in range(0, len(deletes), step)]
        parts += [([], adds[i:i + step]) for i in range(0, len(adds), step)]
        parts = parts or [([], [])]
        for index, (part_deletes, part_adds) in enumerate(parts):
            last = index == len(parts) - 1
            message = wire.update(self.zone, require_soa=require if index == 0 else None, delete=part_deletes,
                                  add=part_adds, soa=soa if last else None, soa_ttl=self.soa_ttl)
            wire.send_update(server, message, self.key, self.timeout)

    def full_sync(self, server: str, want: Mapping[tuple[str, str], wire.RRset], soa: wire.Soa) -> None:
        """Read the server's zone (AXFR) and send it the whole difference to `want`, ending at `soa`."""
        have_soa, have = wire.axfr(server, self.zone, self.key, self.timeout)
        deletes, adds = self.difference(have, want)
        if have_soa.serial == soa.serial and not deletes and not adds:
            return
        self._send(server, None, deletes, adds, soa)
        self.stats["full_syncs"] += 1

    def _write(self, server: str, previous: wire.Soa | None, previous_content: Mapping[tuple[str, str], wire.RRset]
               | None, want: Mapping[tuple[str, str], wire.RRset], soa: wire.Soa) -> str | None:
        """Bring one primary to (`soa`, `want`): incrementally from `previous` when it holds that, else (or when it
        turns out to have missed a write) by a full sync. One write per server at a time (its lock)."""
        with self.server_locks[server]:
            state = self.state[server]
            try:
                if previous is not None and previous_content is not None and state.serial == previous.serial:
                    deletes, adds = self.difference(previous_content, want)
                    try:
                        self._send(server, previous, deletes, adds, soa)
                        self.stats["updates"] += 1
                    except wire.DnsError as err:
                        if err.rcode != 8:  # NXRRSET: it missed a write; anything else is a failure
                            raise
                        log.warning("nameserver %s missed a write (NXRRSET); full sync", server)
                        self.full_sync(server, want, soa)
                else:
                    self.full_sync(server, want, soa)
            except (wire.DnsError, OSError, ValueError) as err:
                self.stats["update_failures"] += 1
                error = f"{err.__class__.__name__}: {err}"
                with self.lock:
                    state.error = error
                    if state.behind_since is None:
                        state.behind_since = time.time()
                log.warning("nameserver %s not written: %s", server, error)
                return error
            with self.lock:
                state.serial, state.up, state.error, state.behind_since = soa.serial, True, "", None
            return None

    def publish(self, want: Mapping[tuple[str, str], wire.RRset]) -> dict[str, str | None]:
        """Make `want` the zone, under a new serial, and write it to every primary at once (waiting at most one
        timeout: a server that does not answer is left to `reconcile`). server -> None (written) or the error;
        empty when `want` is what the zone already holds."""
        with self.lock:
            if self.current is not None and self.content == dict(want):
                return {}
            previous, previous_content = self.current, self.content
            soa = self.soa(self.next_serial())
            self.current, self.content = soa, dict(want)
        futures = {s: self.pool.submit(self._write, s, previous, previous_content, want, soa) for s in self.primaries}
        done, _ = concurrent.futures.wait(futures.values(), timeout=self.timeout + 1.0)
        results = {s: (f.result() if f in done else "TimeoutError: still writing") for s, f in futures.items()}
        written = sum(e is None for e in results.values())
        log.info("zone %s: serial %d written to %d of %d primaries", self.zone, soa.serial, written,
                 len(self.primaries))
        return results

    def reconcile(self) -> None:
        """Every zone check: a primary that does not hold the current serial (restarted, rebuilt, cut off while
        a write went out) gets a full sync to it, in the background, unless a write to it is under way."""
        with self.lock:
            current, content = self.current, self.content
            behind = [s for s in self.primaries if current is not None and self.state[s].serial != current.serial]
        if current is None or content is None:
            return
        for server in behind:
            if self.server_locks[server].locked():
                continue
            self.pool.submit(self._write, server, None, None, content, current)

    def check(self) -> None:
        """Ask every nameserver (primaries and secondaries) for the zone's SOA: serials, answering or not."""
        futures = {s: self.pool.submit(wire.soa_of, s, self.zone, self.timeout) for s in self.state}
        results = {}
        for server, future in futures.items():
            try:
                results[server] = (future.result().serial, "")
            except (wire.DnsError, OSError) as err:
                results[server] = (None, f"{err.__class__.__name__}: {err}")
        now = time.time()
        with self.lock:
            current = self.current.serial if self.current is not None else None
            for server, (serial, error) in results.items():
                state = self.state[server]
                state.checked_at = now
                state.up, state.error = serial is not None, error
                if serial is not None:
                    state.serial = serial
                if current is None or (state.up and state.serial == current):
                    state.behind_since = None
                elif state.behind_since is None:
                    state.behind_since = now

    def in_step(self) -> int:
        """How many primaries hold the current serial."""
        if self.current is None:
            return 0
        return sum(1 for s in self.primaries if self.state[s].serial == self.current.serial)

    def snapshot_text(self) -> str | None:
        if self.current is None or self.content is None:
            return None
        return wire.zone_text(self.zone, self.current, self.soa_ttl, self.content.values())


# -------------------------------------------------------------------------------------------- state


@dataclass
class Settings:
    namespace: str
    vantage: str
    identity: str
    domain: str
    exclude: tuple[str, ...]
    ttl: int
    period: float
    timeout: float
    attempts: int
    failure_threshold: int
    success_threshold: int
    hold_down: float
    vantage_points: int
    decision_period: float
    lease_duration: float
    http_port: int
    https_port: int
    delete_after: float = 120.0
    """A name whose Ingress is gone keeps its record until it was missing from ABSENT_LISTS_BEFORE_DELETE
    successful lists in a row *and* for this many seconds (a few TTLs: an Ingress replaced by Helm or Pulumi
    comes back long before)."""
    max_inflight: int = 4096
    """Most probe connections open at once (Prober); bounded again by the open-files limit."""
    snapshot_namespace: str = ""
    snapshot_configmap: str = ""
    """Mode self-hosted: where the leader keeps the zone file for nameservers that start from nothing."""
    zone_check_period: float = 5.0
    """Mode self-hosted: every replica asks every nameserver for its SOA this often (metrics, lag)."""


def vantage_lease_name(vantage: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-." else "-" for c in vantage.lower()).strip("-.")
    return (VANTAGE_LEASE_PREFIX + safe)[:253]


def micro_now(now: float | None = None) -> str:
    return format_time(time.time() if now is None else now)


class Controller:
    """One replica: the prober, and the leader's decisions while it holds the leader Lease."""

    def __init__(self, settings: Settings, karmada: Client, host: Client, zone: ZoneWriter | None = None) -> None:
        self.s = settings
        self.karmada = karmada
        self.host = host
        self.zone = zone
        """Mode self-hosted: the writer of the fleet's own zone (None: external-dns writes the records)."""
        self.zone_checked = 0.0
        self.snapshot_serial: int | None = None
        self.fail_open = 0
        self.pending_names = 0
        self.targets: dict[str, Target] = {}
        self.names_known = False
        self.list_seq = 0
        """Successful Ingress lists so far: a name's absence is counted in lists, not in decision passes."""
        self.regions: dict[str, str] = {}
        self.region_absent: dict[str, tuple[int, float]] = {}
        """region -> (successful ConfigMap lists it was missing from, since when): see `refresh_inputs`."""
        self.counters: dict[str, Counter] = {}
        self.lock = threading.Lock()
        self.lease_rv: str | None = None
        self.last_round = 0.0
        """When observations were last written (a full round: readiness)."""
        self.last_loop = 0.0
        """When the probe loop last finished an iteration, whatever the API said (liveness)."""
        self.leader = False
        self.leader_seen: tuple[Any, ...] | None = None
        self.leader_seen_at = 0.0
        self.vantage_seen: dict[str, tuple[str, float]] = {}
        self.absent: dict[str, tuple[int, float]] = {}
        """name -> (list_seq, wall time) when the leader first saw its DNSEndpoint without an Ingress."""
        self.refusing = False
        self.ready = False
        self.stats: dict[str, float] = {"deletions_refused": 0, "write_failures": 0, "probes_skipped": 0,
                                        "round_seconds": 0.0}
        limit = raise_open_files_limit(settings.max_inflight + 256)
        self.prober = Prober(settings.timeout, settings.attempts, min(settings.max_inflight, max(16, limit - 128)))

    # ---------------------------------------------------------------- prober

    def refresh_inputs(self) -> None:
        try:
            hosts = published_hosts(self.karmada.request("GET", INGRESSES_PATH), self.s.domain, self.s.exclude)
            with self.lock:
                self.targets, self.names_known = hosts, True
                self.list_seq += 1
        except (ApiError, OSError, ValueError) as err:
            log.warning("listing Ingresses in karmada-apiserver failed, keeping %d names: %s", len(self.targets), err)
        try:
            path = CONFIGMAPS_PATH.format(namespace=self.s.namespace) + "?labelSelector=" + REGION_LABEL
            listed = region_addresses(self.host.request("GET", path))
        except (ApiError, OSError, ValueError) as err:
            log.warning("listing region ConfigMaps failed, keeping %d regions: %s", len(self.regions), err)
            return
        with self.lock:
            self.regions = self.merge_regions(listed, time.monotonic())

    def merge_regions(self, listed: Mapping[str, str], now: float) -> dict[str, str]:
        """The regions to probe after one successful list. A region missing from the list keeps its last address
        until it was missing from ABSENT_LISTS_BEFORE_DELETE lists in a row and for REGION_GRACE_PERIODS probe
        periods: a region ConfigMap that is replaced (deleted, then created by Pulumi) must not drop a healthy
        region from every name for the seconds in between. An empty list keeps every known region."""
        merged = dict(listed)
        for region, ip in self.regions.items():
            if region in listed:
                self.region_absent.pop(region, None)
                continue
            lists, since = self.region_absent.get(region, (0, now))
            lists += 1
            self.region_absent[region] = (lists, since)
            gone = lists >= ABSENT_LISTS_BEFORE_DELETE and now - since >= REGION_GRACE_PERIODS * self.s.period
            if listed and gone:
                log.info("region %s: no ConfigMap names it any more; no longer probed", region)
                del self.region_absent[region]
                continue
            if lists == 1:
                log.info("region %s: missing from the ConfigMap list; keeping %s for now", region, ip)
            merged[region] = ip
        return merged

    def probe_all(self) -> None:
        started = time.monotonic()
        with self.lock:
            jobs = [(obs_key(t.host, r), ip, self.s.https_port if t.tls else self.s.http_port, t)
                    for t in self.targets.values() for r, ip in self.regions.items()]
        # every pair at once, and the round ends before the next one is due
        results = self.prober.run(jobs, deadline=started + max(self.s.timeout, self.s.period - 0.05))
        skipped = sum(1 for e in results.values() if e == SKIPPED)
        with self.lock:
            self.stats["round_seconds"] = time.monotonic() - started
            self.stats["probes_skipped"] += skipped
            for key in list(self.counters):
                if key not in results:
                    del self.counters[key]
            for key, error in results.items():
                if error == SKIPPED:
                    continue
                counter = self.counters.setdefault(key, Counter())
                before = counter.failures
                counter.record(error)
                if error is not None and before == 0:
                    log.info("probe %s failed: %s", key, error)
                elif error is None and before > 0:
                    log.info("probe %s passes again after %d failed rounds", key, before)
        if skipped:
            log.warning("probe round ran out of time: %d of %d pairs not probed (counters kept)", skipped,
                        len(results))

    def observations(self) -> dict[str, Any]:
        with self.lock:
            return {"hosts": {h: {"tls": t.tls, "path": t.path} for h, t in sorted(self.targets.items())},
                    "regions": dict(sorted(self.regions.items())),
                    "obs": {k: [c.failures, c.successes, c.error] for k, c in sorted(self.counters.items())}}

    def write_observations(self) -> None:
        name = vantage_lease_name(self.s.vantage)
        base = LEASES_PATH.format(namespace=self.s.namespace)
        now = micro_now()
        lease: dict[str, Any] = {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": self.s.namespace, "labels": {VANTAGE_LABEL: name},
                         "annotations": {OBSERVATIONS_ANNOTATION: json.dumps(self.observations(), sort_keys=True)}},
            "spec": {"holderIdentity": self.s.identity, "leaseDurationSeconds": int(max(1, 3 * self.s.period)),
                     "renewTime": now},
        }
        if self.lease_rv is None:
            try:
                self.lease_rv = self.host.request("GET", f"{base}/{name}")["metadata"]["resourceVersion"]
            except ApiError as err:
                if err.status != 404:
                    raise
                self.lease_rv = self.host.request("POST", base, lease)["metadata"]["resourceVersion"]
                return
        lease["metadata"]["resourceVersion"] = self.lease_rv
        try:
            self.lease_rv = self.host.request("PUT", f"{base}/{name}", lease)["metadata"]["resourceVersion"]
        except ApiError as err:
            self.lease_rv = None  # re-read next round (409: someone else wrote it; 404: deleted)
            raise err

    def probe_loop(self, stop: threading.Event) -> None:
        next_round = time.monotonic()
        while not stop.is_set():
            try:
                self.refresh_inputs()
                self.probe_all()
                self.write_observations()
                self.last_round = time.monotonic()
            except (ApiError, OSError, ValueError) as err:
                log.warning("probe round failed: %s", err)
            self.last_loop = time.monotonic()
            next_round += self.s.period
            now = time.monotonic()
            if next_round < now:  # a round overran its period: skip, do not burst
                next_round = now + self.s.period
            stop.wait(max(0.0, next_round - now))

    # ---------------------------------------------------------------- leader

    def try_lead(self, decision_note: dict[str, Any] | None = None) -> bool:
        base = LEASES_PATH.format(namespace=self.s.namespace)
        now = micro_now()
        try:
            lease = self.host.request("GET", f"{base}/{LEADER_LEASE}")
        except ApiError as err:
            if err.status != 404:
                raise
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": LEADER_LEASE, "namespace": self.s.namespace},
                    "spec": {"holderIdentity": self.s.identity, "leaseDurationSeconds": int(self.s.lease_duration),
                             "acquireTime": now, "renewTime": now, "leaseTransitions": 0}}
            try:
                self.host.request("POST", base, body)
            except ApiError as create_err:
                if create_err.status == 409:
                    return False
                raise
            log.info("became leader (created %s)", LEADER_LEASE)
            return True
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        seen = (holder, spec.get("renewTime"), lease["metadata"].get("resourceVersion"))
        mono = time.monotonic()
        if seen != self.leader_seen:
            self.leader_seen, self.leader_seen_at = seen, mono
        expired = mono - self.leader_seen_at > float(spec.get("leaseDurationSeconds") or self.s.lease_duration)
        if holder != self.s.identity and holder and not expired:
            self.note_leader(lease)
            return False
        new_spec = dict(spec)
        if holder != self.s.identity:
            new_spec.update(holderIdentity=self.s.identity, acquireTime=now,
                            leaseTransitions=int(spec.get("leaseTransitions") or 0) + 1)
        new_spec.update(renewTime=now, leaseDurationSeconds=int(self.s.lease_duration))
        meta = dict(lease["metadata"])
        if decision_note is not None:
            meta["annotations"] = {**(meta.get("annotations") or {}),
                                   DECISION_ANNOTATION: json.dumps(decision_note, sort_keys=True)}
        try:
            updated = self.host.request("PUT", f"{base}/{LEADER_LEASE}", {**lease, "metadata": meta, "spec": new_spec})
        except ApiError as err:
            if err.status == 409:
                return False
            raise
        if holder != self.s.identity:
            log.info("became leader (took over from %r)", holder)
        self.leader_seen = (self.s.identity, now, updated["metadata"].get("resourceVersion"))
        self.leader_seen_at = mono
        return True

    def note_leader(self, lease: Mapping[str, Any]) -> None:
        """A follower is ready once the leader decided every name recently."""
        note = ((lease.get("metadata") or {}).get("annotations") or {}).get(DECISION_ANNOTATION)
        try:
            parsed = json.loads(note) if note else None
            recent = parsed is not None and time.time() - parse_time(parsed["at"]) < 3 * self.s.lease_duration
            self.ready = bool(recent and parsed["pending"] == 0 and self.last_round)
        except (ValueError, KeyError, TypeError):
            self.ready = False

    def stale_after(self) -> float:
        return 3 * self.s.period + self.s.decision_period

    def fresh_votes(self) -> dict[str, dict[str, list[Vote]]]:
        """host -> region -> votes of the vantage points whose Lease changed within three periods.

        Freshness is measured on the leader's own clock from the moment it saw a Lease's resourceVersion change.
        A Lease this leader has never seen before (it just became leader) is dated by its `renewTime` instead:
        a vantage point that died minutes ago left a Lease whose counts may say "all failing", and a new leader
        must not count that as a fresh vote for the next three periods."""
        items = self.host.request("GET", LEASES_PATH.format(namespace=self.s.namespace) + "?labelSelector="
                                  + VANTAGE_LABEL).get("items", [])
        mono, wall = time.monotonic(), time.time()
        window = self.stale_after()
        votes: dict[str, dict[str, list[Vote]]] = {}
        for lease in items:
            meta = lease.get("metadata") or {}
            name, rv = meta.get("name", ""), meta.get("resourceVersion", "")
            last = self.vantage_seen.get(name)
            if last is None:
                try:
                    age = max(0.0, wall - parse_time(str((lease.get("spec") or {}).get("renewTime") or "")))
                except ValueError:
                    age = float("inf")
                # a first sighting is as old as its renewTime says (less the skew we tolerate), never fresher
                self.vantage_seen[name] = (rv, mono - min(max(0.0, age - CLOCK_SKEW_SECONDS), window + 1))
                last = self.vantage_seen[name]
            elif last[0] != rv:
                self.vantage_seen[name] = (rv, mono)
                last = self.vantage_seen[name]
            if mono - last[1] > window:
                continue  # stale: this vantage point abstains
            try:
                data = json.loads((meta.get("annotations") or {}).get(OBSERVATIONS_ANNOTATION) or "{}")
            except ValueError:
                continue
            for key, (failures, successes, *_rest) in (data.get("obs") or {}).items():
                host, _, region = key.partition(" ")
                votes.setdefault(host, {}).setdefault(region, []).append(Vote(int(failures), int(successes)))
        return votes

    def decide_all(self) -> dict[str, Any]:
        """One leader pass: read votes and DNSEndpoints, decide every name, then write.

        Mode self-hosted writes the zone to every nameserver first (that is the clock clients wait for), then
        the DNSEndpoints (the record of the decisions, which the next leader starts from). A write that fails for
        one name (a 409 after external-dns' own status update, a 422) is logged and counted, and the pass goes on
        with the next name: one bad name never stops the others."""
        with self.lock:
            targets, names_known, regions = dict(self.targets), self.names_known, dict(self.regions)
            list_seq = self.list_seq
        if not regions:
            # No region known yet: nothing can be published and nothing is withdrawn. Every known name is
            # pending, so a fleet with names is not ready (external-dns must not switch to the CRD source and
            # delete their records), while a fresh fleet without names is.
            return {"at": micro_now(), "pending": len(targets) if names_known else -1}
        votes = self.fresh_votes()
        base = DNSENDPOINTS_PATH.format(namespace=self.s.namespace)
        existing, region_records = {}, {}
        for e in self.host.request("GET", f"{base}?labelSelector={MANAGED_BY_LABEL}%3D{MANAGED_BY}").get("items", []):
            is_region = REGION_LABEL in ((e.get("metadata") or {}).get("labels") or {})
            (region_records if is_region else existing)[e["metadata"]["name"]] = e
        now = time.time()
        waiting = failed = 0
        plan: list[tuple[str, Decision, Mapping[str, Any] | None, list[str], dict[str, str]]] = []
        for host in sorted(targets):
            current = existing.get(host)
            current_targets, withdrawn = endpoint_state(host, current)
            decision = decide(host, regions, current_targets, votes.get(host, {}), withdrawn,
                              vantage_points=self.s.vantage_points, failure_threshold=self.s.failure_threshold,
                              success_threshold=self.s.success_threshold, hold_down=self.s.hold_down, now=now)
            if decision is None:
                waiting += int(pending(host, regions, votes.get(host, {}), vantage_points=self.s.vantage_points,
                                       failure_threshold=self.s.failure_threshold))
                continue
            plan.append((host, decision, current, current_targets, withdrawn))
        deletions, refused = self.absent_names(existing, targets, names_known, list_seq, now)
        self.fail_open = sum(1 for _, d, *_ in plan if d.fail_open)
        if self.zone is not None:
            published = {name: endpoint_state(name, obj)[0] for name, obj in existing.items()
                         if name not in deletions}
            published.update({host: list(d.targets) for host, d, *_ in plan})
            self.publish_zone({h: t for h, t in published.items() if t}, regions)
        for host, decision, current, current_targets, withdrawn in plan:
            try:
                self.write_decision(host, decision, current, current_targets, withdrawn, base)
            except (ApiError, OSError, ValueError) as err:
                failed += 1
                self.stats["write_failures"] += 1
                waiting += 1
                log.warning("%s: decision not written: %s", host, err)
        failed += self.write_region_records({} if self.zone is not None else regions, region_records, base)
        for name in deletions:
            try:
                self.host.request("DELETE", f"{base}/{name}")
            except (ApiError, OSError) as err:
                self.stats["write_failures"] += 1
                log.warning("%s: DNSEndpoint not deleted: %s", name, err)
                continue
            log.info("%s: no Ingress names it any more; DNSEndpoint deleted", name)
            self.absent.pop(name, None)
        self.pending_names = waiting if names_known else 0
        note: dict[str, Any] = {"at": micro_now(now), "pending": waiting if names_known else -1}
        if failed:
            note["failed"] = failed
        if refused:
            note["deletionsRefused"] = refused
        if self.zone is not None and self.zone.in_step() == 0:
            note["pending"] = max(1, note["pending"])  # decided, but on no nameserver yet: not ready
        return note

    def publish_zone(self, names: Mapping[str, Sequence[str]], regions: Mapping[str, str]) -> None:
        assert self.zone is not None
        try:
            self.zone.publish(self.zone.desired(names, regions))
        except (ValueError, OSError) as err:
            log.warning("zone not written: %s", err)
            return
        self.write_snapshot()

    def write_snapshot(self) -> None:
        """The zone as published, for a nameserver that starts from nothing (agents/dns_zone_seed.py)."""
        assert self.zone is not None
        text = self.zone.snapshot_text()
        current = self.zone.current.serial if self.zone.current is not None else None
        if text is None or current == self.snapshot_serial or not self.s.snapshot_configmap:
            return
        path = CONFIGMAPS_PATH.format(namespace=self.s.snapshot_namespace)
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": self.s.snapshot_configmap, "namespace": self.s.snapshot_namespace,
                                             "labels": {MANAGED_BY_LABEL: MANAGED_BY}},
                                "data": {"zone": text}}
        try:
            try:
                old = self.host.request("GET", f"{path}/{self.s.snapshot_configmap}")
                body["metadata"]["resourceVersion"] = old["metadata"].get("resourceVersion")
                self.host.request("PUT", f"{path}/{self.s.snapshot_configmap}", body)
            except ApiError as err:
                if err.status != 404:
                    raise
                self.host.request("POST", path, body)
        except (ApiError, OSError) as err:
            log.warning("zone snapshot not written: %s", err)
            return
        self.snapshot_serial = current

    def write_decision(self, host: str, decision: Decision, current: Mapping[str, Any] | None,
                       current_targets: list[str], withdrawn: Mapping[str, str], base: str) -> None:
        was_fail_open = current is not None and FAIL_OPEN_ANNOTATION in (current["metadata"].get("annotations")
                                                                         or {})
        if current is not None and not decision.changed and decision.withdrawn == dict(withdrawn) and (
                decision.fail_open == was_fail_open):
            return
        if decision.fail_open and not was_fail_open:
            log.warning("%s: every region fails; keeping %s (fail open)", host, ", ".join(decision.targets))
        body = dnsendpoint(self.s.namespace, decision, self.s.ttl,
                           None if current is None else current["metadata"].get("resourceVersion"))
        if current is None:
            self.host.request("POST", base, body)
            log.info("%s: published %s", host, ", ".join(decision.regions))
        else:
            self.host.request("PUT", f"{base}/{host}", body)
            if decision.changed:
                log.info("%s: now %s (was %s)", host, ", ".join(decision.regions) or "-", ", ".join(current_targets))

    def write_region_records(self, regions: Mapping[str, str], current: Mapping[str, Any], base: str) -> int:
        """Mode hetzner: each region's drill record `<region>.lb.<domain>` as a DNSEndpoint of its own, which
        external-dns writes with the names (mode self-hosted puts it into the zone instead, `ZoneWriter.desired`,
        so here it gets none and a leftover one goes). The region and its address are the hub-granted ConfigMap's
        (`region_addresses`); a region no longer listed loses its record (`merge_regions` has already waited out a
        ConfigMap being replaced). Returns how many writes failed."""
        failed = 0
        want = {region_record_name(r, self.s.domain): (r, ip) for r, ip in regions.items()}
        for name, (region, ip) in sorted(want.items()):
            obj = current.get(name)
            if obj is not None and endpoint_state(name, obj)[0] == [ip]:
                continue
            body = region_dnsendpoint(self.s.namespace, region, self.s.domain, ip, self.s.ttl,
                                      None if obj is None else obj["metadata"].get("resourceVersion"))
            try:
                if obj is None:
                    self.host.request("POST", base, body)
                else:
                    self.host.request("PUT", f"{base}/{name}", body)
            except (ApiError, OSError) as err:
                failed += 1
                self.stats["write_failures"] += 1
                log.warning("%s: region record not written: %s", name, err)
                continue
            log.info("%s: region %s at %s", name, region, ip)
        for name in sorted(set(current) - set(want)):
            try:
                self.host.request("DELETE", f"{base}/{name}")
            except (ApiError, OSError) as err:
                failed += 1
                self.stats["write_failures"] += 1
                log.warning("%s: region record not deleted: %s", name, err)
        return failed

    def absent_names(self, existing: Mapping[str, Any], targets: Mapping[str, Target], names_known: bool,
                     list_seq: int, now: float) -> tuple[list[str], int]:
        """(names whose DNSEndpoint goes now, how many deletions were refused).

        Never while karmada-apiserver cannot be read (names_known), never after an empty list (Karmada's etcd
        being rebuilt answers an empty list, and deleting every record would blank the fleet), never more than
        half of the names at once (the same, partially), and a name only after it was missing from
        ABSENT_LISTS_BEFORE_DELETE successful lists in a row and for `delete_after` seconds."""
        gone = [name for name in existing if name not in targets]
        for name in list(self.absent):
            if name not in gone:
                del self.absent[name]
        if not names_known:
            return [], 0
        if not gone:
            self.refusing = False  # the list is whole again: a later refusal is said again
            return [], 0
        if not targets or len(gone) > max(1, len(existing) // 2):
            if not self.refusing:
                log.warning("%d of %d names are missing from the Ingress list; deleting none of them (an empty "
                            "or mostly empty list looks like a karmada-apiserver without its data)", len(gone),
                            len(existing))
            self.refusing = True
            self.stats["deletions_refused"] += 1
            for name in gone:
                self.absent.setdefault(name, (list_seq, now))
            return [], len(gone)
        self.refusing = False
        out = []
        for name in gone:
            first_seq, first_at = self.absent.setdefault(name, (list_seq, now))
            if list_seq - first_seq >= ABSENT_LISTS_BEFORE_DELETE and now - first_at >= self.s.delete_after:
                out.append(name)
        return out, 0

    def decision_loop(self, stop: threading.Event) -> None:
        note: dict[str, Any] | None = None
        while not stop.is_set():
            was_leader = self.leader
            try:
                self.leader = self.try_lead(note)
                if self.leader and not was_leader and self.zone is not None:
                    self.zone.current, self.zone.content = None, None  # a new leader re-syncs every server
                if self.leader and self.last_round:
                    note = self.decide_all()
                    self.ready = note["pending"] == 0
                elif not self.leader:
                    note = None
            except (ApiError, OSError, ValueError) as err:
                log.warning("decision pass failed: %s", err)
                self.leader = False
            stop.wait(self.s.decision_period)

    def zone_loop(self, stop: threading.Event) -> None:
        """Mode self-hosted, every replica: ask every nameserver for its serial (metrics: answering, lag); the
        leader also brings a primary that is behind up to date. Its own thread: a nameserver that does not answer
        costs a timeout here, never a decision."""
        while self.zone is not None and not stop.is_set():
            try:
                self.zone.check()
                if self.leader:
                    self.zone.reconcile()
                    self.write_snapshot()
            except Exception as err:  # a bug here must not stop the checks for good
                log.warning("zone check failed: %s", err)
            self.zone_checked = time.monotonic()
            stop.wait(self.s.zone_check_period)

    def healthy(self) -> bool:
        """Liveness: the probe loop is turning. Not whether its writes succeed: a hub API outage is not fixed by
        restarting the container (it would only crash-loop every prober into kubelet back-off)."""
        return bool(self.last_loop) and time.monotonic() - self.last_loop <= 3 * self.s.period + 30


def metrics(controller: Controller) -> str:
    """Prometheus text format (0.0.4): what the alerts in components/operations/alerts.py read. Per-nameserver
    series in mode self-hosted: every replica asks every nameserver (`up`, `serial`), the leader also says how
    long each has been behind the zone's current serial."""
    c = controller
    lines: list[str] = []

    def metric(name: str, kind: str, help_text: str, samples: Iterable[tuple[dict[str, str], float]]) -> None:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        for labels, value in samples:
            shown = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
            lines.append(f"{name}{{{shown}}} {value:g}" if shown else f"{name} {value:g}")

    metric("traffic_failover_leader", "gauge", "1 while this replica holds the leader Lease.",
           [({}, float(c.leader))])
    metric("traffic_failover_probe_round_seconds", "gauge", "Duration of the last probe round.",
           [({}, c.stats["round_seconds"])])
    metric("traffic_failover_last_round_timestamp_seconds", "gauge",
           "When this replica last wrote its observations (Unix time; 0: never).",
           [({}, time.time() - (time.monotonic() - c.last_round) if c.last_round else 0.0)])
    metric("traffic_failover_probes_skipped_total", "counter", "Pairs a probe round had no time to probe.",
           [({}, c.stats["probes_skipped"])])
    metric("traffic_failover_write_failures_total", "counter", "DNSEndpoint writes that failed.",
           [({}, c.stats["write_failures"])])
    metric("traffic_failover_deletions_refused_total", "counter",
           "Decision passes that refused to delete names missing from an empty or mostly empty Ingress list.",
           [({}, c.stats["deletions_refused"])])
    if c.leader:
        metric("traffic_failover_fail_open_names", "gauge",
               "Names kept published although every region fails (fail open).", [({}, float(c.fail_open))])
        metric("traffic_failover_pending_names", "gauge", "Names not decided yet.", [({}, float(c.pending_names))])
    z = c.zone
    if z is not None:
        roles = {**{s: "primary" for s in z.primaries}, **{s: "secondary" for s in z.secondaries}}
        with z.lock:
            states = {s: (st.up, st.serial, st.behind_since) for s, st in z.state.items()}
            current = z.current.serial if z.current is not None else None
        metric("traffic_failover_nameserver_up", "gauge", "1 if the nameserver answered the zone's SOA at the last "
               "check.", [({"nameserver": s, "role": roles[s]}, float(up)) for s, (up, _, _) in states.items()])
        metric("traffic_failover_nameserver_serial", "gauge", "The zone's SOA serial the nameserver answered last.",
               [({"nameserver": s, "role": roles[s]}, float(serial)) for s, (_, serial, _) in states.items()
                if serial is not None])
        if c.leader and current is not None:
            now = time.time()
            metric("traffic_failover_zone_serial", "gauge", "The zone's current serial (leader).",
                   [({}, float(current))])
            metric("traffic_failover_nameserver_behind_seconds", "gauge",
                   "Seconds the nameserver has not held the zone's current serial (0: in step).",
                   [({"nameserver": s, "role": roles[s]}, (now - behind) if behind is not None else 0.0)
                    for s, (_, _, behind) in states.items()])
            metric("traffic_failover_zone_updates_total", "counter", "Incremental UPDATEs sent.",
                   [({}, float(z.stats["updates"]))])
            metric("traffic_failover_zone_full_syncs_total", "counter", "Full syncs (AXFR and one UPDATE) sent.",
                   [({}, float(z.stats["full_syncs"]))])
            metric("traffic_failover_zone_update_failures_total", "counter", "Writes to a nameserver that failed.",
                   [({}, float(z.stats["update_failures"]))])
    return "\n".join(lines) + "\n"


def respond(controller: Controller, path: str) -> Response:
    """`/healthz` while the probe loop runs, `/readyz` once the leader decided every known name (mode
    self-hosted: and wrote the zone to a nameserver), `/metrics` (Prometheus); else 404."""
    if path == "/metrics":
        return 200, metrics(controller).encode(), "text/plain; version=0.0.4"
    if path == "/healthz":
        ok = controller.healthy()
    elif path == "/readyz":
        ok = controller.healthy() and controller.ready and bool(controller.last_round)
    else:
        return 404, b"", None
    return (200, b"ok\n", None) if ok else (503, b"not yet\n", None)


def serve_health(controller: Controller, port: int, host: str = "0.0.0.0") -> http.server.ThreadingHTTPServer:
    return serve(lambda path: respond(controller, path), port, host)


# ---------------------------------------------------------------------------------------------- main


SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--karmada-server", required=True)
    p.add_argument("--karmada-ca-file", required=True)
    p.add_argument("--karmada-cert-file", required=True)
    p.add_argument("--karmada-key-file", required=True)
    p.add_argument("--host-server", default="", help="default: in-cluster (KUBERNETES_SERVICE_HOST/PORT)")
    p.add_argument("--host-ca-file", default=f"{SA_DIR}/ca.crt")
    p.add_argument("--host-token-file", default=f"{SA_DIR}/token")
    p.add_argument("--namespace", required=True)
    p.add_argument("--vantage", required=True, help="this replica's vantage point (the hub server's node name)")
    p.add_argument("--identity", required=True, help="this replica's leader-election identity (the pod name)")
    p.add_argument("--domain", required=True)
    p.add_argument("--exclude", action="append", default=[], help="a subtree never published (repeatable)")
    p.add_argument("--ttl", type=int, required=True)
    p.add_argument("--period", type=float, default=5.0)
    p.add_argument("--timeout", type=float, default=2.0)
    p.add_argument("--attempts", type=int, default=2)
    p.add_argument("--failure-threshold", type=int, default=3)
    p.add_argument("--success-threshold", type=int, default=6)
    p.add_argument("--hold-down", type=float, default=60.0)
    p.add_argument("--vantage-points", type=int, default=3)
    p.add_argument("--decision-period", type=float, default=1.0)
    p.add_argument("--lease-duration", type=float, default=15.0)
    p.add_argument("--http-port", type=int, default=80)
    p.add_argument("--https-port", type=int, default=443)
    p.add_argument("--health-port", type=int, default=8080)
    p.add_argument("--delete-after", type=float, default=120.0,
                   help="seconds a name's Ingress must be gone (and three lists in a row) before its record goes")
    p.add_argument("--max-inflight", type=int, default=4096, help="most probe connections open at once")
    p.add_argument("--dns-mode", choices=("hetzner", "self-hosted"), default="hetzner",
                   help="hetzner: external-dns writes the DNSEndpoints' records; self-hosted: write the zone here")
    p.add_argument("--zone-config", default="", help="self-hosted: the zone's JSON (nameserver_docs.zone_config)")
    p.add_argument("--nameserver", action="append", default=[], help="self-hosted: a primary, host:port (repeatable)")
    p.add_argument("--secondary", action="append", default=[], help="self-hosted: a secondary to watch (repeatable)")
    p.add_argument("--tsig-name-file", default="")
    p.add_argument("--tsig-secret-file", default="")
    p.add_argument("--dns-timeout", type=float, default=2.0, help="self-hosted: one exchange with a nameserver")
    p.add_argument("--zone-check-period", type=float, default=5.0)
    p.add_argument("--snapshot-namespace", default="")
    p.add_argument("--snapshot-configmap", default="")
    return p.parse_args(argv)


def zone_writer(args: argparse.Namespace) -> ZoneWriter | None:
    if args.dns_mode != "self-hosted":
        return None
    if not (args.zone_config and args.nameserver and args.tsig_name_file and args.tsig_secret_file):
        raise SystemExit("--dns-mode=self-hosted needs --zone-config, --nameserver, --tsig-name-file and "
                         "--tsig-secret-file")
    with open(args.zone_config) as f:
        config = json.load(f)
    key = wire.TsigKey.from_files(args.tsig_name_file, args.tsig_secret_file)
    return ZoneWriter(config, args.nameserver, args.secondary, key, args.dns_timeout)


def settings_from(args: argparse.Namespace) -> Settings:
    if args.timeout >= args.period:
        raise SystemExit("--timeout must be below --period")
    return Settings(
        namespace=args.namespace, vantage=args.vantage, identity=args.identity, domain=args.domain.lower(),
        exclude=tuple(x.lower() for x in args.exclude), ttl=args.ttl, period=args.period, timeout=args.timeout,
        attempts=max(1, args.attempts), failure_threshold=args.failure_threshold,
        success_threshold=args.success_threshold, hold_down=args.hold_down, vantage_points=args.vantage_points,
        decision_period=args.decision_period, lease_duration=args.lease_duration, http_port=args.http_port,
        https_port=args.https_port, delete_after=args.delete_after, max_inflight=args.max_inflight,
        snapshot_namespace=args.snapshot_namespace, snapshot_configmap=args.snapshot_configmap,
        zone_check_period=args.zone_check_period)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    host_server = args.host_server or "https://{}:{}".format(
        os.environ["KUBERNETES_SERVICE_HOST"], os.environ.get("KUBERNETES_SERVICE_PORT", "443"))
    karmada = Client(args.karmada_server, args.karmada_ca_file, cert_file=args.karmada_cert_file,
                     key_file=args.karmada_key_file, timeout=5.0)
    host = Client(host_server, args.host_ca_file, token_file=args.host_token_file, timeout=5.0)
    controller = Controller(settings_from(args), karmada, host, zone_writer(args))
    serve_health(controller, args.health_port)
    stop = threading.Event()
    log.info("vantage %s probing every %ss for %s (karmada %s, host %s, dns mode %s)", args.vantage, args.period,
             args.domain, args.karmada_server, host_server, args.dns_mode)
    threading.Thread(target=controller.decision_loop, args=(stop,), daemon=True).start()
    if controller.zone is not None:
        threading.Thread(target=controller.zone_loop, args=(stop,), daemon=True).start()
    controller.probe_loop(stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
