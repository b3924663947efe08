"""The process kubelet against a real kube-apiserver: what a pod sees is what the kubelet would give it.

A stand-in cluster (the pinned etcd and kube-apiserver) admits the pods; each runs in its own network namespace.
The pod under test is a small Python server that reports what it sees (files at their mount paths, env, hostname),
so each kubelet duty is checked from inside the pod, not from the harness's own bookkeeping.
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components import versions
from tests.support.kubelet.api import wait_for
from tests.support.kubelet.images import ImageTable
from tests.support.kubelet.mirror import StatusMirror
from tests.support.kubelet.network import LEDGER_DIR, Network, free_subnet, reap_stale
from tests.support.kubelet.pod import ClusterContext, Kubelet, PodError, expand, quantity_value
from tests.support.kubelet.workloads import Controllers, wait_done, wait_ready
from tests.support.realfleet.standin import HOST_CONTROLLERS, StandinCluster
from tests.support.tools import require_upstream

PYTHON = versions.AGENT_PYTHON_IMAGE

SERVER = r'''
import http.server, json, os, pathlib, socket
die = pathlib.Path("/data/die")
class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args): pass
    def do_GET(self):
        if self.path == "/live" and die.exists():
            self.send_response(500); self.end_headers(); return
        def read(p):
            try: return pathlib.Path(p).read_text()
            except OSError as exc: return f"<{exc.__class__.__name__}>"
        body = json.dumps({
            "token": read("/etc/creds/token"), "init": read("/data/init.txt"),
            "script_dir": sorted(os.listdir("/opt/demo")),
            "sa_token": len(read("/var/run/secrets/kubernetes.io/serviceaccount/token")),
            "sa_namespace": read("/var/run/secrets/kubernetes.io/serviceaccount/namespace"),
            "env": {k: v for k, v in os.environ.items() if k.startswith(("DEMO_", "KUBERNETES_SERVICE"))},
            "hostname": socket.gethostname(), "ro": os.access("/etc/creds", os.W_OK)}).encode()
        self.send_response(200); self.end_headers(); self.wfile.write(body)
die.unlink(missing_ok=True)
http.server.HTTPServer((os.environ["DEMO_POD_IP"], 8080), Handler).serve_forever()
'''


def _objects(namespace: str, level: str) -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": namespace, "labels": {"pod-security.kubernetes.io/enforce": level}}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "demo", "namespace": namespace}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds", "namespace": namespace},
         "stringData": {"token": "s3cret"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "script", "namespace": namespace},
         "data": {"server.py": SERVER}},
    ]


def _deployment(namespace: str) -> dict[str, Any]:
    probe = {"periodSeconds": 1, "timeoutSeconds": 2, "failureThreshold": 3}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "demo", "namespace": namespace},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "demo"}}, "template": {
                "metadata": {"labels": {"app": "demo", "tier": "web"}},
                "spec": {
                    "serviceAccountName": "demo", "terminationGracePeriodSeconds": 2,
                    "initContainers": [{"name": "init", "image": PYTHON, "command": ["python3", "-c"],
                                        "args": ["open('/data/init.txt','w').write('from $(DEMO_POD_NAME)')"],
                                        "env": [{"name": "DEMO_POD_NAME",
                                                 "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                                        "volumeMounts": [{"name": "work", "mountPath": "/data"}]}],
                    "containers": [{
                        "name": "server", "image": PYTHON, "command": ["python3", "/opt/demo/server.py"],
                        "ports": [{"name": "http", "containerPort": 8080}],
                        "env": [
                            {"name": "DEMO_POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                            {"name": "DEMO_TIER", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['tier']"}}},
                            {"name": "DEMO_URL", "value": "http://$(DEMO_POD_IP):8080/$(DEMO_UNSET)"},
                            {"name": "DEMO_SECRET", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
                            {"name": "DEMO_CPUS", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu",
                                                                                     "divisor": "1m"}}},
                        ],
                        "resources": {"limits": {"cpu": "1500m"}},
                        "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}, **probe},
                        "livenessProbe": {"httpGet": {"path": "/live", "port": 8080}, "initialDelaySeconds": 5,
                                          **probe},
                        # /tmp first: a pod's mount over where this machine keeps the pod's files hides none of them
                        "volumeMounts": [{"name": "scratch", "mountPath": "/tmp"},
                                         {"name": "work", "mountPath": "/data"},
                                         {"name": "creds", "mountPath": "/etc/creds", "readOnly": True},
                                         {"name": "script", "mountPath": "/opt/demo"}]}],
                    "volumes": [{"name": "work", "emptyDir": {}}, {"name": "scratch", "emptyDir": {}},
                                {"name": "creds", "secret": {"secretName": "creds", "defaultMode": 0o400}},
                                {"name": "script", "configMap": {"name": "script"}}]}}}}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Network, StandinCluster, Kubelet, Path]]:
    require_upstream("etcd", "kube-apiserver", "kube-controller-manager")
    reap_stale()
    work = tmp_path_factory.mktemp("kubelet")
    network = Network()
    network.start()
    # a service CIDR of its own, free on this machine: k3s's 10.43.0.0/16 is the real fleet's while it runs
    services = free_subnet(20, ipaddress.ip_network("10.232.0.0/13"))
    host = StandinCluster("host", network, work, controllers=HOST_CONTROLLERS, service_cidr=str(services))
    kubelet = Kubelet(network, ImageTable.default(), work / "pods")
    try:
        host.start()
        assert host.netns is not None
        network.add_vip(host.kubernetes_ip)
        network.proxy.listen(host.kubernetes_ip, 443, lambda: [(host.netns.ip, 6443)])  # type: ignore[union-attr]
        yield network, host, kubelet, work
    finally:
        kubelet.close()
        host.stop()
        network.close()


def _context(host: StandinCluster) -> ClusterContext:
    return ClusterContext("host", host.api, host.kubernetes_ip)


def _get(ip: str, path: str = "/") -> dict[str, Any]:
    with urllib.request.urlopen(f"http://{ip}:8080{path}", timeout=3) as resp:
        return dict(json.loads(resp.read()))


def test_expansion_and_quantities() -> None:
    assert expand("$(A)-$(B)-$$(A)", {"A": "x"}) == "x-$(B)-$(A)"
    assert quantity_value("1500m", "500m") == 3
    assert quantity_value("100m") == 1


def test_a_pod_sees_what_the_kubelet_gives_it(cluster: tuple[Network, StandinCluster, Kubelet, Path]) -> None:
    _, host, kubelet, work = cluster
    for obj in _objects("demo", "privileged"):
        host.api.apply(obj)
    wait_for("the demo service account", lambda: host.api.get("v1", "ConfigMap", "kube-root-ca.crt", "demo"), 60)
    controllers = Controllers(kubelet, _context(host), work / "storage")
    pod = controllers.apply(_deployment("demo")).pods[0]
    wait_ready(pod, 120)
    seen = _get(pod.ip)
    assert seen["token"] == "s3cret" and seen["ro"] is False          # Secret volume, read-only mount
    assert seen["init"] == f"from {pod.name}"                          # the init container ran first, same emptyDir
    assert seen["script_dir"] == ["server.py"]                         # ConfigMap volume at its mount path
    assert seen["sa_token"] > 100 and seen["sa_namespace"] == "demo"   # the automounted projected token
    assert seen["hostname"] == pod.name
    assert seen["env"]["DEMO_TIER"] == "web"
    assert seen["env"]["DEMO_URL"] == f"http://{pod.ip}:8080/$(DEMO_UNSET)"
    assert seen["env"]["DEMO_SECRET"] == "s3cret" and seen["env"]["DEMO_CPUS"] == "1500"
    assert seen["env"]["KUBERNETES_SERVICE_HOST"] == host.kubernetes_ip
    # the projected token is a real one: the API server accepts it for the pod's service account
    token = (pod.root / "volumes" / "kube-api-access" / "token").read_text()
    review = host.api.create({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                              "spec": {"token": token}})
    assert review["status"]["user"]["username"] == "system:serviceaccount:demo:demo"

    # liveness: three failed probes restart the container, and the restart is counted
    (pod.root / "volumes" / "work" / "die").write_text("x")
    wait_for("a liveness restart", lambda: pod.containers[0].restarts >= 1, 60, 0.5)
    wait_ready(pod, 60)
    assert _get(pod.ip)["init"] == f"from {pod.name}"

    kubelet.stop(pod, grace=2)
    assert not pod.containers[0].running()


def test_pod_security_refuses_a_pod_before_it_runs(cluster: tuple[Network, StandinCluster, Kubelet, Path]) -> None:
    _, host, kubelet, work = cluster
    for obj in _objects("locked", "restricted"):
        host.api.apply(obj)
    controllers = Controllers(kubelet, _context(host), work / "storage")
    pod = controllers.apply(_deployment("locked")).pods[0]
    with pytest.raises(PodError, match="violates PodSecurity \"restricted:latest\""):
        wait_ready(pod, 60)
    assert not pod.admitted and all(c.proc is None for c in pod.containers)


def test_a_job_runs_to_completion_and_a_missing_secret_keeps_the_pod_pending(
        cluster: tuple[Network, StandinCluster, Kubelet, Path]) -> None:
    _, host, kubelet, work = cluster
    for obj in _objects("jobs", "baseline"):
        host.api.apply(obj)
    controllers = Controllers(kubelet, _context(host), work / "storage")
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once", "namespace": "jobs"},
           "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
               {"name": "c", "image": PYTHON, "command": ["python3", "-c", "import sys; sys.exit(0)"]}]}}}}
    assert wait_done(controllers.apply(job).pods[0], 60).phase == "Succeeded"
    missing = json.loads(json.dumps(job))
    missing["metadata"]["name"] = "missing"
    missing["spec"]["template"]["spec"]["volumes"] = [{"name": "s", "secret": {"secretName": "nope"}}]
    missing["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [{"name": "s", "mountPath": "/s"}]
    pending = controllers.apply(missing).pods[0]
    wait_for("the missing Secret reported", lambda: "secret jobs/nope not found" in pending.message, 30, 0.5)
    assert pending.phase == "Pending" and all(c.proc is None for c in pending.containers)
    host.api.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "nope", "namespace": "jobs"},
                    "stringData": {"k": "v"}})
    assert wait_done(pending, 60).phase == "Succeeded"


def test_everything_made_is_removed(tmp_path: Path) -> None:
    require_upstream("etcd", "kube-apiserver")
    network = Network()
    network.start()
    host = StandinCluster("host", network, tmp_path)
    kubelet = Kubelet(network, ImageTable.default(), tmp_path / "pods")
    try:
        host.start()
        ns = network.add_namespace("extra")
        assert ns.name in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    finally:
        kubelet.close()
        host.stop()
        network.close()
    assert network.tag not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert network.bridge not in subprocess.run(["ip", "link"], capture_output=True, text=True).stdout
    assert not (LEDGER_DIR / f"{network.tag}.json").exists()
    assert not any(p.poll() is None for p in (proc.proc for proc in host.procs.values()) if p is not None)


def test_a_killed_run_is_reaped_by_the_next(tmp_path: Path) -> None:
    """A run killed with SIGKILL leaves its namespaces and processes; the next run's reaper removes them."""
    require_upstream("etcd")
    script = tmp_path / "victim.py"
    script.write_text(
        "import time\nfrom tests.support.kubelet.network import Network\n"
        "n = Network(); n.start(); ns = n.add_namespace('victim')\nprint(n.tag, ns.name, flush=True)\n"
        "time.sleep(600)\n")
    from tests.support.tools import REPO

    proc = subprocess.Popen([__import__("sys").executable, str(script)], cwd=REPO, stdout=subprocess.PIPE,
                            text=True, env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    assert proc.stdout is not None
    tag, name = proc.stdout.readline().split()
    proc.kill()
    proc.wait(10)
    assert name in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert tag in reap_stale()
    assert name not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout



def test_the_status_mirror_shows_the_pods_and_their_workloads(
        cluster: tuple[Network, StandinCluster, Kubelet, Path]) -> None:
    """What a kube-controller-manager and kubelet would show through the API: the Deployment's status and a Pod per
    process pod, current as the pod restarts, stops and is replaced; a workload nothing runs shows 0 ready; the
    stand-in makes no ReplicaSet (the mirror is the only writer); closing removes what it published."""
    _, host, kubelet, work = cluster
    api = host.api
    for obj in _objects("mirror", "privileged"):
        api.apply(obj)
    wait_for("the mirror service account", lambda: api.get("v1", "ConfigMap", "kube-root-ca.crt", "mirror"), 60)
    demo = _deployment("mirror")
    idle = json.loads(json.dumps(demo))
    idle["metadata"]["name"] = "idle"
    for obj in (demo, idle):
        api.apply(obj)
    controllers = Controllers(kubelet, _context(host), work / "storage-mirror")
    mirror = StatusMirror(kubelet, controllers, api, interval=0.5).start()
    try:
        workload = controllers.apply(demo)
        pod = wait_ready(workload.pods[0], 120)

        def deployment(name: str = "demo") -> dict[str, Any]:
            return (api.get("apps/v1", "Deployment", name, "mirror") or {}).get("status") or {}

        def live_pod(name: str) -> dict[str, Any] | None:
            return api.get("v1", "Pod", name, "mirror")

        def ready(obj: dict[str, Any] | None) -> bool:
            return any(c["type"] == "Ready" and c["status"] == "True"
                       for c in ((obj or {}).get("status") or {}).get("conditions") or [])

        status = wait_for("the Deployment's status", lambda: (s := deployment()).get("readyReplicas") == 1 and s, 30,
                          0.5)
        assert status["replicas"] == status["availableReplicas"] == status["updatedReplicas"] == 1
        assert status["observedGeneration"] == api.get("apps/v1", "Deployment", "demo", "mirror")["metadata"][
            "generation"]
        obj = wait_for("the Pod object Ready", lambda: ready(p := live_pod(pod.name)) and p, 30, 0.5)
        assert obj["spec"]["nodeName"] == pod.node_name and obj["status"]["podIP"] == pod.ip
        assert obj["status"]["phase"] == "Running" and obj["metadata"]["labels"]["app"] == "demo"
        [server] = obj["status"]["containerStatuses"]
        assert server["ready"] is True and server["restartCount"] == 0 and "running" in server["state"]
        assert obj["status"]["initContainerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
        idle_status = wait_for("the idle Deployment's status", lambda: "observedGeneration" in (s := deployment(
            "idle")) and s, 30, 0.5)
        assert idle_status.get("readyReplicas", 0) == 0 and idle_status["unavailableReplicas"] == 1

        # a liveness restart: counted in the Pod's containerStatuses, Ready again after
        (pod.root / "volumes" / "work" / "die").write_text("x")
        wait_for("the restart in the API", lambda: live_pod(pod.name)["status"]["containerStatuses"][0][
            "restartCount"] >= 1, 60, 0.5)
        wait_ready(pod, 60)
        wait_for("Ready again in the API", lambda: ready(live_pod(pod.name)), 30, 0.5)

        # stopped: the Pod object goes, the Deployment counts none; replaced: a new Pod, Ready
        kubelet.stop(pod, grace=2)
        wait_for("the stopped pod gone from the API", lambda: live_pod(pod.name) is None, 30, 0.5)
        status = wait_for("the Deployment without ready pods", lambda: (s := deployment()).get(
            "readyReplicas", 0) == 0 and s, 30, 0.5)
        assert status.get("replicas", 0) == 0 and status["unavailableReplicas"] == 1  # zeros are omitted
        assert status["conditions"][0]["type"] == "Available" and status["conditions"][0]["status"] == "False"
        new = wait_ready(controllers.replace(workload, pod), 120)
        wait_for("the replacement Ready in the API", lambda: ready(live_pod(new.name)), 30, 0.5)
        wait_for("the Deployment ready again", lambda: deployment().get("readyReplicas") == 1, 30, 0.5)
        assert api.list("apps/v1", "ReplicaSet", "mirror") == []  # nothing else acts on the Deployments
        assert not mirror.errors, mirror.errors
    finally:
        mirror.close(remove=True)
        for pod in controllers.workloads[("Deployment", "mirror", "demo")].pods:
            kubelet.stop(pod, grace=2)
    assert mirror._thread is not None and not mirror._thread.is_alive()
    assert api.list("v1", "Pod", "mirror") == []
    passes = mirror.passes
    time.sleep(1.5)
    assert mirror.passes == passes  # stopped: it writes nothing more
