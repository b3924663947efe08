"""`python -m bench.real_fleet`: what the dev stack costs on the real binaries (measured, never asserted).

Brings the local real fleet up (tests/support/realfleet), then reports:
- bring-up: seconds from nothing to every component Ready and both members joined, per step;
- each hub component's resident memory (VmRSS, per pod, mean over its replicas) and CPU (share of one core) while
  idle for `--idle` seconds, and while the hub propagates `--deployments` Duplicated Deployments to both members
  until each is Ready there;
- the same for the stand-ins (host apiserver, CAPI apiserver) and each member's control plane (kwok).

Writes `--out` (default build/bench/real-fleet.json) and prints a table. Needs root and `make upstream`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

CLK_TCK = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def _rss_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _component(name: str) -> str:
    """`karmada-apiserver-1b5074afc4-d2c79` -> `karmada-apiserver`, `etcd-0` -> `etcd`."""
    parts = name.split("-")
    if len(parts) >= 3 and len(parts[-1]) == 5 and len(parts[-2]) == 10:
        return "-".join(parts[:-2])
    if parts[-1].isdigit():
        return "-".join(parts[:-1])
    return name


def processes(fleet: Any) -> dict[str, list[int]]:
    """component -> pids of its running containers (one process each: the launcher execs the binary)."""
    out: dict[str, list[int]] = defaultdict(list)
    for pod in fleet.pods("host"):
        for container in pod.containers:
            if container.proc is not None and container.proc.poll() is None:
                out[f"hub {_component(pod.name)}"].append(container.proc.pid)
    for pod in fleet.pods():
        if pod.cluster.name.startswith("member-") and pod.spec.get("restartPolicy", "Always") == "Always":
            for container in pod.containers:
                if container.proc is not None and container.proc.poll() is None:
                    out[f"{pod.cluster.name} {_component(pod.name)}"].append(container.proc.pid)
    for standin in (fleet.host, fleet.capi):
        for name, proc in standin.procs.items():
            if proc.proc is not None:
                out[f"{standin.name} stand-in {name}"].append(proc.proc.pid)
    for name, member in fleet.members.items():
        out[f"member {name} (kwok: etcd, apiserver, kcm, scheduler, kwok)"] += member.pids()
    return dict(out)


def sample(pids: dict[str, list[int]], seconds: float, during: Any = None) -> dict[str, dict[str, float]]:
    """CPU share of one core and mean RSS per process of each component over `seconds` (or while `during()`
    runs, if given)."""
    start = {k: sum(_cpu_seconds(p) for p in v) for k, v in pids.items()}
    began = time.monotonic()
    if during is not None:
        during()
    else:
        time.sleep(seconds)
    elapsed = time.monotonic() - began
    out = {}
    for key, group in pids.items():
        cpu = (sum(_cpu_seconds(p) for p in group) - start[key]) / elapsed
        rss = [_rss_bytes(p) for p in group]
        out[key] = {"cpu_share": round(cpu, 3), "rss_mib_each": round(sum(rss) / max(1, len(rss)) / 2**20, 1),
                    "processes": len(group)}
    return {"seconds": round(elapsed, 1), **out}  # type: ignore[dict-item]


def propagate(fleet: Any, count: int) -> None:
    from tests.support.kubelet.api import wait_for

    for i in range(count):
        fleet.karmada.apply({"apiVersion": "apps/v1", "kind": "Deployment",
                             "metadata": {"name": f"bench-{i}", "namespace": "shop"},
                             "spec": {"replicas": 2, "selector": {"matchLabels": {"app": f"bench-{i}"}},
                                      "template": {"metadata": {"labels": {"app": f"bench-{i}"}}, "spec": {
                                          "containers": [{"name": "app", "image": "docker.io/library/nginx:1.27",
                                                          "resources": {"requests": {"cpu": "10m",
                                                                                     "memory": "16Mi"}}}]}}}})
    for member in fleet.members:
        api = fleet.member_api(member)
        wait_for(f"{count} Deployments Ready on {member}", lambda a=api: sum(
            1 for d in a.list("apps/v1", "Deployment", "shop")
            if d["metadata"]["name"].startswith("bench-") and (d.get("status") or {}).get("readyReplicas") == 2)
            == count, 900, 2)


def table(rows: Iterable[tuple[str, dict[str, float], dict[str, float]]]) -> str:
    lines = [f"{'component':62} {'procs':>5} {'RSS MiB':>8} {'idle CPU':>9} {'busy CPU':>9}"]
    for name, idle, busy in rows:
        lines.append(f"{name:62} {idle['processes']:>5} {idle['rss_mib_each']:>8} "
                     f"{idle['cpu_share'] * 100:>8.1f}% {busy['cpu_share'] * 100:>8.1f}%")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.real_fleet", description=__doc__.split("\n")[0])
    parser.add_argument("--idle", type=float, default=60.0, help="seconds of idle sampling (default 60)")
    parser.add_argument("--deployments", type=int, default=20, help="Deployments to propagate (default 20)")
    parser.add_argument("--out", type=Path, default=Path("build/bench/real-fleet.json"))
    args = parser.parse_args(argv)
    from tests.support.realfleet.fleet import RealFleet

    with RealFleet() as fleet:
        fleet.up()
        time.sleep(30)  # let leader elections and initial syncs settle before sampling idle
        pids = processes(fleet)
        idle = sample(pids, args.idle)
        busy = sample(pids, 0, during=lambda: propagate(fleet, args.deployments))
        report = {"bring_up_seconds": fleet.timings, "idle": idle, "propagating": busy,
                  "deployments": args.deployments, "cpus": os.cpu_count(),
                  "date": time.strftime("%Y-%m-%d", time.gmtime())}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    rows = [(k, idle[k], busy[k]) for k in sorted(pids)]
    print(f"bring-up to all Ready: {fleet.timings.get('brought up')} s; idle {idle['seconds']} s, "
          f"propagating {args.deployments} Deployments: {busy['seconds']} s")
    print(table(rows))
    total = sum(v["rss_mib_each"] * v["processes"] for k, v in idle.items() if k != "seconds")
    print(f"total RSS {total:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
