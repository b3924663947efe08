"""Safe changes to a running hub: what this `pulumi up` may change, decided from what is deployed. Pure.

Pulumi hands a program no old values, and `pulumi preview` must refuse what `pulumi up` would break, so the
program reads what is deployed from Hetzner itself before it registers anything (`live.py`, plain invokes
that run under `preview`, `up` and, stubbed, the offline plan): every hub server's type, location, image
and status, and the hub network's labels, which carry a record of the settings the last `up` applied
(`record_labels`). From that and the config, `plan_hub` decides per server, or refuses with one line that
names the key and the fix:

- `hub.serverType`: Hetzner resizes a server in place, powered off (terraform-provider-hcloud v1.68.0
  `internal/server/resource.go` `resourceServerUpdate`: Poweroff, ChangeType), and Pulumi updates the three
  servers in parallel. So one `up` resizes one server, the lowest index still on another type, and keeps the
  others at their live type; the next `up` takes the next one. Refused while any hub server is not running.
- `hub.locations`: a server's location is ForceNew (same file, `location`); moving a member is a rebuild,
  not a config edit. Refused.
- `hub.image`: ignored on existing servers (`ignore_changes`); said, not silent.
- `karmada.etcd.storageSize` / `storageClass`: a StatefulSet's volumeClaimTemplates are immutable, so a change
  replaces the etcd StatefulSet and restarts every member at once. Refused with the member-by-member path.
- fewer `karmada.etcd.replicas` or `hub.servers`: the members stopped that way are not removed and keep counting
  towards quorum. Refused. (More is fine: a new etcd member joins through its `prepare` step, a new server
  joins k3s.)
- `hub.k3sVersion`: rolled by system-upgrade-controller one server at a time (`operations/k3s_upgrade.py`);
  a downgrade or a skipped minor is refused.
- join mode: only the very first creation of a cluster may `cluster-init`; a server created while any other
  hub server exists joins it (k3s `pkg/etcd/etcd.go` `(*ETCD).Start`: no datastore and no `server` is a new
  cluster).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from components import versions
from components.config import EtcdConfig, HubConfig

RUNBOOK_RESIZE = "docs/runbooks/resize-hub-servers.md"
RUNBOOK_IMMUTABLE = "docs/runbooks/immutable-settings.md"
RUNBOOK_K3S = "docs/runbooks/upgrade-k3s.md"
RUNBOOK_LOST = "docs/runbooks/one-hub-server-lost.md"

RECORD_PREFIX = "karmada-hub/"
RECORD_KEYS = {
    "etcd-storage-size": "karmada.etcd.storageSize",
    "etcd-storage-class": "karmada.etcd.storageClass",
    "etcd-replicas": "karmada.etcd.replicas",
    "k3s-version": "hub.k3sVersion",
}
"""Network label (after RECORD_PREFIX) -> the config key whose last applied value it records."""


class UnsafeChange(ValueError):
    """A change this `up` must not make; `key` is the config key, `str()` says why and what to do."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class LiveServer:
    """A hub server as Hetzner reports it now."""

    name: str
    server_type: str
    location: str
    status: str
    image: str = ""


@dataclass(frozen=True)
class Deployed:
    """What runs: the hub's servers by name, and the record on its network (None: no network, or one from
    before records were kept)."""

    servers: Mapping[str, LiveServer]
    record: Mapping[str, str] | None = None

    @property
    def empty(self) -> bool:
        return not self.servers


NOTHING = Deployed(servers={})


@dataclass(frozen=True)
class ServerPlan:
    index: int
    name: str
    server_type: str
    location: str
    joins: bool
    """False only for the first server when no hub server exists: it may initialise the cluster (after its
    boot-time check that nobody else answers; cloud_init.join_mode_script)."""
    resize_from: str | None = None


@dataclass(frozen=True)
class HubPlan:
    servers: tuple[ServerPlan, ...]
    notices: tuple[str, ...] = ()


