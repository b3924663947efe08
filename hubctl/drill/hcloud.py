"""The Hetzner Cloud API calls the drill makes, and the ways it can kill a member (`--method`).

The token is `HCLOUD_TOKEN` (the variable the `hcloud` CLI reads); it is sent in one header and never printed.
`HCLOUD_ENDPOINT` (or `--hcloud-endpoint`) points elsewhere, for tests.

Kill methods, each reversible (`restore()` undoes exactly what `kill()` did):

- `poweroff` (default): pause the member's CAPI Cluster (`spec.paused`, so MachineHealthCheck/CAPH do not
  replace the machines), then `POST /servers/{id}/actions/poweroff` for every server of the member
  (`caph-cluster-<cluster>=owned`); restore powers them on and unpauses. Both the member's API and its ingress
  die for real, whatever the network topology.
- `firewall`: a deny-all Cloud Firewall (no inbound rule, one outbound rule to a TEST-NET address so outbound
  turns implicit-deny) applied to the member's servers by label selector; restore removes and deletes it.
  Hetzner firewalls filter the servers' *public* interfaces only, so where the region's LB and the member's API
  LB reach the servers over the private network (`regions.<r>.networkId`, every example stack), it kills
  neither; the drill refuses it there.
- `lb-detach`: remove the member's target from its region's LB (`fleet-<region>`); restore adds it back. Kills
  the member's ingress only: the traffic clock is measured, the Karmada phases are not expected to fire.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any, Protocol

from hubctl.drill.kube import DrillError, Kube

API = "https://api.hetzner.cloud/v1"
DRILL_LABEL = "karmada-hub/drill"
TEST_NET = "192.0.2.1/32"
CAPI_CLUSTER_PATH = "/apis/cluster.x-k8s.io/v1beta1/namespaces/{namespace}/clusters/{name}"


class HcloudError(Exception):
    pass


class Hcloud:
    def __init__(self, endpoint: str | None = None, token: str | None = None, timeout: float = 30.0) -> None:
        self.endpoint = (endpoint or os.environ.get("HCLOUD_ENDPOINT") or API).rstrip("/")
        self.token = token if token is not None else os.environ.get("HCLOUD_TOKEN", "")
        if not self.token:
            raise DrillError("HCLOUD_TOKEN is not set: the drill needs a Hetzner Cloud API token for the member's "
                             "project (export HCLOUD_TOKEN=...)")
        self.timeout = timeout

    def call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.endpoint + path, data=data, method=method, headers={
            "Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
                return json.loads(raw) if raw else {}
        except urllib.error.HTTPError as err:
            detail = err.read().decode(errors="replace")[:200]
            raise HcloudError(f"Hetzner API {method} {path}: HTTP {err.code} {detail}") from None
        except urllib.error.URLError as err:
            raise HcloudError(f"Hetzner API {method} {path}: {err.reason}") from None

    def wait(self, action: dict[str, Any], timeout: float = 120.0, poll: float = 0.5) -> None:
        deadline = time.monotonic() + timeout
        while action.get("status") == "running":
            if time.monotonic() > deadline:
                raise HcloudError(f"Hetzner action {action.get('id')} ({action.get('command')}) still running")
            time.sleep(poll)
            action = self.call("GET", f"/actions/{action['id']}")["action"]
        if action.get("status") != "success":
            raise HcloudError(f"Hetzner action {action.get('id')} ({action.get('command')}) failed: "
                              f"{action.get('error')}")

    def servers(self, selector: str) -> list[dict[str, Any]]:
        out, page = [], 1
        while True:
            q = urllib.parse.urlencode({"label_selector": selector, "per_page": 50, "page": page})
            resp = self.call("GET", f"/servers?{q}")
            out += resp.get("servers", [])
            nxt = ((resp.get("meta") or {}).get("pagination") or {}).get("next_page")
            if not nxt:
                return out
            page = nxt


class KillMethod(Protocol):
    name: str
    kills: str

    def kill(self) -> None: ...
    def restore(self) -> None: ...


class PowerOff:
    name = "poweroff"
    kills = "the member's API and ingress (servers powered off)"

    def __init__(self, hc: Hcloud, selector: str, capi: Kube | None, cluster: tuple[str, str] | None,
                 log: Callable[[str], None]) -> None:
        self.hc, self.selector, self.capi, self.cluster, self.log = hc, selector, capi, cluster, log
        self.powered_off: list[dict[str, Any]] = []
        self.paused_by_us = False

    def kill(self) -> None:
        servers = self.hc.servers(self.selector)
        if not servers:
            raise DrillError(f"no Hetzner server matches label selector {self.selector}")
        if self.capi is not None and self.cluster is not None:
            path = CAPI_CLUSTER_PATH.format(namespace=self.cluster[0], name=self.cluster[1])
            current = self.capi.get(path)
            if current is None:
                raise DrillError(f"CAPI Cluster {self.cluster[0]}/{self.cluster[1]} not found on the management "
                                 "cluster")
            if not (current.get("spec") or {}).get("paused"):
                self.capi.merge_patch(path, {"spec": {"paused": True}})
                self.paused_by_us = True
                self.log(f"paused CAPI Cluster {self.cluster[0]}/{self.cluster[1]}")
        actions = []
        for server in servers:
            if server.get("status") == "off":
                continue
            self.powered_off.append(server)  # before the call: a kill interrupted mid-call is still undone
            actions.append(self.hc.call("POST", f"/servers/{server['id']}/actions/poweroff")["action"])
        for action in actions:
            self.hc.wait(action)
        self.log(f"powered off {len(self.powered_off)} server(s): {', '.join(s['name'] for s in self.powered_off)}")

    def restore(self) -> None:
        errors = []
        actions = []
        for server in self.powered_off:
            try:
                actions.append(self.hc.call("POST", f"/servers/{server['id']}/actions/poweron")["action"])
            except HcloudError as err:
                errors.append(str(err))
        for action in actions:
            try:
                self.hc.wait(action)
            except HcloudError as err:
                errors.append(str(err))
        if self.powered_off:
            self.log(f"powered on {len(self.powered_off)} server(s)")
        self.powered_off = []
        if self.paused_by_us and self.capi is not None and self.cluster is not None:
            self.capi.merge_patch(CAPI_CLUSTER_PATH.format(namespace=self.cluster[0], name=self.cluster[1]),
                                  {"spec": {"paused": False}})
            self.paused_by_us = False
            self.log(f"unpaused CAPI Cluster {self.cluster[0]}/{self.cluster[1]}")
        if errors:
            raise HcloudError("; ".join(errors))


class Firewall:
    name = "firewall"
    kills = "the member's public interfaces only (Hetzner firewalls do not filter private networks)"

    def __init__(self, hc: Hcloud, selector: str, member: str, log: Callable[[str], None]) -> None:
        self.hc, self.selector, self.member, self.log = hc, selector, member, log
        self.firewall_id: int | None = None

    def body(self) -> dict[str, Any]:
        return {
            "name": f"karmada-hub-drill-{self.member}",
            "labels": {DRILL_LABEL: self.member},
            # No inbound rule: inbound is implicit deny. One outbound rule turns outbound to implicit deny too.
            "rules": [{"direction": "out", "protocol": "icmp", "destination_ips": [TEST_NET],
                       "description": "drill: outbound implicit deny"}],
            "apply_to": [{"type": "label_selector", "label_selector": {"selector": self.selector}}],
        }

    def kill(self) -> None:
        resp = self.hc.call("POST", "/firewalls", self.body())
        self.firewall_id = resp["firewall"]["id"]
        for action in resp.get("actions", []):
            self.hc.wait(action)
        self.log(f"deny-all firewall {self.firewall_id} applied to {self.selector}")

    def restore(self) -> None:
        if self.firewall_id is None:
            return
        resp = self.hc.call("POST", f"/firewalls/{self.firewall_id}/actions/remove_from_resources", {
            "remove_from": [{"type": "label_selector", "label_selector": {"selector": self.selector}}]})
        for action in resp.get("actions", []):
            self.hc.wait(action)
        self.hc.call("DELETE", f"/firewalls/{self.firewall_id}")
        self.log(f"firewall {self.firewall_id} removed and deleted")
        self.firewall_id = None


class LbDetach:
    name = "lb-detach"
    kills = "the member's ingress behind its region's LB only (the member API stays up)"

    def __init__(self, hc: Hcloud, lb_name: str, selector: str, private: bool, log: Callable[[str], None]) -> None:
        self.hc, self.lb_name, self.selector, self.private, self.log = hc, lb_name, selector, private, log
        self.lb_id: int | None = None

    def kill(self) -> None:
        lbs = self.hc.call("GET", f"/load_balancers?name={urllib.parse.quote(self.lb_name)}").get(
            "load_balancers", [])
        if len(lbs) != 1:
            raise DrillError(f"expected one Hetzner load balancer named {self.lb_name}, found {len(lbs)}")
        lb_id = lbs[0]["id"]
        action = self.hc.call("POST", f"/load_balancers/{lb_id}/actions/remove_target", {
            "type": "label_selector", "label_selector": {"selector": self.selector}})["action"]
        self.lb_id = lb_id
        self.hc.wait(action)
        self.log(f"target {self.selector} removed from load balancer {self.lb_name}")

    def restore(self) -> None:
        if self.lb_id is None:
            return
        action = self.hc.call("POST", f"/load_balancers/{self.lb_id}/actions/add_target", {
            "type": "label_selector", "label_selector": {"selector": self.selector},
            "use_private_ip": self.private})["action"]
        self.hc.wait(action)
        self.log(f"target {self.selector} added back to load balancer {self.lb_name}")
        self.lb_id = None


