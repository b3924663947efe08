"""The status mirror: what a cluster's kube-controller-manager and kubelets would show through its API about the pods
the process kubelet runs, written there, so a client that reads the cluster (`hubctl doctor`, kubectl) sees the
truth.

The process kubelet runs a cluster's workloads as processes (workloads.py `Controllers`), but the API server holds
only the workload objects (applied as rendered, by the harness); nothing in it runs them. The mirror is the only
writer of what a real cluster's controllers and kubelets write:

- a Pod object per pod of the process kubelet (created once the kubelet admitted it, `spec.nodeName` bound), its
  `status` kept current through the status subresource as the kubelet does (phase, the PodScheduled, Initialized,
  ContainersReady and Ready conditions, podIP and hostIP, each container's state, `ready`, `started` and
  `restartCount`), and deleted (grace 0, as the kubelet confirms a termination) once the pod is stopped;
- each Deployment's, StatefulSet's and DaemonSet's `status` as its controller computes it from those pods
  (replicas, ready, available, updated, StatefulSet current and DaemonSet scheduled numbers, observedGeneration,
  the Deployment's Available condition); a workload object nothing runs here shows what its controller would show
  of pods that never start: 0 ready;
- the cluster's Nodes (the kubelet registers its node), Ready unless the harness marks one down (`down`).

What is not: ReplicaSets and ControllerRevisions (a Deployment's pods carry no owner here), events, Job and CronJob
status. So that the mirror stays the only writer, the cluster must not run the controllers that make pods from these
objects (the host stand-in's kube-controller-manager runs none of them: standin.HOST_CONTROLLERS). One pass lists
each kind once and writes only what changed; `start()` repeats it every `interval` seconds on a thread that `close()`
stops (bounded: every request has the client's timeout).
"""

from __future__ import annotations

import copy
import datetime as dt
import math
import threading
import time
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tests.support.kubelet.api import Api, ApiError
from tests.support.kubelet.pod import Container, Kubelet, Pod, pod_template_hash
from tests.support.kubelet.workloads import Controllers, Node, Workload

KINDS = {"Deployment": "deployments", "StatefulSet": "statefulsets", "DaemonSet": "daemonsets"}