def server_name(hub: HubConfig, index: int) -> str:
    """The `index`-th hub server's Hetzner name (also its hostname and k3s node name); hub_cluster.hub_server_name
    is this function."""
    return f"{hub.name}-cp-{index}"


def k3s_label(version: str) -> str:
    """Hetzner label values allow `[a-z0-9A-Z._-]`: `v1.34.1+k3s1` is recorded as `v1.34.1-k3s1`."""
    return version.replace("+", "-")


def k3s_from_label(value: str) -> str:
    return re.sub(r"-(k3s\d+)$", r"+\1", value)


def record_labels(hub: HubConfig, etcd: EtcdConfig) -> dict[str, str]:
    """The labels the hub network carries: the values this `up` applies, read back by the next one."""
    return {
        f"{RECORD_PREFIX}etcd-storage-size": etcd.storage_size,
        f"{RECORD_PREFIX}etcd-storage-class": etcd.storage_class,
        f"{RECORD_PREFIX}etcd-replicas": str(etcd.replicas),
        f"{RECORD_PREFIX}k3s-version": k3s_label(hub.k3s_version),
    }


def _k3s_tuple(version: str) -> tuple[int, int, int, int]:
    """`v1.34.1+k3s2` -> (1, 34, 1, 2), the order k3s releases come in."""
    match = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)\+k3s(\d+)", version)
    if not match:
        raise ValueError(f"'{version}' is not a k3s release tag like v1.34.1+k3s1")
    major, minor, patch, build = (int(g) for g in match.groups())
    return major, minor, patch, build


def _k3s_step(old: str, new: str) -> str | None:
    """Why going from k3s `old` to `new` is not allowed, or None."""
    old_v, new_v = versions.minor_of(old), versions.minor_of(new)
    if _k3s_tuple(new) < _k3s_tuple(old):
        return f"{old} -> {new} is a downgrade; k3s does not support downgrading a server"
    if new_v[0] != old_v[0] or new_v[1] > old_v[1] + 1:
        return (f"{old} -> {new} skips a minor; upgrade one minor at a time "
                f"(v{old_v[0]}.{old_v[1] + 1}.x first)")
    return None


def _check_record(hub: HubConfig, etcd: EtcdConfig, record: Mapping[str, str]) -> list[str]:
    notices = []
    for key, field, now, instead in (("etcd-storage-size", "storageSize", etcd.storage_size, "resize"),
                                     ("etcd-storage-class", "storageClass", etcd.storage_class, "move")):
        old = record.get(f"{RECORD_PREFIX}{key}")
        if old is not None and old != now:
            raise UnsafeChange(f"karmada.etcd.{field}", (
                f"{old} -> {now} would replace the etcd StatefulSet (volumeClaimTemplates are immutable) and "
                f"restart every member at once; set it back to {old}, or {instead} member by member "
                f"({RUNBOOK_IMMUTABLE})"))
    old_replicas = record.get(f"{RECORD_PREFIX}etcd-replicas")
    if old_replicas is not None and old_replicas.isdigit() and int(old_replicas) > etcd.replicas:
        raise UnsafeChange("karmada.etcd.replicas", (
            f"{old_replicas} -> {etcd.replicas} would stop members without removing them, and the dead members would "
            f"still count towards quorum; set it back to {old_replicas} ({RUNBOOK_IMMUTABLE})"))
    old_k3s = record.get(f"{RECORD_PREFIX}k3s-version")
    if old_k3s is not None:
        old = k3s_from_label(old_k3s)
        if old != hub.k3s_version:
            try:
                problem = _k3s_step(old, hub.k3s_version)
            except ValueError:
                raise UnsafeChange("hub.k3sVersion", (
                    f"the hub network's label {RECORD_PREFIX}k3s-version={old_k3s} is not a k3s version; set it to "
                    f"the version the servers run ({RUNBOOK_K3S})")) from None
            if problem:
                raise UnsafeChange("hub.k3sVersion", f"{problem}; set it back to {old} ({RUNBOOK_K3S})")
            notices.append(f"hub.k3sVersion {old} -> {hub.k3s_version}: system-upgrade-controller upgrades the hub "
                           f"servers one at a time (cordon, no drain); follow {RUNBOOK_K3S}")
    return notices


