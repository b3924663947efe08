"""A simulated fleet on loopback for the failover controller and `hubctl drill` tests.

- `host`: a fake hub host API (Leases, DNSEndpoints, ConfigMaps; RBAC of the rendered Roles) — bearer tokens;
- `karmada`: a fake karmada-apiserver (Ingresses, Clusters with conditions and taints, ResourceBindings) — client
  certificates, RBAC of the rendered ClusterRoles;
- `regions`: one `RegionEndpoint` per region (the regional LBs), all on one random port;
- `dns` + `resolver`: a real authoritative DNS server for the zone and a caching resolver in front of it;
- `external_dns`: a stand-in for external-dns with the CRD source: it watches the DNSEndpoints (by polling) and
  writes their targets into the authoritative zone `sync_delay` seconds after each change, setting
  `status.observedGeneration` when it reads them (as the v0.22.0 CRD source does);
- `controllers`: the real `agents/traffic_failover.py` Controller, one per vantage point, in threads.

Everything stops on `close()`; every loop is bounded by a stop event.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents import traffic_failover as tf
from components.traffic import failover_docs
from tests.support.fake_apiserver import FakeApiServer, User
from tests.support.loopback import (
    AuthoritativeDns,
    CachingResolver,
    RegionEndpoint,
    free_port,
    random_loopback,
    tls_material,
)
from tests.support.rbac import ALLOW_ALL, Grant

NAMESPACE = failover_docs.NAMESPACE
HOST_TOKEN = "failover-token"
ADMIN_TOKEN = "admin-token"
ADMIN = "admin"


class FakeExternalDns:
    """DNSEndpoints in `host` -> records in `dns`, `sync_delay` seconds after each change."""

    def __init__(self, host: FakeApiServer, dns: AuthoritativeDns, sync_delay: float, poll: float = 0.05) -> None:
        self.host, self.dns, self.delay, self.poll = host, dns, sync_delay, poll
        self.stop = threading.Event()
        self.seen: dict[str, tuple[tuple[str, ...], int]] = {}
        self.timers: list[threading.Timer] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.wait(self.poll):
            current: dict[str, tuple[tuple[str, ...], int]] = {}
            for obj in self.host.items("externaldns.k8s.io", "dnsendpoints", NAMESPACE):
                labels = obj["metadata"].get("labels") or {}
                if labels.get("app.kubernetes.io/managed-by") != failover_docs.MANAGED_BY:
                    continue  # --label-filter
                for ep in obj["spec"]["endpoints"]:
                    assert ep["targets"], "external-dns must never be handed an empty target list"
                    current[ep["dnsName"]] = (tuple(sorted(ep["targets"])), int(ep.get("recordTTL") or 0))
                if (obj.get("status") or {}).get("observedGeneration") != obj["metadata"]["generation"]:
                    obj["status"] = {"observedGeneration": obj["metadata"]["generation"]}
                    self.host.put("externaldns.k8s.io", "dnsendpoints", obj)
            for name in set(current) | set(self.seen):
                if current.get(name) != self.seen.get(name):
                    ips, ttl = current.get(name, ((), 0))
                    timer = threading.Timer(self.delay, self.dns.set, args=(name, ips, ttl))
                    timer.daemon = True
                    timer.start()
                    self.timers.append(timer)
            self.seen = current

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=2)
        for t in self.timers:
            t.cancel()


@dataclass
class Timing:
    """Scaled-down controller settings (seconds)."""

    period: float = 0.3
    timeout: float = 0.2
    attempts: int = 2
    failure_threshold: int = 3
    success_threshold: int = 4
    hold_down: float = 1.5
    decision_period: float = 0.1
    lease_duration: float = 1.0
    sync_delay: float = 0.3
    ttl: int = 60
    ttl_scale: float = 0.02
    """The resolver keeps a 60 s answer 60 * 0.02 = 1.2 s."""
    delete_after: float = 0.5
    """Seconds a name's Ingress must be gone before its DNSEndpoint goes (the program renders minutes)."""


