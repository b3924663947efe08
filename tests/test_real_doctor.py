"""`hubctl doctor` on the local real fleet: each fault of tests/support/doctor_faults.py injected into the real
processes, one at a time, and named correctly; a healthy fleet reported healthy.

Doctor runs as an operator runs it (`hubctl doctor dev --kubeconfigs DIR --json`, from the fleet's client
namespace); its report is judged by the same `judge` as the fake fleet's test. Every fault is undone before the
next one, and the fleet must be healthy again in between.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.doctor_faults import HEALTHY, by_key, judge
from tests.support.kubelet.workloads import wait_ready
from tests.support.realfleet.fleet import SKIPPED, RealFleet
from tests.support.tools import REPO, require_upstream
from upstream.build import all_binary_names

PUSH, PULL, TENANT = "dev-fsn1-a", "dev-hel1-a", "shop"

NOT_RUN_HERE = {
    "karmada-dashboard-api": SKIPPED[("karmada-system", "karmada-dashboard-api")],
    "karmada-dashboard-web": SKIPPED[("karmada-system", "karmada-dashboard-web")],
}
"""Workloads doctor checks (Deployments in karmada-system) that the harness does not run (`SKIPPED`, the reason
being that their binary is not built here): their objects are applied and show 0 ready, so doctor rightly reports
each degraded. A finding about one of these alone is expected; every other finding counts."""


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealFleet]:
    require_upstream(*all_binary_names())
    with RealFleet() as real:
        real.up()
        real.start_traffic()
        real.kubeconfig_dir = real.write_kubeconfigs(tmp_path_factory.mktemp("kc") / "kc")["karmada"].parent  # type: ignore[attr-defined]
        yield real


def doctor(fleet: RealFleet) -> dict[str, Any]:
    argv = [sys.executable, "-m", "hubctl", "doctor", "dev", "--kubeconfigs", str(fleet.kubeconfig_dir),  # type: ignore[attr-defined]
            "--json"]
    res = subprocess.run(fleet.network.exec_argv(fleet.client.name, argv), cwd=REPO, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode in (0, 1), res.stderr[-2000:]
    report = dict(json.loads(res.stdout))
    assert (res.returncode == 0) is bool(report.get("healthy")), (res.returncode, report)
    assert bool(report.get("healthy")) is not bool(report.get("findings")), report
    return set_aside_not_run(report)


def not_run_here(finding: dict[str, Any]) -> bool:
    """A finding that names only a workload the harness does not run: its own Deployment, 0 ready."""
    return (finding["check"] == "workload" and finding["blame"] == "hub" and finding["subject"] in NOT_RUN_HERE
            and finding["detail"].startswith(f"{finding['subject']} degraded: 0/"))


def set_aside_not_run(report: dict[str, Any]) -> dict[str, Any]:
    """The report as `judge` reads it, with the findings about `NOT_RUN_HERE` workloads set aside (under
    `expected`, each with its reason)."""
    findings = list(report.get("findings") or [])
    expected = [{**f, "why": NOT_RUN_HERE[f["subject"]]} for f in findings if not_run_here(f)]
    rest = [f for f in findings if not not_run_here(f)]
    return {**report, "findings": rest, "healthy": not rest, "expected": expected}


def until_judged(fleet: RealFleet, fault_key: str, values: dict[str, str], timeout: float) -> list[str]:
    """Doctor's report judged for the fault until it is right or `timeout` passes (Karmada's detection takes its
    time); returns the last problems (empty: named correctly)."""
    fault = by_key(fault_key).fill(values)
    deadline = time.monotonic() + timeout
    while True:
        problems = judge(fault, doctor(fleet))
        if not problems or time.monotonic() > deadline:
            return problems
        time.sleep(5)


def settle_healthy(fleet: RealFleet, timeout: float = 300) -> None:
    problems = until_judged(fleet, HEALTHY.key, {}, timeout)
    assert not problems, f"the fleet is not healthy: {problems}{mirror_errors(fleet)}"


def mirror_errors(fleet: RealFleet) -> str:
    """What the host's status mirror could not write lately (a Pod refused, the API away), for a failure message."""
    errors = fleet.host_mirror.errors[-5:] if fleet.host_mirror else []
    return f"; status mirror: {errors}" if errors else ""