def plan_hub(hub: HubConfig, etcd: EtcdConfig, deployed: Deployed) -> HubPlan:
    """Per server: its type and join mode for this `up`, or `UnsafeChange`. Pure; see the module docstring."""
    notices: list[str] = []
    if deployed.record:
        notices += _check_record(hub, etcd, deployed.record)
    names = [server_name(hub, i) for i in range(hub.servers)]
    live = {n: deployed.servers[n] for n in names if n in deployed.servers}
    beyond = sorted(n for n in deployed.servers if n not in names)
    if beyond:
        raise UnsafeChange("hub.servers", (
            f"{hub.servers} would delete {', '.join(beyond)}, whose k3s etcd members would still count towards "
            f"quorum; set it back to {len(names) + len(beyond)}, or remove them one at a time first "
            f"({RUNBOOK_LOST})"))
    for index, name in enumerate(names):
        server = live.get(name)
        if server is not None and server.location != hub.server_location(index):
            raise UnsafeChange("hub.locations", (
                f"{name} runs in {server.location} but the config puts server {index} in "
                f"{hub.server_location(index)}; a server cannot move (Hetzner would delete it and its etcd data "
                f"and create a new one). Restore hub.locations, or rebuild that server deliberately ({RUNBOOK_LOST})"))
    stale_image = sorted(n for n, s in live.items() if s.image and s.image != hub.image)
    if stale_image:
        notices.append(f"hub.image {hub.image}: only servers created from now on use it; {', '.join(stale_image)} "
                       f"keep their image until rebuilt one at a time ({RUNBOOK_LOST})")

    pending = [i for i, n in enumerate(names) if n in live and live[n].server_type != hub.server_type]
    resize: int | None = None
    if pending:
        down = sorted(f"{n} is {s.status}" for n, s in live.items() if s.status != "running")
        if down:
            raise UnsafeChange("hub.serverType", (
                f"{'; '.join(down)}: resize only while every hub server runs; wait, then `pulumi up` again "
                f"({RUNBOOK_RESIZE})"))
        resize = pending[0]
        rest = len(pending) - 1
        old = live[names[resize]].server_type
        notices.append(
            f"hub.serverType {hub.server_type}: this run resizes {names[resize]} ({old} -> {hub.server_type}, "
            f"powered off for a few minutes) and waits until its node is Ready again; "
            + (f"{rest} more follow{'s' if rest == 1 else ''}, one per `pulumi up` ({RUNBOOK_RESIZE})" if rest
               else f"it is the last one ({RUNBOOK_RESIZE})"))

    others_exist = bool(live)
    plans = []
    for index, name in enumerate(names):
        server = live.get(name)
        server_type = hub.server_type
        resize_from = None
        if server is not None and server.server_type != hub.server_type:
            if index == resize:
                resize_from = server.server_type
            else:
                server_type = server.server_type
        exists_elsewhere = any(n != name for n in live) if others_exist else False
        plans.append(ServerPlan(index=index, name=name, server_type=server_type,
                                location=hub.server_location(index), joins=index > 0 or exists_elsewhere,
                                resize_from=resize_from))
    return HubPlan(servers=tuple(plans), notices=tuple(notices))


def summary(plans: Sequence[ServerPlan]) -> list[str]:
    """One line per server for the plan output: type, location, how k3s starts."""
    return [f"{p.name}: {p.server_type} in {p.location}, "
            f"{'joins the running cluster' if p.joins else 'initialises the cluster unless a server answers'}"
            + (f", resized from {p.resize_from}" if p.resize_from else "") for p in plans]
