"""One pod as the kubelet runs it, as local processes: volumes, env, init containers, probes, restarts.

What is done as the kubelet does it (kubernetes v1.35 pkg/kubelet: kuberuntime_container.go, envvars, volume
plugins, prober):
- the Pod is first sent to its API server with `dryRun=All`, so admission (Pod Security from the namespace's labels,
  every other plugin the server runs) decides whether it may exist; a refused pod never starts;
- volumes: `secret`, `configMap` (items, modes, `optional`), `emptyDir`, `projected` (secret, configMap,
  `serviceAccountToken` by TokenRequest and refreshed at 80 % of its life, downwardAPI), `downwardAPI`, and a
  StatefulSet claim's directory, written under the pod's root and bind-mounted at each `mountPath` (`subPath`,
  `readOnly`) in the container's own mount namespace; the automounted API token when the pod asks for one;
- env: service links of the pod's namespace and `KUBERNETES_SERVICE_*`, then `envFrom`, then `env` in order with
  `$(VAR)` expansion, `fieldRef` (name, namespace, uid, labels, annotations, nodeName, serviceAccountName, podIP,
  hostIP), `resourceFieldRef`, `secretKeyRef`, `configMapKeyRef`; `$(VAR)` in command and args; hostname = pod name;
- init containers in order to completion (retried with back-off), native sidecars (`restartPolicy: Always`) started
  and kept running; main containers restarted per the pod's restartPolicy with the kubelet's back-off (10 s doubling
  to 300 s, reset after 10 min running) and counted;
- startup, liveness and readiness probes (httpGet, tcpSocket, exec, grpc as a TCP check), with their delays,
  periods, timeouts and thresholds; liveness failures restart the container; readiness feeds the Service proxy.

What is not: securityContext (processes run as root), resource limits (only read for resourceFieldRef), scheduling
constraints, NetworkPolicies, images (see images.py), bound tokens (the Pod object exists only as a dry run, so
tokens are not bound to it).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.client
import json
import math
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.kubelet.api import Api, ApiError
from tests.support.kubelet.images import ImageTable
from tests.support.kubelet.network import Netns, Network

LAUNCHER = Path(__file__).with_name("launcher.py")
SA_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
BACKOFF_INITIAL, BACKOFF_MAX, BACKOFF_RESET = 10.0, 300.0, 600.0


class PodError(RuntimeError):
    pass


@dataclass
class ClusterContext:
    """The API server a pod belongs to, and what the kubelet tells the pod about it."""

    name: str
    api: Api
    service_host: str
    service_port: int = 443
    node_name: str = "node-0"
    host_ip: str = ""
    cluster_domain: str = "cluster.local"


def expand(value: str, env: Mapping[str, str]) -> str:
    """Kubelet's `$(VAR)` expansion: defined vars replaced, `$$` escapes, unknown references kept."""
    def repl(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))

    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)", repl, value)


def quantity_value(text: str, divisor: str = "1") -> int:
    """`resourceFieldRef`: the quantity divided by the divisor, rounded up (at least 1)."""
    def parse(q: str) -> float:
        units = {"m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30,
                 "Ti": 2**40}
        match = re.fullmatch(r"([0-9.]+)([a-zA-Z]*)", q)
        if not match:
            raise PodError(f"quantity {q!r}")
        return float(match.group(1)) * units.get(match.group(2), 1)

    return max(1, math.ceil(parse(text) / parse(divisor)))


@dataclass
class Probe:
    kind: str
    spec: dict[str, Any]
    successes: int = 0
    failures: int = 0
    next_at: float = 0.0
    passed: bool = False

    @property
    def period(self) -> float:
        return float(self.spec.get("periodSeconds", 10))

    @property
    def timeout(self) -> float:
        return float(self.spec.get("timeoutSeconds", 1))


@dataclass
class Container:
    spec: dict[str, Any]
    init: bool = False
    proc: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    started_at: float = 0.0
    exited_at: float = 0.0
    exit_code: int | None = None
    backoff: float = 0.0
    ready: bool = False
    started: bool = False
    probes: dict[str, Probe] = field(default_factory=dict)
    last_termination: str = ""

    @property
    def name(self) -> str:
        return str(self.spec["name"])

    @property
    def sidecar(self) -> bool:
        return self.init and self.spec.get("restartPolicy") == "Always"

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