def stop_workload(fleet: RealFleet, cluster: str, namespace: str, name: str,
                  index: int | None = None) -> Callable[[], None]:
    """Stop a workload's pods (or one of them); returns what brings them back."""
    workload = fleet.workload(cluster, namespace, name)
    victims = [workload.pods[index]] if index is not None else list(workload.pods)
    for pod in victims:
        fleet.kubelet.stop(pod, grace=0)

    def restore() -> None:
        for pod in list(workload.pods):
            if pod in victims:
                wait_ready(fleet.clusters[cluster].controllers.replace(workload, pod), 300)

    return restore


def test_a_healthy_fleet_is_reported_healthy(fleet: RealFleet) -> None:
    settle_healthy(fleet)
    report = doctor(fleet)
    # what the harness does not run is reported as not running, not passed as healthy
    assert {f["subject"] for f in report["expected"]} == set(NOT_RUN_HERE), report["expected"]
    checked = {(r["check"], r["subject"]) for r in report["ok"]}
    assert {("etcd", "etcd"), ("workload", "karmada-apiserver"), ("workload", "karmada-webhook")} <= checked, checked


def test_only_a_not_run_workload_alone_is_set_aside() -> None:
    report = {"healthy": False, "findings": [
        {"check": "workload", "blame": "hub", "subject": "karmada-dashboard-web", "verdict": "hub",
         "detail": "karmada-dashboard-web degraded: 0/1 ready"},
        {"check": "workload", "blame": "hub", "subject": "karmada-webhook", "verdict": "hub",
         "detail": "karmada-webhook degraded: 0/2 ready"}]}
    out = set_aside_not_run(report)
    assert [f["subject"] for f in out["expected"]] == ["karmada-dashboard-web"] and not out["healthy"]
    assert [f["subject"] for f in out["findings"]] == ["karmada-webhook"]
    assert judge(HEALTHY, out)


@pytest.mark.parametrize("fault", ["webhook-stopped", "etcd-member-down", "member-black-holed", "agent-stopped",
                                   "tenant-over-quota", "skewed-agent"])
def test_doctor_names_the_fault(fleet: RealFleet, fault: str) -> None:
    settle_healthy(fleet)
    values = {"member": PULL if fault in ("agent-stopped", "skewed-agent") else PUSH, "tenant": TENANT}
    if fault == "webhook-stopped":
        undo = stop_workload(fleet, "host", "karmada-system", "karmada-webhook")
    elif fault == "etcd-member-down":
        undo = stop_workload(fleet, "host", "karmada-system", "etcd", index=2)
    elif fault == "member-black-holed":
        fleet.blackhole_member(PUSH)
        undo = lambda: fleet.heal_member(PUSH)  # noqa: E731
    elif fault == "agent-stopped":
        undo = stop_workload(fleet, f"member-{PULL}", "karmada-system", "karmada-agent")
    elif fault == "tenant-over-quota":
        # shop's quota: 40 CPUs overall, 20 per member; 5 replicas of 4 CPUs on each of the two is exactly all of it
        fleet.karmada.apply({"apiVersion": "apps/v1", "kind": "Deployment",
                             "metadata": {"name": "fills-the-quota", "namespace": TENANT},
                             "spec": {"replicas": 5, "selector": {"matchLabels": {"app": "fills"}}, "template": {
                                 "metadata": {"labels": {"app": "fills"}}, "spec": {"containers": [{
                                     "name": "c", "image": "docker.io/library/nginx:1.27",
                                     "resources": {"requests": {"cpu": "4", "memory": "64Mi"}}}]}}}})
        undo = lambda: fleet.karmada.delete("apps/v1", "Deployment", "fills-the-quota", TENANT)  # noqa: E731
    else:  # skewed-agent: the agent's Deployment in the member rolled to an image two minors behind the hub
        api = fleet.member_api(PULL)
        live = api.get("apps/v1", "Deployment", "karmada-agent", "karmada-system")
        assert live is not None
        image = live["spec"]["template"]["spec"]["containers"][0]["image"]
        api.patch("apps/v1", "Deployment", "karmada-agent", {"spec": {"template": {"spec": {"containers": [
            {"name": "karmada-agent", "image": image.rsplit(":", 1)[0] + ":v1.16.0"}]}}}}, "karmada-system")
        undo = lambda: api.patch("apps/v1", "Deployment", "karmada-agent", {"spec": {"template": {"spec": {  # noqa: E731
            "containers": [{"name": "karmada-agent", "image": image}]}}}}, "karmada-system")
    try:
        problems = until_judged(fleet, fault, values, timeout=240)
    finally:
        undo()
    assert not problems, f"{fault}: {problems}{mirror_errors(fleet)}"

