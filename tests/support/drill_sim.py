"""The simulated fleet `hubctl drill` runs against: `fleet_sim.World` plus what a drill touches besides DNS.

- the fake karmada-apiserver plays Karmada: it has the stack's Clusters (Ready, no taints); when the drill
  creates its PropagationPolicy it schedules a ResourceBinding onto the policy's clusters, mirrors the
  Deployment into the members' fake API servers (ready replicas), and makes the regions serve the Ingress host;
- a fake Hetzner API (servers by label selector, poweroff/poweron actions) whose poweroff of the victim's
  servers is the cue: the victim region's endpoint dies, its member API goes dark, and `Script` plays Karmada's
  reaction on a timeline (Ready=False + NoSchedule, NoExecute, the binding loses the member); poweron plays
  the way back;
- a fake CAPI management API with the member's Cluster (the drill pauses and unpauses it);
- kubeconfigs for all of them in one directory, as `hubctl drill --kubeconfigs` expects.
"""

from __future__ import annotations

import base64
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.support.fake_apiserver import FakeApiServer, Key, User
from tests.support.fleet_sim import ADMIN, ADMIN_TOKEN, World
from tests.support.httpfake import Handler, LoopbackServer
from tests.support.rbac import ALLOW_ALL

DRILL_NS = "karmada-hub-drill"


@dataclass(frozen=True)
class Script:
    """Seconds after the victim's servers power off (kill) or on (restore) at which the fake Karmada acts."""

    ready_false: float = 1.0
    noexecute: float = 1.4
    evict: float = 1.8
    ready_true: float = 0.8
    binding_back: float = 1.2


class FakeHetzner:
    """`/v1/servers?label_selector=`, `/v1/servers/{id}/actions/poweroff|poweron`, `/v1/actions/{id}`."""

    def __init__(self, token: str, servers: list[dict[str, Any]], on_power: Callable[[dict[str, Any], str], None]
                 ) -> None:
        self.servers = {s["id"]: s for s in servers}
        self.calls: list[tuple[str, str]] = []
        self.unauthorized = 0
        fake = self

        class HetznerHandler(Handler):
            def _auth(self) -> bool:
                self.body()  # read (and ignore) any body: the connection is kept alive
                if self.headers.get("Authorization") != f"Bearer {token}":
                    fake.unauthorized += 1
                    self.reply_json(401, {"error": {"code": "unauthorized"}})
                    return False
                fake.calls.append((self.command, self.path))
                return True

            def do_GET(self) -> None:  # noqa: N802 - http.server names it
                if not self._auth():
                    return
                url = urllib.parse.urlsplit(self.path)
                if url.path == "/v1/servers":
                    selector = dict(urllib.parse.parse_qsl(url.query)).get("label_selector", "")
                    terms = [t.split("=", 1) for t in selector.split(",") if t]
                    found = [s for s in fake.servers.values() if all(s["labels"].get(k) == v for k, v in terms)]
                    return self.reply_json(200, {"servers": found, "meta": {"pagination": {"next_page": None}}})
                if url.path.startswith("/v1/actions/"):
                    action = int(url.path.rsplit("/", 1)[1])
                    return self.reply_json(200, {"action": {"id": action, "status": "success"}})
                self.reply_json(404, {"error": {"code": "not_found"}})

            def do_POST(self) -> None:  # noqa: N802 - http.server names it
                if not self._auth():
                    return
                parts = self.path.strip("/").split("/")
                if len(parts) == 5 and parts[1] == "servers" and parts[3] == "actions":
                    server = fake.servers[int(parts[2])]
                    command = parts[4]
                    server["status"] = "off" if command == "poweroff" else "running"
                    on_power(server, command)
                    return self.reply_json(201, {"action": {"id": len(fake.calls), "command": command,
                                                             "status": "running"}})
                self.reply_json(404, {"error": {"code": "not_found"}})

        self.server = LoopbackServer(HetznerHandler)
        self.url = f"{self.server.url}/v1"

    def close(self) -> None:
        self.server.close()