@dataclass
class Pod:
    obj: dict[str, Any]
    cluster: ClusterContext
    netns: Netns
    root: Path
    uid: str = field(default_factory=lambda: str(uuid.uuid4()))
    init_containers: list[Container] = field(default_factory=list)
    containers: list[Container] = field(default_factory=list)
    phase: str = "Pending"
    message: str = ""
    admitted: bool = False
    events: list[tuple[float, str]] = field(default_factory=list)
    node: str = ""
    """The node the pod is bound to (`spec.nodeName`); the cluster's default node when empty."""
    host_ip: str = ""
    """A hostNetwork pod's address: its node's (the pod shares the node's namespace)."""

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.obj["metadata"].get("namespace", "default"))

    @property
    def labels(self) -> dict[str, str]:
        return dict(self.obj["metadata"].get("labels") or {})

    @property
    def spec(self) -> dict[str, Any]:
        return dict(self.obj["spec"])

    @property
    def ip(self) -> str:
        return self.host_ip or self.netns.ip

    @property
    def node_name(self) -> str:
        return self.node or self.cluster.node_name

    @property
    def ready(self) -> bool:
        return self.phase == "Running" and all(c.ready for c in self.containers)

    def restarts(self) -> int:
        return sum(c.restarts for c in [*self.init_containers, *self.containers] if not c.init or c.sidecar)

    def note(self, text: str) -> None:
        self.events.append((time.time(), text))

    def restart_story(self, lines: int = 12) -> str:
        """Why this pod's containers restarted, for a failure message: each restarted container's last termination,
        the pod's last events, and the log lines just before the container's last start."""
        out = [f"{self.cluster.name}/{self.namespace}/{self.name}:"]
        out += [f"  event {time.strftime('%H:%M:%S', time.gmtime(at))} {text}" for at, text in self.events[-5:]]
        for c in [*self.init_containers, *self.containers]:
            if not c.restarts:
                continue
            out.append(f"  {c.name}: {c.restarts} restart(s), last termination {c.last_termination or 'unknown'}")
            log = self.root / "logs" / f"{c.name}.log"
            text = log.read_text(errors="replace").splitlines() if log.is_file() else []
            starts = [i for i, line in enumerate(text) if line.startswith("--- ")]
            end = starts[-1] if starts else len(text)
            out += [f"    | {line[:300]}" for line in text[max(0, end - lines):end]]
        return "\n".join(out)

    def container_port(self, port: int | str) -> int:
        if isinstance(port, int) or str(port).isdigit():
            return int(port)
        for c in [*self.containers, *self.init_containers]:
            for p in c.spec.get("ports") or []:
                if p.get("name") == port:
                    return int(p["containerPort"])
        raise PodError(f"{self.namespace}/{self.name}: no container port named {port!r}")