@dataclass
class World:
    tmp: Path
    domain: str
    regions_members: Mapping[str, Iterable[str]]
    timing: Timing = field(default_factory=Timing)
    karmada_grants: dict[str, Grant] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.tls = tls_material(self.tmp, clients=[failover_docs.USER, ADMIN])
        self.host = FakeApiServer(self.tls["server.crt"], self.tls["server.key"],
                                  tokens={HOST_TOKEN: User("failover"), ADMIN_TOKEN: User(ADMIN)},
                                  grants={"failover": Grant([dict(r) for r in failover_docs.HOST_RULES], NAMESPACE),
                                          ADMIN: ALLOW_ALL})
        karmada_role = failover_docs.karmada_rbac()[0]
        self.karmada = FakeApiServer(self.tls["server.crt"], self.tls["server.key"], client_ca=self.tls["ca"],
                                     grants={failover_docs.USER: Grant(karmada_role["rules"]), ADMIN: ALLOW_ALL,
                                             **self.karmada_grants})
        names = sorted(self.regions_members)
        addresses = random_loopback(len(names))
        self.port = free_port(addresses)
        self.regions = {r: RegionEndpoint(r, a, self.port) for r, a in zip(names, addresses, strict=True)}
        for region, endpoint in self.regions.items():
            self.host.put("", "configmaps", failover_docs.region_configmap(
                region, endpoint.address, list(self.regions_members[region])))
        self.dns = AuthoritativeDns(self.domain)
        self.resolver = CachingResolver(self.dns, self.timing.ttl_scale)
        self.external_dns = FakeExternalDns(self.host, self.dns, self.timing.sync_delay)
        self.controllers: list[tf.Controller] = []
        self.stops: list[threading.Event] = []
        self.threads: list[threading.Thread] = []
        self.token_file = self.tmp / "host-token"
        self.token_file.write_text(HOST_TOKEN)

    # ------------------------------------------------------------------ tenants

    def add_ingress(self, namespace: str, name: str, host: str, tls: bool = False) -> None:
        spec: dict[str, Any] = {"rules": [{"host": host, "http": {"paths": []}}]}
        if tls:
            spec["tls"] = [{"hosts": [host]}]
        self.karmada.put("networking.k8s.io", "ingresses", {
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec})

    def serve(self, host: str, regions: Iterable[str] | None = None) -> None:
        for r in regions or self.regions:
            self.regions[r].hosts.add(host)

    # ------------------------------------------------------------------ controllers

    def settings(self, vantage: str, **overrides: Any) -> tf.Settings:
        t = self.timing
        values: dict[str, Any] = dict(
            namespace=NAMESPACE, vantage=vantage, identity=f"pod-{vantage}", domain=self.domain,
            exclude=(f"lb.{self.domain}",), ttl=t.ttl, period=t.period, timeout=t.timeout, attempts=t.attempts,
            failure_threshold=t.failure_threshold, success_threshold=t.success_threshold, hold_down=t.hold_down,
            vantage_points=3, decision_period=t.decision_period, lease_duration=t.lease_duration,
            http_port=self.port, https_port=self.port, delete_after=t.delete_after)
        values.update(overrides)
        known = {f.name for f in dataclasses.fields(tf.Settings)}
        return tf.Settings(**{k: v for k, v in values.items() if k in known})

    def karmada_client(self) -> tf.Client:
        user = failover_docs.USER.replace(":", "_")
        return tf.Client(self.karmada.url, str(self.tls["ca"]), cert_file=str(self.tls[f"{user}.crt"]),
                         key_file=str(self.tls[f"{user}.key"]), timeout=2)

    def host_client(self) -> tf.Client:
        return tf.Client(self.host.url, str(self.tls["ca"]), token_file=str(self.token_file), timeout=2)

    def start_controllers(self, vantages: Iterable[str] = ("hub-1", "hub-2", "hub-3"),
                          overrides: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        for vantage in vantages:
            settings = self.settings(vantage, **dict((overrides or {}).get(vantage, {})))
            controller = tf.Controller(settings, self.karmada_client(), self.host_client())
            stop = threading.Event()
            self.controllers.append(controller)
            self.stops.append(stop)
            for target in (controller.probe_loop, controller.decision_loop):
                thread = threading.Thread(target=target, args=(stop,), daemon=True)
                thread.start()
                self.threads.append(thread)

    def stop_controller(self, index: int) -> None:
        self.stops[index].set()

    # ------------------------------------------------------------------ reading

    def published(self, host: str) -> tuple[str, ...] | None:
        """The regions the DNSEndpoint for `host` names now (None: no DNSEndpoint)."""
        obj = self.host.get("externaldns.k8s.io", "dnsendpoints", NAMESPACE, host)
        if obj is None:
            return None
        by_ip = {e.address: r for r, e in self.regions.items()}
        (ep,) = obj["spec"]["endpoints"]
        return tuple(sorted(by_ip.get(ip, ip) for ip in ep["targets"]))

    def dnsendpoint(self, host: str) -> dict[str, Any] | None:
        return self.host.get("externaldns.k8s.io", "dnsendpoints", NAMESPACE, host)

    def leader(self) -> str | None:
        lease = self.host.get("coordination.k8s.io", "leases", NAMESPACE, tf.LEADER_LEASE)
        return None if lease is None else lease["spec"].get("holderIdentity")

    def close(self) -> None:
        for stop in self.stops:
            stop.set()
        deadline = time.monotonic() + 5
        for thread in self.threads:
            thread.join(timeout=max(0.1, deadline - time.monotonic()))
        self.external_dns.close()
        for e in self.regions.values():
            e.close()
        self.dns.close()
        self.resolver.close()
        self.host.close()
        self.karmada.close()