class DrillFleet:
    """`World` + Karmada's reactions + members + CAPI + Hetzner, for the dev stack's two members."""

    def __init__(self, tmp: Path, config: Any, script: Script = Script()) -> None:
        self.config = config
        self.script = script
        self.members = {m.name: m for m in config.members}
        regions: dict[str, list[str]] = {}
        for m in config.members:
            regions.setdefault(m.region, []).append(m.name)
        self.world = World(tmp, config.dns.domain, regions)
        w = self.world
        w.karmada.hooks.append(self._karmada_write)
        w.karmada.tokens[ADMIN_TOKEN] = User(ADMIN)
        self.member_api = {name: self._admin_only_api() for name in self.members}
        self.capi = self._admin_only_api()
        servers = []
        for i, m in enumerate(config.members):
            self.capi.put("cluster.x-k8s.io", "clusters", {
                "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
                "metadata": {"name": m.credentials.cluster, "namespace": m.credentials.namespace},
                "spec": {"paused": False}})
            for j, kind in enumerate(("control_plane", "worker")):
                servers.append({"id": 100 * (i + 1) + j, "name": f"{m.name}-{kind}", "status": "running",
                                "labels": {f"caph-cluster-{m.credentials.cluster}": "owned", "machine_type": kind}})
        self.hetzner = FakeHetzner("sim-token", servers, self._power)
        self.timers: list[threading.Timer] = []
        self.cues: list[tuple[str, str, float]] = []
        self.paused_during_kill: bool | None = None
        for m in config.members:
            w.karmada.put("cluster.karmada.io", "clusters", {
                "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": m.name},
                "spec": {"syncMode": m.sync_mode, "region": m.region, "taints": []},
                "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady"}]}})

    def _admin_only_api(self) -> FakeApiServer:
        """A member or the CAPI management cluster: the drill's admin token, allowed everything."""
        tls = self.world.tls
        return FakeApiServer(tls["server.crt"], tls["server.key"], tokens={ADMIN_TOKEN: User(ADMIN)},
                             grants={ADMIN: ALLOW_ALL})

    # ------------------------------------------------------------------ Karmada's part

    def _karmada_write(self, method: str, key: Key, obj: dict[str, Any], _user: User) -> None:
        _, resource, namespace, name = key
        if namespace != DRILL_NS:
            return
        if resource == "propagationpolicies" and method in ("create", "update"):
            clusters = obj["spec"]["placement"]["clusterAffinity"]["clusterNames"]
            self._binding(clusters)
        elif resource == "deployments" and method in ("create", "update"):
            replicas = obj["spec"].get("replicas", 1)
            for api in self.member_api.values():
                api.put("apps", "deployments", {**obj, "status": {"replicas": replicas, "readyReplicas": replicas}})
        elif resource == "ingresses" and method in ("create", "update"):
            for rule in obj["spec"]["rules"]:
                self.world.serve(rule["host"])
        elif method == "delete":
            if resource == "ingresses":
                for region in self.world.regions.values():
                    region.hosts.difference_update(r["host"] for r in obj["spec"]["rules"])
            if resource == "propagationpolicies":
                self.world.karmada.remove("work.karmada.io", "resourcebindings", DRILL_NS, "drill-deployment")
            if resource == "deployments":
                for api in self.member_api.values():
                    api.remove("apps", "deployments", DRILL_NS, name)

    def _binding(self, clusters: list[str]) -> None:
        self.world.karmada.put("work.karmada.io", "resourcebindings", {
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": "drill-deployment", "namespace": DRILL_NS},
            "spec": {"clusters": [{"name": c} for c in sorted(clusters)], "replicaRequirements": {}}})

    def _cluster(self, name: str, ready: str, taints: list[dict[str, Any]]) -> None:
        obj = self.world.karmada.get("cluster.karmada.io", "clusters", "", name)
        assert obj is not None
        obj["status"]["conditions"] = [{"type": "Ready", "status": ready}]
        obj["spec"]["taints"] = taints
        self.world.karmada.put("cluster.karmada.io", "clusters", obj)

    def _later(self, delay: float, label: str, member: str, fn: Callable[[], None]) -> None:
        def run() -> None:
            fn()
            self.cues.append((label, member, time.monotonic()))

        t = threading.Timer(delay, run)
        t.daemon = True
        t.start()
        self.timers.append(t)

    def _power(self, server: dict[str, Any], command: str) -> None:
        member = next(m for m in self.members.values()
                      if server["labels"].get(f"caph-cluster-{m.credentials.cluster}") == "owned")
        name, region, s = member.name, member.region, self.script
        others = sorted(n for n in self.members if n != name)
        if command == "poweroff":
            if self.world.regions[region].mode == "alive":
                self.cues.append(("poweroff", name, time.monotonic()))
                cluster = self.capi.get("cluster.x-k8s.io", "clusters", member.credentials.namespace,
                                        member.credentials.cluster)
                self.paused_during_kill = bool(cluster and cluster["spec"].get("paused"))
                self.world.regions[region].kill()
                self.member_api[name].down = True
                not_ready = [{"key": "cluster.karmada.io/not-ready", "effect": "NoSchedule",
                              "timeAdded": "2026-12-01T00:00:00Z"}]
                self._later(s.ready_false, "ready_false", name, lambda: self._cluster(name, "False", not_ready))
                self._later(s.noexecute, "noexecute", name, lambda: self._cluster(name, "False", [
                    *not_ready, {"key": "fleet.karmada-hub.io/not-ready", "effect": "NoExecute",
                                 "timeAdded": "2026-12-01T00:00:00Z"}]))
                self._later(s.evict, "evict", name, lambda: self._binding(others))
        elif self.world.regions[region].mode != "alive":
            self.cues.append(("poweron", name, time.monotonic()))
            self.world.regions[region].revive()
            self.member_api[name].down = False
            self._later(s.ready_true, "ready_true", name, lambda: self._cluster(name, "True", []))
            self._later(s.binding_back, "binding_back", name, lambda: self._binding(sorted(self.members)))

    # ------------------------------------------------------------------ kubeconfigs

    def kubeconfigs(self, directory: Path) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        ca = base64.b64encode(Path(self.world.tls["ca"]).read_bytes()).decode()

        def write(name: str, server: str, user: dict[str, Any]) -> None:
            doc = {"apiVersion": "v1", "kind": "Config", "current-context": name,
                   "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority-data": ca}}],
                   "users": [{"name": name, "user": user}],
                   "contexts": [{"name": name, "context": {"cluster": name, "user": name}}]}
            (directory / f"{name}.kubeconfig").write_text(yaml.safe_dump(doc))

        tls = self.world.tls
        write("karmada", self.world.karmada.url, {
            "client-certificate-data": base64.b64encode(Path(tls[f"{ADMIN}.crt"]).read_bytes()).decode(),
            "client-key-data": base64.b64encode(Path(tls[f"{ADMIN}.key"]).read_bytes()).decode()})
        write("hub", self.world.host.url, {"token": ADMIN_TOKEN})
        write("capi-management", self.capi.url, {"token": ADMIN_TOKEN})
        for name, api in self.member_api.items():
            write(name, api.url, {"token": ADMIN_TOKEN})
        return directory

    def cue(self, label: str) -> float | None:
        return next((t for lbl, _, t in self.cues if lbl == label), None)

    def close(self) -> None:
        for t in self.timers:
            t.cancel()
        self.hetzner.close()
        self.capi.close()
        for api in self.member_api.values():
            api.close()
        self.world.close()