class Kubelet:
    """Runs pods on one machine. Each pod gets a supervisor thread; `close()` stops them all."""

    def __init__(self, network: Network, images: ImageTable, root: Path,
                 hosts_for: Callable[[Pod], str] | None = None,
                 service_links: Callable[[ClusterContext, str], dict[str, str]] | None = None) -> None:
        self.network = network
        self.images = images
        self.root = root
        self.hosts_for = hosts_for or (lambda pod: "127.0.0.1 localhost\n")
        self.service_links = service_links or (lambda cluster, namespace: {})
        self.pods: dict[str, Pod] = {}
        self._threads: dict[str, threading.Thread] = {}
        self._stopping: dict[str, threading.Event] = {}
        self._lock = threading.Lock()
        self._mountpoints: list[Path] = []

    # --------------------------------------------------------------------------------------------- lifecycle

    def run(self, cluster: ClusterContext, obj: dict[str, Any], netns: Netns | None = None,
            storage: Mapping[str, Path] | None = None, node: str = "", host_ip: str = "") -> Pod:
        """Admit and start a pod (a Pod object: metadata + spec). `storage`: claim name -> directory, for a
        StatefulSet pod's claims (kept across restarts by the caller). `node`: the node it is bound to; a
        hostNetwork pod gets that node's namespace (`netns`) and address (`host_ip`)."""
        meta = obj["metadata"]
        key = f"{cluster.name}/{meta.get('namespace', 'default')}/{meta['name']}"
        if key in self.pods and not self._stopping[key].is_set():
            raise PodError(f"{key} is already running")
        if obj["spec"].get("hostNetwork") and netns is None:
            raise PodError(f"{key} uses the host network: the node's namespace must be given")
        netns = netns or self.network.add_namespace(key)
        root = self.root / cluster.name / meta.get("namespace", "default") / meta["name"]
        pod = Pod(obj=obj, cluster=cluster, netns=netns, root=root, node=node, host_ip=host_ip)
        pod.init_containers = [Container(c, init=True) for c in obj["spec"].get("initContainers") or []]
        pod.containers = [Container(c) for c in obj["spec"]["containers"]]
        if not obj["spec"].get("hostNetwork"):  # a node's /etc/hosts is the node's
            self.network.write_files(netns.name, hosts=self.hosts_file(pod))
        stop = threading.Event()
        with self._lock:
            self.pods[key] = pod
            self._stopping[key] = stop
        thread = threading.Thread(target=self._supervise, args=(pod, stop, dict(storage or {})), daemon=True,
                                  name=f"pod {key}")
        self._threads[key] = thread
        thread.start()
        return pod

    def stop(self, pod: Pod, grace: float | None = None) -> None:
        """Delete the pod: SIGTERM, then SIGKILL after its termination grace period (or `grace`)."""
        key = f"{pod.cluster.name}/{pod.namespace}/{pod.name}"
        self._stopping[key].set()
        period = grace if grace is not None else float(pod.spec.get("terminationGracePeriodSeconds", 30))
        for c in [*pod.containers, *pod.init_containers]:
            self._kill(c, period)
        self._threads[key].join(period + 15)
        pod.phase = "Terminated"

    def kill_container(self, pod: Pod, name: str, sig: int = signal.SIGKILL) -> None:
        """A crash of one container (the kubelet restarts it per the pod's policy)."""
        for c in pod.containers:
            if c.name == name and c.running():
                assert c.proc is not None
                os.killpg(c.proc.pid, sig)

    def close(self) -> None:
        for pod in list(self.pods.values()):
            key = f"{pod.cluster.name}/{pod.namespace}/{pod.name}"
            if not self._stopping[key].is_set():
                self.stop(pod, grace=2)
        for path in reversed(self._mountpoints):
            with contextlib.suppress(OSError):
                path.unlink() if path.is_file() else path.rmdir()
        self._mountpoints.clear()

    def hosts_file(self, pod: Pod) -> str:
        """The cluster's names (`hosts_for`) and the pod's own, as the kubelet-managed /etc/hosts has it."""
        spec = pod.obj["spec"]
        hostname = spec.get("hostname") or pod.name
        own = hostname
        if spec.get("subdomain"):
            own = (f"{hostname}.{spec['subdomain']}.{pod.namespace}.svc.{pod.cluster.cluster_domain}\t{hostname}")
        return self.hosts_for(pod) + f"{pod.ip}\t{own}\n"

    def refresh_hosts(self) -> None:
        """Rewrite every running pod's /etc/hosts (a Service or a member's name was added)."""
        for pod in list(self.pods.values()):
            if pod.phase not in ("Terminated",) and not pod.spec.get("hostNetwork"):
                self.network.write_files(pod.netns.name, hosts=self.hosts_file(pod))

    # --------------------------------------------------------------------------------------------- supervisor

    def _supervise(self, pod: Pod, stop: threading.Event, storage: dict[str, Path]) -> None:
        try:
            self._admit(pod)
            while True:  # like the kubelet: a Secret or ConfigMap not there yet keeps the pod Pending, retried
                try:
                    volumes = self._volumes(pod, storage)
                    env_base = self._env_base(pod)
                    break
                except (PodError, ApiError) as exc:
                    if "not found" not in str(exc) or stop.wait(2.0):
                        raise
                    pod.message = str(exc)
            for c in pod.init_containers:
                if c.sidecar:
                    self._start(pod, c, volumes, env_base)
                    if not self._wait_started(pod, c, volumes, env_base, stop):
                        return
                    continue
                while not stop.is_set():
                    self._start(pod, c, volumes, env_base)
                    assert c.proc is not None
                    while c.proc.poll() is None and not stop.is_set():
                        time.sleep(0.2)
                    if stop.is_set():
                        return
                    c.exit_code = c.proc.returncode
                    if c.exit_code == 0:
                        break
                    c.restarts += 1
                    if pod.spec.get("restartPolicy") == "Never":
                        pod.phase, pod.message = "Failed", f"init container {c.name} exited {c.exit_code}"
                        return
                    self._sleep_backoff(c, stop)
            pod.phase = "Running"
            for c in pod.containers:
                self._start(pod, c, volumes, env_base)
            while not stop.is_set():
                self._tick(pod, volumes, env_base, stop)
                if pod.phase in ("Succeeded", "Failed"):
                    return
                stop.wait(0.2)
        except Exception as exc:  # recorded on the pod, read by the harness
            pod.phase, pod.message = "Failed", f"{type(exc).__name__}: {exc}"
            pod.note(pod.message)

    def _tick(self, pod: Pod, volumes: list[tuple[str, dict[str, Any]]], env_base: dict[str, str],
              stop: threading.Event) -> None:
        policy = pod.spec.get("restartPolicy", "Always")
        for c in [*[s for s in pod.init_containers if s.sidecar], *pod.containers]:
            if c.proc is not None and c.proc.poll() is not None:
                c.exit_code, c.exited_at, c.ready, c.started = c.proc.returncode, time.monotonic(), False, False
                c.last_termination = f"exit {c.exit_code}"
                pod.note(f"{c.name} exited {c.exit_code}")
                c.proc = None
            if c.proc is None:
                again = c.sidecar or policy == "Always" or (policy == "OnFailure" and c.exit_code not in (0, None))
                if again and time.monotonic() - c.exited_at >= c.backoff:
                    c.restarts += 1
                    self._start(pod, c, volumes, env_base)
                continue
            self._probe_all(pod, c)
        if policy != "Always" and all(c.proc is None for c in pod.containers):
            codes = [c.exit_code for c in pod.containers]
            if all(code == 0 for code in codes):
                pod.phase = "Succeeded"
            elif policy == "Never":
                pod.phase, pod.message = "Failed", f"exit codes {codes}"
        self._refresh_tokens(pod, volumes)

    def _start(self, pod: Pod, c: Container, volumes: list[tuple[str, dict[str, Any]]],
               env_base: dict[str, str]) -> None:
        env = self._env(pod, c, env_base)
        command = [expand(a, env) for a in c.spec.get("command") or []]
        args = [expand(a, env) for a in c.spec.get("args") or []]
        image = c.spec["image"]
        host_argv = (self.images.resolve(image, command + args) if command
                     else [*self.images.resolve(image, []), *args])
        mounts = self._mounts(pod, c, volumes) + self._image_files(pod, c)
        spec = {"mounts": mounts, "env": env, "cwd": c.spec.get("workingDir") or "/", "argv": host_argv,
                "hostname": pod.obj["spec"].get("hostname") or pod.name}
        log_path = pod.root / "logs" / f"{c.name}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("ab") as log:
            log.write(f"--- {time.strftime('%H:%M:%S')} start {c.name} (restart {c.restarts})\n".encode())
            log.flush()
            c.proc = subprocess.Popen(
                self.network.exec_argv(pod.netns.name, [sys.executable, str(LAUNCHER), json.dumps(spec)]),
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd="/")
        self.network.ledger.add("pgids", str(c.proc.pid))
        c.started_at = time.monotonic()
        if c.exited_at and c.started_at - c.exited_at > BACKOFF_RESET:
            c.backoff = 0.0
        c.backoff = BACKOFF_INITIAL if not c.backoff else min(BACKOFF_MAX, c.backoff * 2)
        c.probes = {kind: Probe(kind, c.spec[f"{kind}Probe"],
                                next_at=c.started_at + float(c.spec[f"{kind}Probe"].get("initialDelaySeconds", 0)))
                    for kind in ("startup", "liveness", "readiness") if c.spec.get(f"{kind}Probe")}
        c.started = "startup" not in c.probes
        c.ready = not c.init and "readiness" not in c.probes and c.started
        pod.note(f"{c.name} started")

    def _wait_started(self, pod: Pod, c: Container, volumes: list[tuple[str, dict[str, Any]]],
                      env_base: dict[str, str], stop: threading.Event) -> bool:
        while not stop.is_set():
            if not c.running():
                c.exited_at = time.monotonic()
                self._sleep_backoff(c, stop)
                c.restarts += 1
                self._start(pod, c, volumes, env_base)
                continue
            self._probe_all(pod, c)
            if c.started:
                return True
            stop.wait(0.2)
        return False

    def _sleep_backoff(self, c: Container, stop: threading.Event) -> None:
        stop.wait(c.backoff)

    def _kill(self, c: Container, grace: float) -> None:
        if not c.running():
            return
        assert c.proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(c.proc.pid, signal.SIGTERM)
        try:
            c.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(c.proc.pid, signal.SIGKILL)
            c.proc.wait(timeout=10)
        self.network.ledger.remove("pgids", str(c.proc.pid))

    # --------------------------------------------------------------------------------------------- admission

    def _admit(self, pod: Pod) -> None:
        obj = json.loads(json.dumps(pod.obj))
        obj.setdefault("apiVersion", "v1")
        obj.setdefault("kind", "Pod")
        obj["spec"]["nodeName"] = pod.node_name
        try:
            try:
                pod.cluster.api.create(obj, dry_run=True)
            except ApiError as exc:
                if exc.status != 409:
                    raise
                # a Pod of this name is the status mirror's record of the pod this one replaces (a StatefulSet's
                # keeps its name), which is gone: remove it first, as the StatefulSet controller waits for the old
                # Pod's deletion before it creates the new one
                self._remove_stale_pod(pod)
                pod.cluster.api.create(obj, dry_run=True)
        except ApiError as exc:
            raise PodError(f"admission refused {pod.namespace}/{pod.name}: {exc}") from None
        pod.admitted = True

    @staticmethod
    def _remove_stale_pod(pod: Pod, timeout: float = 30.0) -> None:
        """Delete the Pod object of a previous incarnation at once (grace 0, as a kubelet confirms a termination;
        its finalizers dropped: nothing runs it any more) and wait until the API has forgotten it."""
        api, path = pod.cluster.api, f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}"
        api.request("DELETE", path, {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status, body = api.request("GET", path)
            if status == 404:
                return
            if (body.get("metadata") or {}).get("finalizers"):
                api.request("PATCH", path, {"metadata": {"finalizers": None}},
                            content_type="application/merge-patch+json")
            time.sleep(0.2)

    # --------------------------------------------------------------------------------------------- env

    def _field(self, pod: Pod, path: str) -> str:
        meta = pod.obj["metadata"]
        simple = {"metadata.name": pod.name, "metadata.namespace": pod.namespace, "metadata.uid": pod.uid,
                  "spec.nodeName": pod.node_name,
                  "spec.serviceAccountName": pod.spec.get("serviceAccountName", "default"),
                  "status.podIP": pod.ip, "status.podIPs": pod.ip,
                  "status.hostIP": pod.host_ip or pod.cluster.host_ip or pod.ip,
                  "status.hostIPs": pod.host_ip or pod.cluster.host_ip or pod.ip}
        if path in simple:
            return simple[path]
        match = re.fullmatch(r"metadata\.(labels|annotations)\['(.+)'\]", path)
        if match:
            return str((meta.get(match.group(1)) or {}).get(match.group(2), ""))
        if path in ("metadata.labels", "metadata.annotations"):
            items = meta.get(path.split(".")[1]) or {}
            return "\n".join(f'{k}="{v}"' for k, v in sorted(items.items()))
        raise PodError(f"fieldRef {path} is not one the kubelet serves")

    def _resource(self, c: Container, ref: dict[str, Any]) -> str:
        resource = ref["resource"]
        kind, _, name = resource.partition(".")
        resources = c.spec.get("resources") or {}
        value = (resources.get(kind) or {}).get(name)
        if value is None and kind == "limits":
            value = "2" if name == "cpu" else str(24 * 2**30)  # node allocatable when unlimited
        if value is None:
            value = "0"
        return str(quantity_value(str(value), str(ref.get("divisor", "1"))))

    def _env_base(self, pod: Pod) -> dict[str, str]:
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME": pod.name}
        if pod.spec.get("enableServiceLinks", True):
            env.update(self.service_links(pod.cluster, pod.namespace))
        host, port = pod.cluster.service_host, pod.cluster.service_port
        env.update({"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": str(port),
                    "KUBERNETES_SERVICE_PORT_HTTPS": str(port), "KUBERNETES_PORT": f"tcp://{host}:{port}",
                    f"KUBERNETES_PORT_{port}_TCP": f"tcp://{host}:{port}", f"KUBERNETES_PORT_{port}_TCP_PROTO": "tcp",
                    f"KUBERNETES_PORT_{port}_TCP_PORT": str(port), f"KUBERNETES_PORT_{port}_TCP_ADDR": host})
        return env

    def _env(self, pod: Pod, c: Container, base: dict[str, str]) -> dict[str, str]:
        env = dict(base)
        api = pod.cluster.api
        for source in c.spec.get("envFrom") or []:
            prefix = source.get("prefix", "")
            if "configMapRef" in source:
                data = self._config_map(pod, source["configMapRef"]["name"], source["configMapRef"].get("optional"))
            else:
                data = self._secret(pod, source["secretRef"]["name"], source["secretRef"].get("optional"))
            env.update({prefix + k: v.decode() if isinstance(v, bytes) else v for k, v in data.items()})
        for var in c.spec.get("env") or []:
            if "value" in var:
                env[var["name"]] = expand(str(var["value"]), env)
                continue
            source = var.get("valueFrom") or {}
            if "fieldRef" in source:
                env[var["name"]] = self._field(pod, source["fieldRef"]["fieldPath"])
            elif "resourceFieldRef" in source:
                env[var["name"]] = self._resource(c, source["resourceFieldRef"])
            elif "secretKeyRef" in source:
                ref = source["secretKeyRef"]
                value = self._secret(pod, ref["name"], ref.get("optional")).get(ref["key"])
                if value is None and not ref.get("optional"):
                    raise PodError(f"secret {ref['name']} has no key {ref['key']}")
                if value is not None:
                    env[var["name"]] = value.decode()
            elif "configMapKeyRef" in source:
                ref = source["configMapKeyRef"]
                value = self._config_map(pod, ref["name"], ref.get("optional")).get(ref["key"])
                if value is None and not ref.get("optional"):
                    raise PodError(f"configMap {ref['name']} has no key {ref['key']}")
                if value is not None:
                    env[var["name"]] = value if isinstance(value, str) else value.decode()
            else:
                env[var["name"]] = ""
        del api
        return env

    # --------------------------------------------------------------------------------------------- volumes

    def _secret(self, pod: Pod, name: str, optional: bool | None) -> dict[str, bytes]:
        obj = pod.cluster.api.get("v1", "Secret", name, pod.namespace)
        if obj is None:
            if optional:
                return {}
            raise PodError(f"secret {pod.namespace}/{name} not found")
        return {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}

    def _config_map(self, pod: Pod, name: str, optional: bool | None) -> dict[str, Any]:
        obj = pod.cluster.api.get("v1", "ConfigMap", name, pod.namespace)
        if obj is None:
            if optional:
                return {}
            raise PodError(f"configMap {pod.namespace}/{name} not found")
        return {**(obj.get("data") or {}),
                **{k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()}}

    def _write(self, directory: Path, files: Mapping[str, bytes | str], mode: int) -> None:
        for rel, content in files.items():
            path = directory / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content if isinstance(content, bytes) else content.encode())
            path.chmod(mode)

    def _keyed(self, data: Mapping[str, Any], items: list[dict[str, Any]] | None, what: str,
               optional: bool | None) -> tuple[dict[str, Any], dict[str, int]]:
        if not items:
            return dict(data), {}
        out, modes = {}, {}
        for item in items:
            if item["key"] not in data:
                if optional:
                    continue
                raise PodError(f"{what} has no key {item['key']}")
            out[item["path"]] = data[item["key"]]
            if "mode" in item:
                modes[item["path"]] = int(item["mode"])
        return out, modes

    def _token(self, pod: Pod, audience: str | None, seconds: int) -> str:
        account = pod.spec.get("serviceAccountName") or "default"
        return pod.cluster.api.request_token(pod.namespace, account, [audience] if audience else None, seconds)

    def _projected(self, pod: Pod, sources: list[dict[str, Any]]) -> dict[str, Any]:
        files: dict[str, Any] = {}
        for source in sources:
            if "secret" in source:
                s = source["secret"]
                data, _ = self._keyed(self._secret(pod, s["name"], s.get("optional")), s.get("items"),
                                      f"secret {s['name']}", s.get("optional"))
                files.update(data)
            elif "configMap" in source:
                s = source["configMap"]
                data, _ = self._keyed(self._config_map(pod, s["name"], s.get("optional")), s.get("items"),
                                      f"configMap {s['name']}", s.get("optional"))
                files.update(data)
            elif "serviceAccountToken" in source:
                s = source["serviceAccountToken"]
                files[s["path"]] = self._token(pod, s.get("audience"), int(s.get("expirationSeconds", 3607)))
            elif "downwardAPI" in source:
                for item in source["downwardAPI"]["items"]:
                    files[item["path"]] = self._field(pod, item["fieldRef"]["fieldPath"])
            else:
                raise PodError(f"projected source {sorted(source)} is not supported")
        return files

    def _volumes(self, pod: Pod, storage: dict[str, Path]) -> list[tuple[str, dict[str, Any]]]:
        """Materialise every volume under the pod's root; returns (name, volume) with `_path` set."""
        out = []
        volumes = list(pod.spec.get("volumes") or [])
        if pod.spec.get("automountServiceAccountToken", True) and not any(
                m.get("mountPath") == SA_MOUNT for c in pod.containers for m in c.spec.get("volumeMounts") or []):
            volumes.append({"name": "kube-api-access", "projected": {"sources": [
                {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}]}},
            ]}, "_auto": True})
        for volume in volumes:
            name = volume["name"]
            path = pod.root / "volumes" / name
            if "persistentVolumeClaim" in volume or name in storage:
                claim = volume.get("persistentVolumeClaim", {}).get("claimName", name)
                if name not in storage and claim not in storage:
                    raise PodError(f"claim {claim}: no directory stands in for it")
                path = storage.get(name) or storage[claim]
                path.mkdir(parents=True, exist_ok=True)
            elif "emptyDir" in volume:
                path.mkdir(parents=True, exist_ok=True)
            elif "hostPath" in volume:
                # the node's own directory: kept across the pod's restarts and re-creations on that node
                path = self.root.parent / "nodes" / pod.node_name / volume["hostPath"]["path"].lstrip("/")
                if volume["hostPath"].get("type", "") not in ("", "DirectoryOrCreate", "Directory"):
                    raise PodError(f"volume {name}: hostPath type {volume['hostPath']['type']} is not supported")
                path.mkdir(parents=True, exist_ok=True)
            elif "secret" in volume:
                s = volume["secret"]
                data, modes = self._keyed(self._secret(pod, s["secretName"], s.get("optional")), s.get("items"),
                                          f"secret {s['secretName']}", s.get("optional"))
                path.mkdir(parents=True, exist_ok=True)
                self._write(path, data, int(s.get("defaultMode", 0o644)))
                for rel, mode in modes.items():
                    (path / rel).chmod(mode)
            elif "configMap" in volume:
                s = volume["configMap"]
                data, modes = self._keyed(self._config_map(pod, s["name"], s.get("optional")), s.get("items"),
                                          f"configMap {s['name']}", s.get("optional"))
                path.mkdir(parents=True, exist_ok=True)
                self._write(path, data, int(s.get("defaultMode", 0o644)))
                for rel, mode in modes.items():
                    (path / rel).chmod(mode)
            elif "projected" in volume:
                path.mkdir(parents=True, exist_ok=True)
                self._write(path, self._projected(pod, volume["projected"]["sources"]),
                            int(volume["projected"].get("defaultMode", 0o644)))
                volume = {**volume, "_written": time.monotonic()}
            elif "downwardAPI" in volume:
                path.mkdir(parents=True, exist_ok=True)
                self._write(path, {i["path"]: self._field(pod, i["fieldRef"]["fieldPath"])
                                   for i in volume["downwardAPI"]["items"]}, 0o644)
            else:
                raise PodError(f"volume {name}: {sorted(k for k in volume if k != 'name')} is not supported")
            out.append((name, {**volume, "_path": str(path)}))
        return out

    def _refresh_tokens(self, pod: Pod, volumes: list[tuple[str, dict[str, Any]]]) -> None:
        """Projected tokens are rewritten at 80 % of their life, as the kubelet's token manager does."""
        for i, (name, volume) in enumerate(volumes):
            if "projected" not in volume:
                continue
            lives = [int(s["serviceAccountToken"].get("expirationSeconds", 3607))
                     for s in volume["projected"]["sources"] if "serviceAccountToken" in s]
            if lives and time.monotonic() - volume["_written"] > 0.8 * min(lives):
                self._write(Path(volume["_path"]), self._projected(pod, volume["projected"]["sources"]),
                            int(volume["projected"].get("defaultMode", 0o644)))
                volumes[i] = (name, {**volume, "_written": time.monotonic()})

    def _mountpoint(self, target: Path, is_file: bool) -> None:
        if target.exists():
            return
        missing = []
        parent = target.parent
        while not parent.exists():
            missing.append(parent)
            parent = parent.parent
        for directory in reversed(missing):
            directory.mkdir()
            self._mountpoints.append(directory)
            self.network.ledger.add("dirs", str(directory))
        if is_file:
            target.touch()
        else:
            target.mkdir()
        self._mountpoints.append(target)
        self.network.ledger.add("dirs", str(target))

    def _mounts(self, pod: Pod, c: Container, volumes: list[tuple[str, dict[str, Any]]]) -> list[list[Any]]:
        by_name = dict(volumes)
        mounts = []
        wanted = list(c.spec.get("volumeMounts") or [])
        auto = by_name.get("kube-api-access")
        if auto and auto.get("_auto") and not any(m["mountPath"] == SA_MOUNT for m in wanted):
            wanted.append({"name": "kube-api-access", "mountPath": SA_MOUNT, "readOnly": True})
        for m in wanted:
            volume = by_name.get(m["name"])
            if volume is None:
                raise PodError(f"{c.name}: volumeMount {m['name']} names no volume")
            source = Path(volume["_path"]) / m.get("subPath", "")
            if m.get("subPath") and not source.exists():
                source.mkdir(parents=True)
            target = Path(m["mountPath"])
            nested = any(Path(o["mountPath"]) in target.parents for o in wanted)
            if not nested:  # one under another mount is made inside it by the launcher
                with self._lock:
                    self._mountpoint(target, source.is_file())
            mounts.append([str(source), str(target), bool(m.get("readOnly"))])
        return mounts

    def _image_files(self, pod: Pod, c: Container) -> list[list[Any]]:
        """Files the image has at their paths (read-only), e.g. its user database."""
        out = []
        for path, content in self.images.files(c.spec["image"]).items():
            source = pod.root / "image" / c.name / path.lstrip("/")
            source.parent.mkdir(parents=True, exist_ok=True)
            source.write_text(content)
            out.append([str(source), path, True])
        return out

    # --------------------------------------------------------------------------------------------- probes

    def _probe_all(self, pod: Pod, c: Container) -> None:
        now = time.monotonic()
        for kind in ("startup", "liveness", "readiness"):
            probe = c.probes.get(kind)
            if probe is None or now < probe.next_at or (kind != "startup" and not c.started):
                continue
            probe.next_at = now + probe.period
            ok = self._probe(pod, c, probe)
            if ok:
                probe.successes, probe.failures = probe.successes + 1, 0
            else:
                probe.failures, probe.successes = probe.failures + 1, 0
            success_at = int(probe.spec.get("successThreshold", 1))
            failure_at = int(probe.spec.get("failureThreshold", 3))
            if kind == "startup":
                if probe.successes >= 1:
                    c.started = True
                    c.ready = "readiness" not in c.probes and not c.init
                elif probe.failures >= failure_at:
                    pod.note(f"{c.name} startup probe failed {probe.failures} times: restarting")
                    self._kill(c, float(pod.spec.get("terminationGracePeriodSeconds", 30)))
            elif kind == "readiness":
                if probe.successes >= success_at:
                    c.ready = True
                elif probe.failures >= failure_at:
                    c.ready = False
            elif kind == "liveness" and probe.failures >= failure_at:
                pod.note(f"{c.name} liveness probe failed {probe.failures} times: restarting")
                c.last_termination = "liveness"
                self._kill(c, float(probe.spec.get("terminationGracePeriodSeconds",
                                                   pod.spec.get("terminationGracePeriodSeconds", 30))))

    def _probe(self, pod: Pod, c: Container, probe: Probe) -> bool:
        spec = probe.spec
        try:
            if "httpGet" in spec:
                get = spec["httpGet"]
                host = get.get("host") or pod.ip
                port = pod.container_port(get["port"])
                if get.get("scheme", "HTTP").upper() == "HTTPS":
                    context = ssl.create_default_context()
                    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
                    conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                        host, port, timeout=probe.timeout, context=context)
                else:
                    conn = http.client.HTTPConnection(host, port, timeout=probe.timeout)
                try:
                    headers = {h["name"]: h["value"] for h in get.get("httpHeaders") or []}
                    conn.request("GET", get.get("path", "/"), headers={"User-Agent": "kube-probe/1.35", **headers})
                    status = conn.getresponse().status
                finally:
                    conn.close()
                return 200 <= status < 400
            if "tcpSocket" in spec or "grpc" in spec:
                port = pod.container_port((spec.get("tcpSocket") or spec["grpc"])["port"])
                with socket.create_connection((pod.ip, port), timeout=probe.timeout):
                    return True
            if "exec" in spec:
                env = self._env(pod, c, self._env_base(pod))
                argv = self.images.resolve(c.spec["image"], [expand(a, env) for a in spec["exec"]["command"]])
                spec_json = {"mounts": [], "env": env, "cwd": "/", "argv": argv, "hostname": pod.name}
                res = subprocess.run(self.network.exec_argv(pod.netns.name, [sys.executable, str(LAUNCHER),
                                                                             json.dumps(spec_json)]),
                                     capture_output=True, timeout=probe.timeout + 5)
                return res.returncode == 0
        except (OSError, http.client.HTTPException, subprocess.TimeoutExpired):
            return False
        raise PodError(f"{c.name}: probe {sorted(spec)} is not supported")


def pod_template_hash(template: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:10]
