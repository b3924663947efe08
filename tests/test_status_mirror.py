"""The status mirror's arithmetic (tests/support/kubelet/mirror.py): the status each workload controller and the
kubelet would write, from the process kubelet's pods, without an API server (tests/test_process_kubelet.py runs the
mirror against a real one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.kubelet.api import Api
from tests.support.kubelet.mirror import StatusMirror, _Published, _scaled
from tests.support.kubelet.network import Netns
from tests.support.kubelet.pod import ClusterContext, Container, Pod, pod_template_hash
from tests.support.kubelet.workloads import Controllers, Node, Workload

API = Api("https://127.0.0.1:1", "")
CONTEXT = ClusterContext("host", API, "10.43.0.1")
NODES = [Node(f"server-{i}", Netns(f"ns{i}", f"10.0.1.1{i}", f"v{i}", "node"), f"10.0.1.1{i}") for i in range(3)]


def template(image: str = "app:v1") -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": image}]}}


def pod(name: str, ready: bool, labels: dict[str, str] | None = None, node: str = "server-0",
        phase: str = "Running") -> Pod:
    obj = {"metadata": {"name": name, "namespace": "ns", "labels": {"app": "x", **(labels or {})}},
           "spec": {"containers": [{"name": "c", "image": "app:v1"}]}}
    p = Pod(obj, CONTEXT, Netns(f"pod-{name}", "10.42.0.9", "veth", name), Path("/nonexistent"), node=node)
    p.containers = [Container(obj["spec"]["containers"][0], ready=ready, started=ready, restarts=2)]
    p.phase, p.admitted = phase, True
    return p


def mirror(*workloads: Workload) -> StatusMirror:
    controllers = Controllers(None, CONTEXT, Path("/nonexistent"))  # type: ignore[arg-type]
    for w in workloads:
        controllers.workloads[(w.kind, w.namespace, w.name)] = w
    return StatusMirror(None, controllers, API, nodes=NODES)  # type: ignore[arg-type]


def live(kind: str, name: str, replicas: int | None, generation: int = 3, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"template": template(), **spec}
    if replicas is not None:
        body["replicas"] = replicas
    meta = {"name": name, "namespace": "ns", "generation": generation, "uid": "u"}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": body}


def test_a_deployment_mid_roll_counts_updated_ready_and_available() -> None:
    new_hash = pod_template_hash(template("app:v2"))
    old_hash = pod_template_hash(template())
    obj = live("Deployment", "web", 3)
    obj["spec"]["template"] = template("app:v2")
    w = Workload("Deployment", obj, [pod("web-a", True, {"pod-template-hash": old_hash}),
                                     pod("web-b", False, {"pod-template-hash": new_hash}),
                                     pod("web-c", True, {"pod-template-hash": new_hash}),
                                     pod("web-d", True, {"pod-template-hash": new_hash}, phase="Terminated")])
    status = mirror(w).workload_status("Deployment", obj, w)
    assert (status["replicas"], status["readyReplicas"], status["availableReplicas"], status["updatedReplicas"],
            status["unavailableReplicas"], status["observedGeneration"]) == (3, 2, 2, 2, 1, 3)
    # 25 % of 3 rounds down to 0 unavailable allowed: 2 of 3 available is not minimum availability
    assert status["conditions"][0]["status"] == "False"


def test_a_workload_nothing_runs_shows_zero_ready() -> None:
    status = mirror().workload_status("Deployment", live("Deployment", "dashboard", 2), None)
    assert (status["replicas"], status["readyReplicas"], status["unavailableReplicas"]) == (0, 0, 2)
    assert status["conditions"][0]["reason"] == "MinimumReplicasUnavailable"


def test_a_statefulset_and_a_daemonset() -> None:
    sts = live("StatefulSet", "etcd", 3)
    w = Workload("StatefulSet", sts, [pod("etcd-0", True), pod("etcd-1", True), pod("etcd-2", False)])
    status = mirror(w).workload_status("StatefulSet", sts, w)
    assert (status["replicas"], status["readyReplicas"], status["currentReplicas"], status["updatedReplicas"]) == (
        3, 2, 3, 3)
    assert status["currentRevision"] == status["updateRevision"] == f"etcd-{pod_template_hash(template())}"
    ds = live("DaemonSet", "ns1", None)
    digest = pod_template_hash(template())
    d = Workload("DaemonSet", ds, [pod("ns1-a", True, {"controller-revision-hash": digest}, "server-0"),
                                   pod("ns1-b", False, {"controller-revision-hash": digest}, "server-1")])
    status = mirror(d).workload_status("DaemonSet", ds, d)
    assert (status["desiredNumberScheduled"], status["currentNumberScheduled"], status["numberReady"],
            status["numberUnavailable"], status["updatedNumberScheduled"]) == (3, 2, 1, 2, 2)


def test_a_pods_status_is_what_its_kubelet_posts() -> None:
    m = mirror()
    p = pod("web-a", False, node="server-2")
    status = m.pod_status(_Published(p, "uid-1", "2026-01-01T00:00:00Z"))
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Ready"]["status"] == "False" and conditions["Ready"]["reason"] == "ContainersNotReady"
    assert conditions["PodScheduled"]["status"] == "True"
    assert status["hostIP"] == "10.0.1.12" and status["podIP"] == "10.42.0.9" and status["phase"] == "Running"
    [c] = status["containerStatuses"]
    assert c["ready"] is False and c["restartCount"] == 2 and c["state"] == {"waiting": {"reason":
                                                                                        "ContainerCreating"}}
    p.containers[0].ready = True
    again = m.pod_status(_Published(p, "uid-1", "2026-01-01T00:00:00Z"))
    assert {c["type"]: c["status"] for c in again["conditions"]}["Ready"] == "True"


def test_rolling_update_rounding() -> None:
    assert _scaled("25%", 3, up=False) == 0 and _scaled("25%", 3, up=True) == 1 and _scaled(1, 3, up=False) == 1


def test_a_restarted_pod_tells_its_story_from_the_log_before_its_last_start(tmp_path: Path) -> None:
    """What the real-fleet tests print when a component restarted: the termination, the events, and the log lines
    before the last start marker (not the new run's)."""
    p = pod("search", True)
    p.root = tmp_path
    p.containers[0].last_termination = "liveness"
    p.note("c liveness probe failed 3 times: restarting")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "c.log").write_text("--- 04:00:00 start c (restart 0)\nfirst run\netcd check failed\n"
                                             "--- 04:01:00 start c (restart 1)\nsecond run\n")
    story = p.restart_story()
    assert story.splitlines()[0] == "host/ns/search:"
    assert "liveness probe failed 3 times" in story and "c: 2 restart(s), last termination liveness" in story
    assert "| etcd check failed" in story and "second run" not in story
    assert "| --- 04:00:00 start c (restart 0)" in story
    p.containers[0].restarts = 0
    assert "restart(s)" not in p.restart_story()
