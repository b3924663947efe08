"""etcd defragmentation: give back the space compaction freed, one member at a time, leader last.

Runs in the hub host cluster as the CronJob `etcd-defrag` (components/operations/etcd_maintenance.py).
Compaction (the API servers every 5 minutes, etcd's own periodic one) frees pages inside etcd's bbolt file but
never shrinks it; the freed space still counts against `--quota-backend-bytes`. Defragmentation rewrites
the file, and a member being defragmented "blocks the system from reading and writing data while rebuilding
its states" (etcd v3.4.23 Documentation/op-guide/maintenance.md, "Defragmentation"); it is per member and not
replicated. So this job:

1. asks every member for its status (`/v3/maintenance/status` on its own client URL: `dbSize`, `dbSizeInUse`,
   `leader`) and stops, changing nothing, unless every member answers and all agree on one leader;
2. picks the members whose file is at least `--min-db-mib` large and at least `--min-free-ratio` unused;
3. defragments them one by one (`/v3/maintenance/defragment` on that member only), followers first and the
   leader last, and before each next member waits until the previous one answers again with a leader;
4. reports active alarms (NOSPACE): disarming is an operator decision (docs/runbooks/restore-etcd.md, "etcd
   is out of space").

It talks to etcd's gRPC gateway (JSON over the client port, mTLS with the job's own client certificate),
stdlib only: the file is the container's program, mounted from a ConfigMap with its helper `_incluster.py`
into the pinned Python image (the etcd image has no shell to sequence etcdctl calls).
"""

from __future__ import annotations

import argparse
import sys
import time
import urllib.error
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from _incluster import ApiError, call, tls_context

MIB = 1 << 20


class DefragError(Exception):
    pass


@dataclass(frozen=True)
class Member:
    endpoint: str
    member_id: int
    leader: int
    db_size: int
    db_in_use: int

    @property
    def free_ratio(self) -> float:
        return (self.db_size - self.db_in_use) / self.db_size if self.db_size else 0.0


class Etcd:
    def __init__(self, ca_file: str, cert_file: str, key_file: str) -> None:
        self.context = tls_context(ca_file, cert_file, key_file)

    def call(self, endpoint: str, path: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
        try:
            data = call(self.context, "POST", endpoint, path, body, timeout=timeout,
                        headers={"Content-Type": "application/json"})
        except ApiError as err:
            raise DefragError(f"{endpoint}{path}: HTTP {err.status} {err.body[:200]!r}") from None
        except (urllib.error.URLError, OSError) as err:
            raise DefragError(f"{endpoint}{path}: {getattr(err, 'reason', err)}") from None
        if "error" in data:
            raise DefragError(f"{endpoint}{path}: {data['error']}")
        return data

    def status(self, endpoint: str, timeout: float = 10.0) -> Member:
        s = self.call(endpoint, "/v3/maintenance/status", {}, timeout)
        size = int(s.get("dbSize", 0))
        return Member(endpoint, int(s["header"]["member_id"]), int(s.get("leader", 0)), size,
                      int(s.get("dbSizeInUse", size)))

    def alarms(self, endpoint: str) -> list[str]:
        data = self.call(endpoint, "/v3/maintenance/alarm", {"action": "GET"}, 10.0)
        return [str(a.get("alarm", "?")) for a in data.get("alarms") or []]

    def defragment(self, endpoint: str, timeout: float) -> None:
        self.call(endpoint, "/v3/maintenance/defragment", {}, timeout)


def plan(members: Sequence[Member], min_db_bytes: int, min_free_ratio: float) -> list[Member]:
    """The members to defragment, followers first and the leader last; refuses unless all agree on a leader."""
    leaders = {m.leader for m in members}
    if len(leaders) != 1 or 0 in leaders:
        raise DefragError(f"members disagree on the leader or have none ({sorted(leaders)}): not defragmenting")
    leader = leaders.pop()
    if leader not in {m.member_id for m in members}:
        raise DefragError(f"the leader {leader:x} is not among the members asked: not defragmenting")
    chosen = [m for m in members if m.db_size >= min_db_bytes and m.free_ratio >= min_free_ratio]
    return sorted(chosen, key=lambda m: (m.member_id == leader, m.endpoint))


def wait_healthy(etcd: Etcd, endpoint: str, timeout: float) -> Member:
    deadline = time.monotonic() + timeout
    while True:
        try:
            member = etcd.status(endpoint)
            if member.leader:
                return member
        except DefragError:
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            raise DefragError(f"{endpoint} has no leader after defragmentation")
        time.sleep(1)


def run(etcd: Etcd, endpoints: Sequence[str], min_db_bytes: int, min_free_ratio: float, timeout: float) -> list[str]:
    """One pass; returns the report lines."""
    members = []
    for endpoint in endpoints:
        try:
            members.append(etcd.status(endpoint))
        except DefragError as err:
            raise DefragError(f"not every member answers ({err}); defragmenting nothing") from None
    report = [f"{m.endpoint} id {m.member_id:x}: {m.db_size / MIB:.2f} MiB, {m.free_ratio:.1%} unused"
              + (" (leader)" if m.member_id == m.leader else "") for m in members]
    for m in plan(members, min_db_bytes, min_free_ratio):
        etcd.defragment(m.endpoint, timeout)
        after = wait_healthy(etcd, m.endpoint, timeout)
        report.append(f"defragmented {m.endpoint}: {m.db_size / MIB:.2f} -> {after.db_size / MIB:.2f} MiB")
    alarms = sorted({a for e in endpoints for a in etcd.alarms(e)})
    if alarms:
        report.append(f"active alarms: {', '.join(alarms)} (disarm by hand once below quota: runbook restore-etcd)")
    return report


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--endpoints", required=True, help="every member's client URL, comma-separated")
    p.add_argument("--ca-file", required=True)
    p.add_argument("--cert-file", required=True)
    p.add_argument("--key-file", required=True)
    p.add_argument("--min-db-mib", type=int, default=100)
    p.add_argument("--min-free-ratio", type=float, default=0.5)
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per member")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    endpoints = [e for e in args.endpoints.split(",") if e]
    try:
        etcd = Etcd(args.ca_file, args.cert_file, args.key_file)
        for line in run(etcd, endpoints, args.min_db_mib * MIB, args.min_free_ratio, args.timeout):
            print(line)
    except (DefragError, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
