"""Hub exporter: the readiness of every member cluster, Push and Pull, as Prometheus metrics.

Karmada's own `cluster_ready_state` gauge is set by the cluster-status controller, which in the hub's
controller-manager watches Push members only (karmada v1.18.2 cmd/controller-manager/app/controllermanager.go,
`obj.Spec.SyncMode == clusterv1alpha1.Push`); a Pull member's status comes from the karmada-agent in the member,
whose metrics the hub's Prometheus cannot reach. Both modes end in the same place: the `Ready` condition of the
`Cluster` object in karmada-apiserver (for Pull members the controller-manager sets it Unknown once the agent's
lease expires). So this loop lists Clusters every `--period` seconds and serves, on `--port`:

- `/metrics`: `karmada_hub_member_ready{member_cluster, sync_mode}` (1 when Ready is True, else 0),
  `karmada_hub_members` (how many Clusters exist), and
  `karmada_hub_exporter_last_success_timestamp_seconds` (when the last list succeeded);
- `/healthz`: 200 while the last successful list is younger than `3 * period + 30` s, else 503.

It reads with a client certificate whose user may only list Clusters. Stdlib only: the file is the container's
program, mounted from a ConfigMap with its helper `_incluster.py` into the pinned Python image
(components/operations/monitoring.py).
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any

from _incluster import ApiError, Client, Health, Response, serve

CLUSTERS_PATH = "/apis/cluster.karmada.io/v1alpha1/clusters"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

log = logging.getLogger("hub-exporter")


def member_states(cluster_list: Mapping[str, Any]) -> list[tuple[str, str, int]]:
    """(name, sync mode, 1 if its Ready condition is True else 0) for every Cluster, sorted by name."""
    out = []
    for cluster in cluster_list.get("items", []):
        conditions = (cluster.get("status") or {}).get("conditions") or []
        ready = next((c for c in conditions if c.get("type") == "Ready"), None)
        mode = str((cluster.get("spec") or {}).get("syncMode") or "Push")
        out.append((str(cluster["metadata"]["name"]), mode, int(ready is not None and ready.get("status") == "True")))
    return sorted(out)


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def exposition(states: list[tuple[str, str, int]], last_success: float | None) -> str:
    """The Prometheus text format (version 0.0.4) for one list of member states."""
    lines = [
        "# HELP karmada_hub_member_ready Whether the member's Cluster object has condition Ready=True (1) or not (0).",
        "# TYPE karmada_hub_member_ready gauge",
        *(f'karmada_hub_member_ready{{member_cluster="{_label(n)}",sync_mode="{_label(m)}"}} {r}'
          for n, m, r in states),
        "# HELP karmada_hub_members Number of Cluster objects in karmada-apiserver.",
        "# TYPE karmada_hub_members gauge",
        f"karmada_hub_members {len(states)}",
    ]
    if last_success is not None:
        lines += [
            "# HELP karmada_hub_exporter_last_success_timestamp_seconds When the Clusters were last listed.",
            "# TYPE karmada_hub_exporter_last_success_timestamp_seconds gauge",
            f"karmada_hub_exporter_last_success_timestamp_seconds {last_success:.3f}",
        ]
    return "\n".join(lines) + "\n"


class State:
    """The last exposition, and whether the list that made it is fresh."""

    def __init__(self, max_age: float) -> None:
        self.health = Health(max_age)
        self.lock = threading.Lock()
        self.text = exposition([], None)

    def update(self, states: list[tuple[str, str, int]]) -> None:
        with self.lock:
            self.text = exposition(states, time.time())
        self.health.mark()

    def respond(self, path: str) -> Response:
        if path == "/metrics":
            with self.lock:
                return 200, self.text.encode(), CONTENT_TYPE
        if path == "/healthz":
            ok = self.health.ok()
            return (200 if ok else 503), (b"ok\n" if ok else b"stale\n"), "text/plain"
        return 404, b"not found\n", "text/plain"


def run(api: Client, state: State, period: float, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            state.update(member_states(api.get(CLUSTERS_PATH)))
        except (ApiError, OSError, ValueError, KeyError) as err:
            log.warning("listing clusters failed: %s", err)
        stop.wait(period)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--server", required=True, help="karmada-apiserver URL")
    p.add_argument("--ca-file", required=True)
    p.add_argument("--cert-file", required=True)
    p.add_argument("--key-file", required=True)
    p.add_argument("--period", type=float, default=30.0)
    p.add_argument("--port", type=int, default=9100)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    api = Client(args.server, args.ca_file, cert_file=args.cert_file, key_file=args.key_file)
    state = State(max_age=3 * args.period + 30)
    serve(state.respond, args.port)
    log.info("listing %s every %ss, serving :%d", args.server, args.period, args.port)
    run(api, state, args.period, threading.Event())
    return 0


if __name__ == "__main__":
    sys.exit(main())
