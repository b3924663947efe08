"""Traffic failover controller: health-checked DNS for the fleet's names, independent of Karmada's detection.

This runs on the hub's host cluster, one replica per hub server (three vantage points). It is stdlib-only
because the file itself is the container's program: `components/traffic/failover_docs.py` mounts it from a
ConfigMap, with its helper `_incluster.py`, into a pinned Python image.

Every replica is a prober. Each round (every `--period` seconds) it

1. lists the Ingress templates in karmada-apiserver and keeps their hosts under `--domain` (the names the
   fleet publishes; wildcards and the Pulumi-owned `lb.<domain>` subtree are skipped);
2. lists the region ConfigMaps in its namespace on the host cluster (`karmada-hub.io/traffic-region`), each
   naming one region's load balancer address (written by the stack that owns the region);
3. probes every (name, region) pair through that region's load balancer the way a client would: TCP, TLS with
   SNI = the name when the Ingress has TLS for it, `GET <path>` with `Host: <name>`; `--attempts` new
   connections at once, and the round fails only if all of them fail (status outside 200-399 is a failure);
4. writes its consecutive failure/success counts into its own Lease (`traffic-failover-vantage-<node>`).

One replica holds the leader Lease and decides, every `--decision-period` seconds, from the Leases that are
fresh (their resourceVersion changed within three periods, measured on the leader's own clock):

- a published region is withdrawn when a majority of all `--vantage-points` report >= `--failure-threshold`
  failed rounds in a row; a region comes back when a majority report >= `--success-threshold` good rounds and
  `--hold-down` seconds have passed since it was withdrawn (hysteresis);
- a name never loses its last region (fail open): if every region of a name is down, or if no majority can be
  formed, the last published set stays, so a hub-side network problem cannot blank the zone;
- the decision is written as one DNSEndpoint per name in `--namespace` (externaldns.k8s.io/v1alpha1, never
  with an empty target list); external-dns, with `--source=crd` alone, is the only writer of the records.
  A name whose Ingress is gone loses its DNSEndpoint only after it was missing from three successful lists in
  a row, and never while karmada-apiserver cannot be read.

`/healthz` answers 200 while the probe loop runs; `/readyz` once the leader has decided every known name
(the program orders external-dns after this Deployment, so on first deploy external-dns switches to the CRD
source only after the DNSEndpoints exist: with `--policy=sync` it would otherwise delete the records).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime as dt
import http.server
import json
import logging
import os
import socket
import ssl
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from _incluster import ApiError, Client, Response, serve

INGRESSES_PATH = "/apis/networking.k8s.io/v1/ingresses"
LEASES_PATH = "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
CONFIGMAPS_PATH = "/api/v1/namespaces/{namespace}/configmaps"
DNSENDPOINTS_PATH = "/apis/externaldns.k8s.io/v1alpha1/namespaces/{namespace}/dnsendpoints"

REGION_LABEL = "karmada-hub.io/traffic-region"
"""Label of a region ConfigMap (value: the region); its data holds `lbIpv4`."""
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
ABSENT_PASSES_BEFORE_DELETE = 3
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
    is a claim on that region's names and is skipped (security review 2, M1)."""
    import ipaddress

    regions: dict[str, str] = {}
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
        if region:
            regions[region] = ip
    return regions


# ------------------------------------------------------------------------------------------ probes


def probe_once(ip: str, port: int, target: Target, timeout: float) -> str | None:
    """One attempt; None on success (status 200-399), else why it failed. The whole attempt is bounded by
    `timeout`. Certificates are not verified: a bad certificate is not a regional failure (Route 53's HTTPS
    checks do not validate them either), and the probe must follow the path clients take, not judge it."""
    deadline = time.monotonic() + timeout
    try:
        raw = socket.create_connection((ip, port), timeout=timeout)
    except OSError as err:
        return f"connect: {err.__class__.__name__}"
    try:
        sock: socket.socket = raw
        if target.tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            raw.settimeout(max(0.01, deadline - time.monotonic()))
            sock = context.wrap_socket(raw, server_hostname=target.host)
        request = (f"GET {target.path} HTTP/1.1\r\nHost: {target.host}\r\nUser-Agent: {USER_AGENT}\r\n"
                   "Accept: */*\r\nConnection: close\r\n\r\n").encode()
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        sock.sendall(request)
        line = b""
        while b"\r\n" not in line and len(line) < 1024:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            chunk = sock.recv(1024)
            if not chunk:
                break
            line += chunk
        parts = line.split(b"\r\n", 1)[0].split()
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
            return "no HTTP status line"
        status = int(parts[1])
        return None if 200 <= status < 400 else f"HTTP {status}"
    except (OSError, ssl.SSLError) as err:
        return f"{err.__class__.__name__}"
    finally:
        raw.close()


