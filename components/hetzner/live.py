"""What is deployed, read from Hetzner before anything is registered: the thin shell around `changes.py`.

Two plain invokes (`hcloud.get_servers` and `hcloud.get_networks`, by the hub's labels) run under `pulumi
preview` and `pulumi up` alike, so a preview already refuses what the `up` would break; the offline plan's
mocks answer them (with nothing deployed unless a test says otherwise). Read once per program run.
"""

from __future__ import annotations

from typing import Any

import pulumi_hcloud as hcloud

from components.config import HubConfig
from components.hetzner.changes import RECORD_PREFIX, Deployed, LiveServer

_CACHE: dict[str, Deployed] = {}


def selector(hub: HubConfig, role: str | None = "control-plane") -> str:
    """The label selector of the hub's resources (`karmada-hub/cluster`, and the servers' role)."""
    labels = {"karmada-hub/cluster": hub.name, **({"karmada-hub/role": role} if role else {})}
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def read_deployed(hub: HubConfig) -> Deployed:
    """The hub's servers and the record on its network, as Hetzner has them now."""
    if hub.name in _CACHE:
        return _CACHE[hub.name]
    servers = {}
    for s in hcloud.get_servers(with_selector=selector(hub)).servers or []:
        name = _get(s, "name")
        servers[name] = LiveServer(name=name, server_type=_get(s, "server_type"), location=_get(s, "location"),
                                   status=_get(s, "status"), image=_get(s, "image") or "")
    record = None
    for net in hcloud.get_networks(with_selector=selector(hub, role=None)).networks or []:
        if _get(net, "name") == hub.name:
            labels = dict(_get(net, "labels") or {})
            record = {k: v for k, v in labels.items() if k.startswith(RECORD_PREFIX) and k != "karmada-hub/cluster"}
            record = record or None
    deployed = Deployed(servers=servers, record=record)
    _CACHE[hub.name] = deployed
    return deployed


def forget() -> None:
    """Drop what was read (tests run the program several times in one process)."""
    _CACHE.clear()
