"""The workload controllers a cluster's kube-controller-manager would run, reduced to what the harness needs.

A Deployment becomes `replicas` pods named `<name>-<template hash>-<suffix>` (a changed template rolls them one at a
time, each new pod Ready before an old one goes, as `maxUnavailable: 0` would); a StatefulSet its ordinal pods in
order (OrderedReady: the next starts when the previous is Ready; Parallel: all at once), each with its hostname,
the governing Service as subdomain and its claims' directories kept across restarts and re-creations; a Job runs
its pod to completion, retried up to `backoffLimit`; a CronJob runs its job template when asked (`run_cronjob`),
never on a clock. Pods are started by `Kubelet.run` and so admitted by the cluster's API server first.
"""

from __future__ import annotations

import copy
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.kubelet.network import Netns
from tests.support.kubelet.pod import ClusterContext, Kubelet, Pod, PodError, pod_template_hash


@dataclass(frozen=True)
class Node:
    """A node of the cluster: its name, its own network namespace and address (what hostNetwork pods share)."""

    name: str
    netns: Netns
    ip: str


@dataclass
class Workload:
    kind: str
    obj: dict[str, Any]
    pods: list[Pod] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.obj["metadata"].get("namespace", "default"))


class Controllers:
    """Turns one cluster's workload objects into pods on the kubelet."""

    def __init__(self, kubelet: Kubelet, cluster: ClusterContext, storage: Path,
                 netns_for: Callable[[str], Netns] | None = None, nodes: list[Node] | None = None) -> None:
        self.kubelet = kubelet
        self.cluster = cluster
        self.storage = storage
        self.nodes = nodes or []
        """The cluster's nodes: a DaemonSet runs one pod on each; other pods are spread over them in turn."""
        self._next_node = 0
        self.workloads: dict[tuple[str, str, str], Workload] = {}
        self.netns_for = netns_for or (lambda key: kubelet.network.add_namespace(key))
        self._stable_netns: dict[str, Netns] = {}
        self._lock = threading.Lock()

    # ---------------------------------------------------------------------------------------------- pods

    def _pod(self, template: dict[str, Any], name: str, namespace: str, extra_labels: dict[str, str],
             hostname: str | None = None, subdomain: str | None = None) -> dict[str, Any]:
        meta = copy.deepcopy(template.get("metadata") or {})
        spec = copy.deepcopy(template["spec"])
        meta.update({"name": name, "namespace": namespace})
        meta["labels"] = {**(meta.get("labels") or {}), **extra_labels}
        if hostname:
            spec["hostname"] = hostname
        if subdomain:
            spec["subdomain"] = subdomain
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}

    def _start(self, obj: dict[str, Any], storage: dict[str, Path] | None = None,
               stable: str | None = None, node: Node | None = None) -> Pod:
        netns = None
        if node is None and self.nodes:
            node = self.nodes[self._next_node % len(self.nodes)]
            self._next_node += 1
        if obj["spec"].get("hostNetwork"):
            if node is None:
                raise PodError(f"{obj['metadata']['name']}: a hostNetwork pod needs a node")
            return self.kubelet.run(self.cluster, obj, netns=node.netns, storage=storage, node=node.name,
                                    host_ip=node.ip)
        if stable is not None:  # a StatefulSet pod keeps its name, and here its address, across re-creation
            if stable not in self._stable_netns:
                self._stable_netns[stable] = self.netns_for(stable)
            netns = self._stable_netns[stable]
        return self.kubelet.run(self.cluster, obj, netns=netns, storage=storage, node=node.name if node else "")

    # ---------------------------------------------------------------------------------------------- kinds

    def apply(self, obj: dict[str, Any]) -> Workload:
        kind = obj["kind"]
        key = (kind, obj["metadata"].get("namespace", "default"), obj["metadata"]["name"])
        with self._lock:
            existing = self.workloads.get(key)
            if existing is not None and kind in ("Deployment", "StatefulSet"):
                existing.obj = obj
                return existing
            workload = Workload(kind, obj)
            self.workloads[key] = workload
        if kind == "Deployment":
            for _ in range(int(obj["spec"].get("replicas", 1))):
                workload.pods.append(self._deployment_pod(workload))
        elif kind == "StatefulSet":
            self._statefulset(workload)
        elif kind == "Job":
            workload.pods.append(self._job_pod(workload, obj["spec"]["template"]))
        elif kind == "DaemonSet":
            if not self.nodes:
                raise PodError(f"DaemonSet {workload.name}: the cluster has no nodes here")
            for node in self.nodes:
                workload.pods.append(self._daemon_pod(workload, node))
        elif kind == "CronJob":
            pass  # runs only when a test asks (run_cronjob)
        else:
            raise PodError(f"{kind} is not a workload kind")
        return workload

    def _deployment_pod(self, workload: Workload) -> Pod:
        template = workload.obj["spec"]["template"]
        digest = pod_template_hash(template)
        name = f"{workload.name}-{digest[:10]}-{secrets.token_hex(3)[:5]}"
        return self._start(self._pod(template, name, workload.namespace, {"pod-template-hash": digest[:10]}))

    def _daemon_pod(self, workload: Workload, node: Node) -> Pod:
        template = workload.obj["spec"]["template"]
        name = f"{workload.name}-{secrets.token_hex(3)[:5]}"
        obj = self._pod(template, name, workload.namespace, {"controller-revision-hash": pod_template_hash(template)})
        return self._start(obj, node=node)

    def _statefulset(self, workload: Workload) -> None:
        spec = workload.obj["spec"]
        parallel = spec.get("podManagementPolicy") == "Parallel"
        for ordinal in range(int(spec.get("replicas", 1))):
            pod = self._statefulset_pod(workload, ordinal)
            workload.pods.append(pod)
            if not parallel:
                wait_ready(pod, 600)

    def _statefulset_pod(self, workload: Workload, ordinal: int) -> Pod:
        spec = workload.obj["spec"]
        name = f"{workload.name}-{ordinal}"
        claims = {}
        for claim in spec.get("volumeClaimTemplates") or []:
            claim_name = claim["metadata"]["name"]
            claims[claim_name] = self.storage / workload.namespace / f"{claim_name}-{name}"
        obj = self._pod(spec["template"], name, workload.namespace,
                        {"statefulset.kubernetes.io/pod-name": name,
                         "apps.kubernetes.io/pod-index": str(ordinal)},
                        hostname=name, subdomain=spec.get("serviceName"))
        # the StatefulSet controller adds a volume per claim template, bound to the pod's own claim
        obj["spec"]["volumes"] = [v for v in obj["spec"].get("volumes") or [] if v["name"] not in claims] + [
            {"name": claim, "persistentVolumeClaim": {"claimName": f"{claim}-{name}"}} for claim in claims]
        storage = {f"{claim}-{name}": path for claim, path in claims.items()}
        return self._start(obj, storage=storage, stable=f"{self.cluster.name}/{workload.namespace}/{name}")

    def _job_pod(self, workload: Workload, template: dict[str, Any]) -> Pod:
        name = f"{workload.name}-{secrets.token_hex(3)[:5]}"
        return self._start(self._pod(template, name, workload.namespace, {"job-name": workload.name}))

    def run_cronjob(self, namespace: str, name: str) -> Pod:
        cron = self.workloads[("CronJob", namespace, name)]
        job = {"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": f"{name}-manual-{secrets.token_hex(2)}", "namespace": namespace},
               "spec": cron.obj["spec"]["jobTemplate"]["spec"]}
        workload = self.apply(job)
        return workload.pods[0]

    # ---------------------------------------------------------------------------------------------- changes

    def recreate(self, workload: Workload, pod: Pod, grace: float = 5.0, wipe: bool = False) -> Pod:
        """Delete one pod and let its controller make the replacement (a StatefulSet's keeps name and claims;
        `wipe` empties them first, as a replaced server's new volume would be)."""
        self.kubelet.stop(pod, grace)
        index = workload.pods.index(pod)
        if workload.kind == "DaemonSet":
            node = next(n for n in self.nodes if n.name == pod.node_name)
            new = self._daemon_pod(workload, node)
            workload.pods[index] = new
            return new
        if workload.kind == "StatefulSet":
            ordinal = int(pod.name.rsplit("-", 1)[1])
            if wipe:
                import shutil

                for claim in workload.obj["spec"].get("volumeClaimTemplates") or []:
                    shutil.rmtree(self.storage / workload.namespace / f"{claim['metadata']['name']}-{pod.name}",
                                  ignore_errors=True)
            new = self._statefulset_pod(workload, ordinal)
        else:
            new = self._deployment_pod(workload)
        workload.pods[index] = new
        return new

    def replace(self, workload: Workload, pod: Pod) -> Pod:
        """A pod that is gone (its node died) made again by its controller: a StatefulSet's with its name, claims
        and address, a DaemonSet's on the same node, a Deployment's as a new pod."""
        index = workload.pods.index(pod)
        if workload.kind == "StatefulSet":
            new = self._statefulset_pod(workload, int(pod.name.rsplit("-", 1)[1]))
        elif workload.kind == "DaemonSet":
            new = self._daemon_pod(workload, next(n for n in self.nodes if n.name == pod.node_name))
        else:
            new = self._deployment_pod(workload)
        workload.pods[index] = new
        return new

    def roll(self, workload: Workload, obj: dict[str, Any], timeout: float = 600) -> None:
        """A changed template: each pod replaced by one of the new template, Ready before the next goes. A
        Deployment follows its strategy: with a surge the new pod is Ready before an old one goes; with
        `maxSurge: 0` (what the hub renders: required anti-affinity leaves no server for a surge pod) the old pod
        goes first and the others keep serving. A StatefulSet's RollingUpdate goes from the highest ordinal down."""
        workload.obj = obj
        pods = list(workload.pods)
        if workload.kind == "StatefulSet":
            pods.sort(key=lambda p: int(p.name.rsplit("-", 1)[1]), reverse=True)
        rolling = (obj["spec"].get("strategy") or {}).get("rollingUpdate") or {}
        surge = str(rolling.get("maxSurge", "25%")) not in ("0", "0%")
        for pod in pods:
            if workload.kind == "Deployment" and surge:
                new = self._deployment_pod(workload)
                wait_ready(new, timeout)
                self.kubelet.stop(pod, 5)
                workload.pods[workload.pods.index(pod)] = new
            else:
                wait_ready(self.recreate(workload, pod), timeout)


def wait_ready(pod: Pod, timeout: float) -> Pod:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pod.ready:
            return pod
        if pod.phase == "Failed":
            raise PodError(f"{pod.namespace}/{pod.name} failed: {pod.message}")
        time.sleep(0.5)
    raise TimeoutError(f"{pod.namespace}/{pod.name} not Ready after {timeout:.0f} s "
                       f"({[(c.name, c.ready, c.restarts) for c in pod.containers]}; {pod.events[-5:]})")


def wait_done(pod: Pod, timeout: float) -> Pod:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pod.phase in ("Succeeded", "Failed"):
            return pod
        time.sleep(0.5)
    raise TimeoutError(f"{pod.namespace}/{pod.name} still {pod.phase} after {timeout:.0f} s")
