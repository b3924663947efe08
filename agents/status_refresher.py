"""Status refresher: makes Karmada drop a dead member's address from Ingress and Service status.

This runs inside the hub host cluster, not in Pulumi. It is stdlib-only because the file itself is the
container's program: `components/traffic/dns.py` mounts it from a ConfigMap, with its helper `_incluster.py`,
into a pinned Python image.

Why it exists (docs/traffic-failover.md, section 2, from Karmada v1.18.2 source): when a member becomes
unreachable, Karmada evicts its bindings and deletes its Works, but the Works keep their
execution-controller finalizer while the cluster is unready, and nothing re-aggregates the template's
status. The dead region's load-balancer address therefore stays in `status.loadBalancer.ingress` of
the Ingress/Service template, and external-dns keeps publishing it. Karmada re-aggregates when the
template changes and skips terminating Works when it does. So this loop finds terminating Works of
unready clusters that carry an Ingress or a LoadBalancer Service, and sets an annotation on the
template whose value names those Works. The value is deterministic, so replicas agree, and a template
is patched once per new set of stuck Works, not on every pass.
"""

from __future__ import annotations

import argparse
import hashlib
import http.server
import logging
import sys
import threading
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from _incluster import ApiError, Client, Health, Response, serve

ANNOTATION = "karmada-hub.io/status-refresh"
EXECUTION_NAMESPACE_PREFIX = "karmada-es-"
"""Karmada keeps a member's Works in `karmada-es-<cluster>`."""
CLUSTERS_PATH = "/apis/cluster.karmada.io/v1alpha1/clusters"
WORKS_PATH = "/apis/work.karmada.io/v1alpha1/namespaces/{namespace}/works"
REFRESHED: Mapping[tuple[str, str], str] = {
    ("networking.k8s.io/v1", "Ingress"): "/apis/networking.k8s.io/v1/namespaces/{namespace}/ingresses/{name}",
    ("v1", "Service"): "/api/v1/namespaces/{namespace}/services/{name}",
}
"""The kinds whose aggregated status external-dns publishes (Karmada aggregates Service status only
for type LoadBalancer; a refresh of another Service is harmless)."""

log = logging.getLogger("status-refresher")


@dataclass(frozen=True, order=True)
class TemplateRef:
    """A resource template in karmada-apiserver."""

    api_version: str
    kind: str
    namespace: str
    name: str

    @property
    def path(self) -> str:
        return REFRESHED[(self.api_version, self.kind)].format(
            namespace=urllib.parse.quote(self.namespace, safe=""), name=urllib.parse.quote(self.name, safe=""))

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


# ------------------------------------------------------------------------------------------ decisions


def unready_clusters(cluster_list: Mapping[str, Any]) -> list[str]:
    """Names of Clusters whose Ready condition is not True (False, Unknown, or not reported at all)."""
    names = []
    for cluster in cluster_list.get("items", []):
        conditions = (cluster.get("status") or {}).get("conditions") or []
        ready = next((c for c in conditions if c.get("type") == "Ready"), None)
        if ready is None or ready.get("status") != "True":
            names.append(cluster["metadata"]["name"])
    return sorted(names)


def stuck_works(works: Iterable[Mapping[str, Any]]) -> dict[TemplateRef, set[str]]:
    """Templates whose status a terminating Work still feeds, and the uids of those Works.

    Only namespaced Ingress/Service manifests count; everything else has no address to lose.
    """
    stuck: dict[TemplateRef, set[str]] = {}
    for work in works:
        meta = work.get("metadata") or {}
        if not meta.get("deletionTimestamp"):
            continue
        for manifest in ((work.get("spec") or {}).get("workload") or {}).get("manifests") or []:
            key = (manifest.get("apiVersion", ""), manifest.get("kind", ""))
            m_meta = manifest.get("metadata") or {}
            if key not in REFRESHED or not m_meta.get("namespace") or not m_meta.get("name"):
                continue
            ref = TemplateRef(key[0], key[1], m_meta["namespace"], m_meta["name"])
            stuck.setdefault(ref, set()).add(meta["uid"])
    return stuck


def refresh_token(work_uids: Iterable[str]) -> str:
    """The annotation value for a set of stuck Works: the same set always gives the same value."""
    digest = hashlib.sha256("\n".join(sorted(set(work_uids))).encode()).hexdigest()
    return digest[:16]


def annotation_patch(token: str) -> dict[str, Any]:
    """JSON merge patch that sets the refresh annotation (and nothing else)."""
    return {"metadata": {"annotations": {ANNOTATION: token}}}


# -------------------------------------------------------------------------------------------- loop


def reconcile(api: Client) -> list[tuple[TemplateRef, str]]:
    """One pass: returns the templates patched, with the token written."""
    patched: list[tuple[TemplateRef, str]] = []
    for cluster in unready_clusters(api.get(CLUSTERS_PATH)):
        works = api.get(WORKS_PATH.format(namespace=EXECUTION_NAMESPACE_PREFIX + cluster)).get("items", [])
        for ref, uids in sorted(stuck_works(works).items()):
            token = refresh_token(uids)
            try:
                current = api.get(ref.path)
            except ApiError as err:
                if err.status == 404:  # the template is gone; nothing to refresh
                    continue
                raise
            if ((current.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION) == token:
                continue
            api.merge_patch(ref.path, annotation_patch(token))
            log.info("refreshed %s for unready cluster %s (%d terminating works)", ref, cluster, len(uids))
            patched.append((ref, token))
    return patched


def respond(health: Health, path: str) -> Response:
    """`/healthz`: 200 while the last pass is fresh, else 503; every other path 503."""
    healthy = path == "/healthz" and health.ok()
    return (200, b"ok\n", None) if healthy else (503, b"stale\n", None)


def serve_health(health: Health, port: int, host: str = "0.0.0.0") -> http.server.ThreadingHTTPServer:
    return serve(lambda path: respond(health, path), port, host)


def run(api: Client, period: float, health: Health, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            reconcile(api)
            health.mark()
        except (ApiError, OSError, ValueError) as err:
            log.warning("pass failed: %s", err)
        stop.wait(period)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--server", required=True, help="karmada-apiserver URL")
    p.add_argument("--ca-file", required=True)
    p.add_argument("--cert-file", required=True)
    p.add_argument("--key-file", required=True)
    p.add_argument("--period", type=float, default=15.0, help="seconds between passes")
    p.add_argument("--health-port", type=int, default=8080)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    api = Client(args.server, args.ca_file, cert_file=args.cert_file, key_file=args.key_file)
    health = Health(max_age=3 * args.period + 30)
    serve_health(health, args.health_port)
    log.info("watching %s every %ss", args.server, args.period)
    run(api, args.period, health, threading.Event())
    return 0


if __name__ == "__main__":
    sys.exit(main())