def probe_round(ip: str, port: int, target: Target, timeout: float, attempts: int,
                pool: concurrent.futures.Executor) -> str | None:
    """`attempts` new connections at once; the round passes if any passes (a regional LB may still send a share
    of connections to a dead member until its own health check drops it)."""
    futures = [pool.submit(probe_once, ip, port, target, timeout) for _ in range(attempts)]
    errors = [f.result() for f in futures]
    return None if any(e is None for e in errors) else errors[0]


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


def format_time(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(s: str) -> float:
    s = s.rstrip("Z")
    fmt = "%Y-%m-%dT%H:%M:%S.%f" if "." in s else "%Y-%m-%dT%H:%M:%S"
    return dt.datetime.strptime(s, fmt).replace(tzinfo=dt.UTC).timestamp()


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


def vantage_lease_name(vantage: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-." else "-" for c in vantage.lower()).strip("-.")
    return (VANTAGE_LEASE_PREFIX + safe)[:253]


def micro_now(now: float | None = None) -> str:
    return format_time(time.time() if now is None else now)


class Controller:
    """One replica: the prober, and the leader's decisions while it holds the leader Lease."""

    def __init__(self, settings: Settings, karmada: Client, host: Client) -> None:
        self.s = settings
        self.karmada = karmada
        self.host = host
        self.targets: dict[str, Target] = {}
        self.names_known = False
        self.regions: dict[str, str] = {}
        self.counters: dict[str, Counter] = {}
        self.lock = threading.Lock()
        self.lease_rv: str | None = None
        self.last_round = 0.0
        self.leader = False
        self.leader_seen: tuple[Any, ...] | None = None
        self.leader_seen_at = 0.0
        self.vantage_seen: dict[str, tuple[str, float]] = {}
        self.absent: dict[str, int] = {}
        self.ready = False
        self.rounds = concurrent.futures.ThreadPoolExecutor(max_workers=32, thread_name_prefix="round")
        self.attempts = concurrent.futures.ThreadPoolExecutor(max_workers=32 * settings.attempts,
                                                              thread_name_prefix="attempt")
        """Two pools: a round waits for its attempts, so they must never compete for the same workers."""

    # ---------------------------------------------------------------- prober

    def refresh_inputs(self) -> None:
        try:
            hosts = published_hosts(self.karmada.request("GET", INGRESSES_PATH), self.s.domain, self.s.exclude)
            with self.lock:
                self.targets, self.names_known = hosts, True
        except (ApiError, OSError, ValueError) as err:
            log.warning("listing Ingresses in karmada-apiserver failed, keeping %d names: %s", len(self.targets), err)
        try:
            path = CONFIGMAPS_PATH.format(namespace=self.s.namespace) + "?labelSelector=" + REGION_LABEL
            regions = region_addresses(self.host.request("GET", path))
            with self.lock:
                self.regions = regions
        except (ApiError, OSError, ValueError) as err:
            log.warning("listing region ConfigMaps failed, keeping %d regions: %s", len(self.regions), err)

    def probe_all(self) -> None:
        with self.lock:
            pairs = [(t, r, ip) for t in self.targets.values() for r, ip in self.regions.items()]
        futures = {}
        for target, region, ip in pairs:
            port = self.s.https_port if target.tls else self.s.http_port
            futures[obs_key(target.host, region)] = self.rounds.submit(
                probe_round, ip, port, target, self.s.timeout, self.s.attempts, self.attempts)
        results = {key: f.result() for key, f in futures.items()}
        with self.lock:
            for key in list(self.counters):
                if key not in results:
                    del self.counters[key]
            for key, error in results.items():
                counter = self.counters.setdefault(key, Counter())
                before = counter.failures
                counter.record(error)
                if error is not None and before == 0:
                    log.info("probe %s failed: %s", key, error)
                elif error is None and before > 0:
                    log.info("probe %s passes again after %d failed rounds", key, before)

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

    def fresh_votes(self) -> dict[str, dict[str, list[Vote]]]:
        """host -> region -> votes of the vantage points whose Lease changed within three periods."""
        items = self.host.request("GET", LEASES_PATH.format(namespace=self.s.namespace) + "?labelSelector="
                                  + VANTAGE_LABEL).get("items", [])
        mono = time.monotonic()
        votes: dict[str, dict[str, list[Vote]]] = {}
        for lease in items:
            meta = lease.get("metadata") or {}
            name, rv = meta.get("name", ""), meta.get("resourceVersion", "")
            last = self.vantage_seen.get(name)
            if last is None or last[0] != rv:
                self.vantage_seen[name] = (rv, mono)
                last = self.vantage_seen[name]
            if mono - last[1] > 3 * self.s.period + self.s.decision_period:
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
        """One leader pass: read votes and DNSEndpoints, write what changed. Returns the decision note."""
        with self.lock:
            targets, names_known, regions = dict(self.targets), self.names_known, dict(self.regions)
        if not regions:
            # No region known yet: nothing can be published and nothing is withdrawn. Every known name is
            # pending, so a fleet with names is not ready (external-dns must not switch to the CRD source and
            # delete their records), while a fresh fleet without names is.
            return {"at": micro_now(), "pending": len(targets) if names_known else -1}
        votes = self.fresh_votes()
        base = DNSENDPOINTS_PATH.format(namespace=self.s.namespace)
        existing = {e["metadata"]["name"]: e for e in self.host.request(
            "GET", f"{base}?labelSelector={MANAGED_BY_LABEL}%3D{MANAGED_BY}").get("items", [])}
        now = time.time()
        waiting = 0
        for host in sorted(targets):
            current = existing.get(host)
            current_targets: list[str] = []
            withdrawn: dict[str, str] = {}
            if current is not None:
                for ep in (current.get("spec") or {}).get("endpoints") or []:
                    if ep.get("dnsName") == host and ep.get("recordType") == "A":
                        current_targets = list(ep.get("targets") or [])
                try:
                    withdrawn = json.loads(((current["metadata"].get("annotations") or {})
                                            .get(WITHDRAWN_ANNOTATION)) or "{}")
                except ValueError:
                    withdrawn = {}
            decision = decide(host, regions, current_targets, votes.get(host, {}), withdrawn,
                              vantage_points=self.s.vantage_points, failure_threshold=self.s.failure_threshold,
                              success_threshold=self.s.success_threshold, hold_down=self.s.hold_down, now=now)
            if decision is None:
                if pending(host, regions, votes.get(host, {}), vantage_points=self.s.vantage_points,
                           failure_threshold=self.s.failure_threshold):
                    waiting += 1
                continue
            was_fail_open = current is not None and FAIL_OPEN_ANNOTATION in (current["metadata"].get("annotations")
                                                                             or {})
            old_withdrawn = withdrawn
            if current is not None and not decision.changed and decision.withdrawn == old_withdrawn and (
                    decision.fail_open == was_fail_open):
                continue
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
                    log.info("%s: now %s (was %s)", host, ", ".join(decision.regions) or "-",
                             ", ".join(current_targets))
        for name in existing:
            if name in targets or not names_known:
                self.absent.pop(name, None)
                continue
            self.absent[name] = self.absent.get(name, 0) + 1
            if self.absent[name] >= ABSENT_PASSES_BEFORE_DELETE:
                self.host.request("DELETE", f"{base}/{name}")
                log.info("%s: no Ingress names it any more; DNSEndpoint deleted", name)
                del self.absent[name]
        return {"at": micro_now(now), "pending": waiting if names_known else -1}

    def decision_loop(self, stop: threading.Event) -> None:
        note: dict[str, Any] | None = None
        while not stop.is_set():
            try:
                self.leader = self.try_lead(note)
                if self.leader and self.last_round:
                    note = self.decide_all()
                    self.ready = note["pending"] == 0
                elif not self.leader:
                    note = None
            except (ApiError, OSError, ValueError) as err:
                log.warning("decision pass failed: %s", err)
                self.leader = False
            stop.wait(self.s.decision_period)

    def healthy(self) -> bool:
        return bool(self.last_round) and time.monotonic() - self.last_round <= 3 * self.s.period + 30


def respond(controller: Controller, path: str) -> Response:
    """`/healthz` while the probe loop runs, `/readyz` once the leader decided every known name; else 404."""
    if path == "/healthz":
        ok = controller.healthy()
    elif path == "/readyz":
        ok = controller.healthy() and controller.ready
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
    return p.parse_args(argv)


def settings_from(args: argparse.Namespace) -> Settings:
    if args.timeout >= args.period:
        raise SystemExit("--timeout must be below --period")
    return Settings(
        namespace=args.namespace, vantage=args.vantage, identity=args.identity, domain=args.domain.lower(),
        exclude=tuple(x.lower() for x in args.exclude), ttl=args.ttl, period=args.period, timeout=args.timeout,
        attempts=max(1, args.attempts), failure_threshold=args.failure_threshold,
        success_threshold=args.success_threshold, hold_down=args.hold_down, vantage_points=args.vantage_points,
        decision_period=args.decision_period, lease_duration=args.lease_duration, http_port=args.http_port,
        https_port=args.https_port)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    host_server = args.host_server or "https://{}:{}".format(
        os.environ["KUBERNETES_SERVICE_HOST"], os.environ.get("KUBERNETES_SERVICE_PORT", "443"))
    karmada = Client(args.karmada_server, args.karmada_ca_file, cert_file=args.karmada_cert_file,
                     key_file=args.karmada_key_file, timeout=5.0)
    host = Client(host_server, args.host_ca_file, token_file=args.host_token_file, timeout=5.0)
    controller = Controller(settings_from(args), karmada, host)
    serve_health(controller, args.health_port)
    stop = threading.Event()
    log.info("vantage %s probing every %ss for %s (karmada %s, host %s)", args.vantage, args.period, args.domain,
             args.karmada_server, host_server)
    threading.Thread(target=controller.decision_loop, args=(stop,), daemon=True).start()
    controller.probe_loop(stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