def rfc3339(wall: float) -> str:
    return dt.datetime.fromtimestamp(int(wall), dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _wall(monotonic: float) -> float:
    """A `time.monotonic()` instant as wall-clock time."""
    return time.time() - (time.monotonic() - monotonic)


def _container_status(c: Container, image: str) -> dict[str, Any]:
    out: dict[str, Any] = {"name": c.name, "image": image, "imageID": "", "ready": bool(c.ready),
                           "restartCount": int(c.restarts), "started": bool(c.running() and c.started)}
    if c.running():
        out["state"] = {"running": {"startedAt": rfc3339(_wall(c.started_at))}}
    elif c.exit_code is not None and c.init and not c.sidecar and c.exit_code == 0:
        out["state"] = {"terminated": {"exitCode": 0, "reason": "Completed"}}
    elif c.exit_code is not None:
        out["state"] = {"waiting": {"reason": "CrashLoopBackOff",
                                    "message": f"back-off {int(c.backoff)}s restarting failed container"}}
    else:
        out["state"] = {"waiting": {"reason": "ContainerCreating" if not c.init else "PodInitializing"}}
    if c.exit_code is not None and (c.restarts or not c.running()):
        reason = "Error" if c.exit_code else "Completed"
        if c.last_termination == "liveness":
            reason = "Error"
        out["lastState"] = {"terminated": {"exitCode": int(c.exit_code), "reason": reason,
                                           "finishedAt": rfc3339(_wall(c.exited_at or c.started_at))}}
    return out


@dataclass
class _Published:
    pod: Pod
    uid: str
    start: str
    transitions: dict[str, tuple[str, str]] = field(default_factory=dict)
    """condition type -> (status, lastTransitionTime)."""


class StatusMirror:
    """Keeps one cluster's API showing its process pods, their workloads' status and its nodes."""

    def __init__(self, kubelet: Kubelet, controllers: Controllers, api: Api, nodes: Iterable[Node] = (),
                 interval: float = 1.0) -> None:
        self.kubelet = kubelet
        self.controllers = controllers
        self.api = api
        self.cluster = controllers.cluster.name
        self.nodes = list(nodes)
        self.down: set[str] = set()
        """Nodes the harness took down (their Ready condition False: the node stopped posting status)."""
        self.interval = interval
        self.published: dict[str, _Published] = {}
        self.errors: list[str] = []
        self.passes = 0
        self.writes = 0
        self._written: dict[tuple[str, str], dict[str, Any]] = {}
        self._conditions: dict[tuple[str, str, str, str], tuple[str, str]] = {}
        self._ready_since: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------------------------------------ thread

    def start(self) -> StatusMirror:
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"status mirror {self.cluster}")
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.sync()
            except (ApiError, OSError, ValueError, KeyError) as exc:  # the API briefly away: the next pass retries
                self._error(f"{type(exc).__name__}: {exc}")
            self._stop.wait(self.interval)

    def _error(self, text: str) -> None:
        """Kept (the last 20) for the harness to show; the next pass tries again."""
        self.errors = [*self.errors[-19:], text]

    def close(self, remove: bool = False) -> None:
        """Stop the thread; `remove` also deletes every Pod object it published (what the API then shows is what
        no kubelet runs)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
        if remove:
            for key in list(self.published):
                self._delete_pod(key)

    # ------------------------------------------------------------------------------------------------ one pass

    def sync(self) -> None:
        with self._lock:
            self._sync_nodes()
            self._sync_pods()
            self._sync_workloads()
            self.passes += 1

    def _list(self, path: str) -> list[dict[str, Any]]:
        status, body = self.api.request("GET", path)
        if status != 200:
            raise ApiError(f"GET {path}: HTTP {status} {body.get('message', '')}", status, body)
        return list(body.get("items") or [])

    def _patch_status(self, path: str, live: dict[str, Any], want: dict[str, Any]) -> None:
        """A merge patch of `status` with what differs from what this mirror last wrote to this object (keys it no
        longer has set to null). Compared with its own last write, not the live object: the server fills defaults
        into a status (an empty `lastState`), which would otherwise differ on every pass."""
        key = (path, str(live["metadata"].get("uid", "")))
        have = self._written.get(key, {})
        diff: dict[str, Any] = {k: v for k, v in want.items() if have.get(k) != v}
        diff.update({k: None for k in have if k not in want})
        if not diff:
            return
        status, body = self.api.request("PATCH", f"{path}/status", {"status": diff},
                                        content_type="application/merge-patch+json")
        if status not in (200, 201):
            raise ApiError(f"PATCH {path}/status: HTTP {status} {body.get('message', '')}", status, body)
        self._written[key] = copy.deepcopy(want)
        self.writes += 1

    # ------------------------------------------------------------------------------------------------ nodes

    def _sync_nodes(self) -> None:
        if not self.nodes:
            return
        live = {n["metadata"]["name"]: n for n in self._list("/api/v1/nodes")}
        for node in self.nodes:
            if node.name not in live:
                live[node.name] = self.api.create({"apiVersion": "v1", "kind": "Node", "metadata": {
                    "name": node.name, "labels": {"kubernetes.io/hostname": node.name, "kubernetes.io/os": "linux",
                                                  "node-role.kubernetes.io/control-plane": "true"}}})
            ready = node.name not in self.down
            status, since = ("True", "KubeletReady") if ready else ("Unknown", "NodeStatusUnknown")
            key = ("", "Node", node.name, "Ready")
            transition = self._transition(key, status)
            want = {"addresses": [{"type": "InternalIP", "address": node.ip}, {"type": "Hostname",
                                                                               "address": node.name}],
                    "conditions": [{"type": "Ready", "status": status, "reason": since,
                                    "message": "kubelet is posting ready status" if ready
                                    else "Kubelet stopped posting node status.",
                                    "lastHeartbeatTime": transition, "lastTransitionTime": transition}]}
            self._patch_status(f"/api/v1/nodes/{node.name}", live[node.name], want)

    def _transition(self, key: tuple[str, str, str, str], status: str) -> str:
        last = self._conditions.get(key)
        if last is None or last[0] != status:
            last = (status, rfc3339(time.time()))
            self._conditions[key] = last
        return last[1]

    # ------------------------------------------------------------------------------------------------ pods

    def _pods(self) -> dict[str, Pod]:
        return {f"{p.namespace}/{p.name}": p for p in list(self.kubelet.pods.values())
                if p.cluster.name == self.cluster and p.phase != "Terminated" and p.admitted}

    def _sync_pods(self) -> None:
        running = self._pods()
        for key in [k for k, pub in self.published.items() if running.get(k) is not pub.pod]:
            self._delete_pod(key)  # stopped, or re-created under the same name (a StatefulSet's)
        live = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in self._list("/api/v1/pods")}
        for key, pod in running.items():
            try:
                pub = self.published.get(key)
                obj = live.get(key)
                if pub is None or obj is None or obj["metadata"]["uid"] != pub.uid:
                    if obj is not None:  # a leftover of an earlier pod of this name
                        self._delete(pod.namespace, pod.name)
                    obj = self._create_pod(pod)
                    pub = self.published[key] = _Published(pod, obj["metadata"]["uid"], rfc3339(time.time()))
                self._patch_status(f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}", obj,
                                   self.pod_status(pub))
            except ApiError as exc:  # one pod refused does not keep the others from being shown
                self._error(f"pod {key}: {exc}")

    def _create_pod(self, pod: Pod) -> dict[str, Any]:
        obj = copy.deepcopy(pod.obj)
        obj.setdefault("apiVersion", "v1")
        obj.setdefault("kind", "Pod")
        obj["spec"]["nodeName"] = pod.node_name
        owner = self._owner(pod)
        if owner is not None:
            obj["metadata"]["ownerReferences"] = [owner]
        return self.api.create(obj)

    def _owner(self, pod: Pod) -> dict[str, Any] | None:
        """A StatefulSet's or DaemonSet's pod is owned by it (so its deletion collects them); a Deployment's would
        be its ReplicaSet's, which this mirror does not make."""
        workload = self._workload_of(pod)
        if workload is None or workload.kind not in ("StatefulSet", "DaemonSet"):
            return None
        live = self.api.get("apps/v1", workload.kind, workload.name, workload.namespace)
        if live is None:
            return None
        return {"apiVersion": "apps/v1", "kind": workload.kind, "name": workload.name,
                "uid": live["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}

    def _workload_of(self, pod: Pod) -> Workload | None:
        return next((w for w in list(self.controllers.workloads.values()) if pod in w.pods), None)

    def _delete(self, namespace: str, name: str) -> None:
        path = f"/api/v1/namespaces/{namespace}/pods/{name}"
        status, body = self.api.request("DELETE", path, {"apiVersion": "v1", "kind": "DeleteOptions",
                                                         "gracePeriodSeconds": 0})
        if status not in (200, 202, 404):
            raise ApiError(f"DELETE {path}: HTTP {status} {body.get('message', '')}", status, body)

    def _delete_pod(self, key: str) -> None:
        pub = self.published.pop(key)
        self._delete(pub.pod.namespace, pub.pod.name)
        path = f"/api/v1/namespaces/{pub.pod.namespace}/pods/{pub.pod.name}"
        self._written.pop((path, pub.uid), None)

    def _host_ip(self, pod: Pod) -> str:
        node = next((n for n in self.nodes if n.name == pod.node_name), None)
        return node.ip if node else (pod.host_ip or pod.cluster.host_ip or pod.ip)

    def pod_status(self, pub: _Published) -> dict[str, Any]:
        """The PodStatus a kubelet would post for this pod now."""
        pod = pub.pod
        images = {c["name"]: c["image"] for c in [*(pod.spec.get("initContainers") or []), *pod.spec["containers"]]}
        initialized = pod.phase != "Pending" or not pod.init_containers
        ready = pod.ready
        containers_ready = all(c.ready for c in pod.containers)
        key = (pod.namespace, pod.name, pub.uid)
        conditions = []
        for kind, value in (("PodScheduled", True), ("Initialized", initialized),
                            ("ContainersReady", containers_ready), ("Ready", ready)):
            status = "True" if value else "False"
            since = self._transition((*key, kind), status)
            cond = {"type": kind, "status": status, "lastTransitionTime": since}
            if not value and kind in ("ContainersReady", "Ready"):
                unready = sorted(c.name for c in pod.containers if not c.ready)
                cond["reason"] = "ContainersNotReady"
                cond["message"] = f"containers with unready status: [{' '.join(unready)}]"
            conditions.append(cond)
        status: dict[str, Any] = {
            "phase": pod.phase if pod.phase in ("Pending", "Running", "Succeeded", "Failed") else "Unknown",
            "conditions": conditions, "hostIP": self._host_ip(pod),
            "podIP": pod.ip, "podIPs": [{"ip": pod.ip}], "startTime": pub.start,
            "containerStatuses": [_container_status(c, images[c.name]) for c in pod.containers],
        }
        if pod.init_containers:
            status["initContainerStatuses"] = [_container_status(c, images[c.name]) for c in pod.init_containers]
        if pod.phase == "Failed" and pod.message:
            status["message"] = pod.message[:500]
        return status

    # ------------------------------------------------------------------------------------------------ workloads

    def _sync_workloads(self) -> None:
        ours = {key: w for key, w in list(self.controllers.workloads.items())}
        for kind, plural in KINDS.items():
            for live in self._list(f"/apis/apps/v1/{plural}"):
                meta = live["metadata"]
                workload = ours.get((kind, meta.get("namespace", "default"), meta["name"]))
                want = self.workload_status(kind, live, workload)
                path = f"/apis/apps/v1/namespaces/{meta['namespace']}/{plural}/{urllib.parse.quote(meta['name'])}"
                try:
                    self._patch_status(path, live, want)
                except ApiError as exc:
                    self._error(f"{kind} {meta['namespace']}/{meta['name']}: {exc}")

    def _available(self, pod: Pod, min_ready: int) -> bool:
        if not pod.ready:
            self._ready_since.pop(id(pod), None)
            return False
        since = self._ready_since.setdefault(id(pod), time.monotonic())
        return time.monotonic() - since >= min_ready

    def workload_status(self, kind: str, live: dict[str, Any], workload: Workload | None) -> dict[str, Any]:
        """What the workload's controller would write: counted over the pods that exist (not stopped)."""
        spec = live.get("spec") or {}
        pods = [p for p in (workload.pods if workload else []) if p.phase != "Terminated" and p.admitted]
        template = (workload.obj if workload else live)["spec"]["template"]
        current = pod_template_hash(template)
        updated = [p for p in pods if pod_template_hash(_template_of(p, workload)) == current]
        min_ready = int(spec.get("minReadySeconds") or 0)
        ready = [p for p in pods if p.ready]
        available = [p for p in pods if self._available(p, min_ready)]
        generation = int(live["metadata"].get("generation") or 1)
        if kind == "DaemonSet":
            desired = len(self.nodes) if self.nodes else len(pods)
            return {"desiredNumberScheduled": desired, "currentNumberScheduled": len(pods),
                    "numberMisscheduled": 0, "numberReady": len(ready), "numberAvailable": len(available),
                    "numberUnavailable": max(0, desired - len(available)), "updatedNumberScheduled": len(updated),
                    "observedGeneration": generation}
        replicas = int(spec.get("replicas", 1))
        if kind == "StatefulSet":
            revision = f"{live['metadata']['name']}-{current}"
            return {"replicas": len(pods), "readyReplicas": len(ready), "currentReplicas": len(updated),
                    "updatedReplicas": len(updated), "availableReplicas": len(available),
                    "currentRevision": revision, "updateRevision": revision, "observedGeneration": generation,
                    "collisionCount": 0}
        strategy = (spec.get("strategy") or {}).get("rollingUpdate") or {}
        max_unavailable = _scaled(strategy.get("maxUnavailable", "25%"), replicas, up=False)
        ok = len(available) >= replicas - max_unavailable
        meta = live["metadata"]
        since = self._transition((meta["namespace"], "Deployment", meta["name"], "Available"),
                                 "True" if ok else "False")
        return {"replicas": len(pods), "readyReplicas": len(ready), "availableReplicas": len(available),
                "updatedReplicas": len(updated), "unavailableReplicas": max(0, replicas - len(available)),
                "observedGeneration": generation,
                "conditions": [{"type": "Available", "status": "True" if ok else "False",
                                "reason": "MinimumReplicasAvailable" if ok else "MinimumReplicasUnavailable",
                                "message": "Deployment has minimum availability." if ok
                                else "Deployment does not have minimum availability.",
                                "lastUpdateTime": since, "lastTransitionTime": since}]}


def _template_of(pod: Pod, workload: Workload | None) -> dict[str, Any]:
    """The template a pod was made from: its labels carry the hash (Deployment) or it is the workload's own."""
    if workload is None:
        return {}
    labels = pod.labels
    wanted = labels.get("pod-template-hash") or labels.get("controller-revision-hash")
    template = workload.obj["spec"]["template"]
    if wanted is not None and wanted != pod_template_hash(template)[: len(wanted)]:
        return {"stale": wanted}
    return template


def _scaled(value: Any, replicas: int, up: bool) -> int:
    """An int-or-percent of a rolling update (maxUnavailable rounds down, maxSurge up)."""
    if isinstance(value, str) and value.endswith("%"):
        exact = replicas * int(value[:-1]) / 100
        return math.ceil(exact) if up else math.floor(exact)
    return int(value)
