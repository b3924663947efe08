"""`hubctl doctor` against a fake fleet on loopback, one injected fault at a time (tests/support/doctor_faults.py,
the table the local real fleet's test reuses), plus its pure checks on the objects a fault leaves behind.

What must hold: a healthy fleet exits 0 with no finding; each fault is named with its verdict and nothing healthy is
blamed (exit 1); doctor only reads (every request a GET, but the one server-side dry run); usage errors exit 2 in one
line; every runbook a finding names is a section of docs/runbooks/on-call.md.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hubctl.__main__ import main
from hubctl.doctor import checks
from hubctl.doctor.checks import Certificate, Probe, Snapshot
from tests.support import doctor_faults
from tests.support.doctor_fleet import DoctorFleet
from tests.support.tools import REPO, load_stack

PICKS = {"member-black-holed": {"member": "dev-fsn1-a"}, "agent-stopped": {"member": "dev-hel1-a"},
         "skewed-agent": {"member": "dev-hel1-a"}, "tenant-over-quota": {"tenant": "shop"}}


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[DoctorFleet]:
    config = load_stack("dev")
    f = DoctorFleet(tmp_path / "fleet", config, list(config.members), list(config.tenants))
    yield f
    f.close()


def doctor(fleet: DoctorFleet, tmp_path: Path, *extra: str, members: bool = True) -> tuple[int, str, str]:
    kc = fleet.kubeconfigs(tmp_path / "kc", members=members)
    out, err = io.StringIO(), io.StringIO()
    code = main(["doctor", "dev", "--kubeconfigs", str(kc), "--timeout", "3", *extra], repo=REPO, stdout=out,
                stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("key", doctor_faults.keys((doctor_faults.HEALTHY, *doctor_faults.FAULTS)))
def test_each_fault_is_named_and_nothing_healthy_is_blamed(fleet: DoctorFleet, tmp_path: Path, key: str) -> None:
    fault = doctor_faults.by_key(key).fill(PICKS.get(key, {}))
    fleet.inject(key, **PICKS.get(key, {}))
    code, out, err = doctor(fleet, tmp_path, "--json")
    report = json.loads(out)
    assert not doctor_faults.judge(fault, report), (doctor_faults.judge(fault, report), out)
    assert code == (0 if key == "healthy" else 1), err
    if key == "healthy":
        assert not report["unknown"], report["unknown"]  # everything was read, nothing skipped
        assert {r["check"] for r in report["ok"]} >= {"api", "servers", "etcd", "workload", "apiservice", "webhook",
                                                      "lease", "certificates", "dns", "cluster", "agent", "skew",
                                                      "bindings", "works", "quota", "estimator"}


def test_the_faults_are_named_by_their_evidence(fleet: DoctorFleet, tmp_path: Path) -> None:
    """The details say what on-call needs next: which etcd member, who held a lease, why a region was withdrawn,
    that a Pull member's API answers while its agent does not."""
    fleet.etcd_member_down(1)
    fleet.stop_agent("dev-hel1-a")
    _, out, _ = doctor(fleet, tmp_path, "--json")
    findings = {(f["check"], f["subject"]): f["detail"] for f in json.loads(out)["findings"]}
    assert "2/3 members ready, quorum holds: etcd-1: CrashLoopBackOff" in findings[("etcd", "etcd")]
    assert "the member's API answers, so the agent itself is down" in findings[("agent", "dev-hel1-a")]
    assert "karmada-agent Deployment 0/0 ready" in findings[("agent", "dev-hel1-a")]
    assert findings[("cluster", "dev-hel1-a")].startswith("Ready=Unknown (ClusterStatusUnknown")
    ok = {r["subject"]: r["detail"] for r in json.loads(out)["ok"] if r["check"] == "lease"}
    assert re.match(r"held by karmada-scheduler-\S+ since 20\d\d-", ok["karmada-scheduler"])


def test_a_black_holed_member_withdrawn_region_says_why(fleet: DoctorFleet, tmp_path: Path) -> None:
    fleet.black_hole("dev-fsn1-a")
    _, out, _ = doctor(fleet, tmp_path, "--json")
    dns = next(f for f in json.loads(out)["findings"] if f["check"] == "dns")
    assert dns["blame"] == "member dev-fsn1-a" and "region eu-fsn withdrawn from shop.dev.example.com" in dns["detail"]
    assert "(timed out)" in dns["detail"]
    cluster = next(f for f in json.loads(out)["findings"] if f["check"] == "cluster")
    assert "its API does not answer from here" in cluster["detail"]


def test_doctor_only_reads(fleet: DoctorFleet, tmp_path: Path) -> None:
    fleet.inject("webhook-stopped")
    doctor(fleet, tmp_path, "--json")
    calls = [c for api in (fleet.host, fleet.karmada, *fleet.member_api.values()) for c in api.requests]
    writes = [c for c in calls if c.method != "GET"]
    assert calls and len(writes) == 1
    assert writes[0].method == "POST" and writes[0].path.endswith("/propagationpolicies?dryRun=All")
    assert not fleet.karmada.items("policy.karmada.io", "propagationpolicies")


def test_the_table_and_no_secret_in_it(fleet: DoctorFleet, tmp_path: Path) -> None:
    fleet.inject("tenant-over-quota", tenant="shop")
    code, out, _ = doctor(fleet, tmp_path)
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "hubctl doctor dev" and lines[1].split()[:5] == ["verdict", "check", "subject", "detail",
                                                                        "runbook"]
    quota = [line for line in lines if line.startswith("quota ")]
    assert quota and all("on-call.md#quota-a-tenant-is-at-its-quota" in line for line in quota)
    assert lines[-1].startswith("2 finding(s): quota 2")
    assert "PRIVATE KEY" not in out and "doctor-admin-token" not in out


def test_member_kubeconfigs_are_optional(fleet: DoctorFleet, tmp_path: Path) -> None:
    fleet.stop_agent("dev-hel1-a")
    code, out, _ = doctor(fleet, tmp_path, "--json", members=False)
    report = json.loads(out)
    assert code == 1 and not doctor_faults.judge(doctor_faults.by_key("agent-stopped").fill(
        {"member": "dev-hel1-a"}), report)
    agent = next(f for f in report["findings"] if f["check"] == "agent")
    assert "answers" not in agent["detail"]  # without the member's kubeconfig doctor claims nothing about its API


@pytest.mark.parametrize(("argv", "message"), [
    (["doctor", "dev", "--kubeconfigs", "/nonexistent"], "/nonexistent/karmada.kubeconfig: no such kubeconfig"),
    (["doctor", "prod-fsn1"], "a region stack has no hub of its own; run hubctl doctor against the hub stack"),
    (["doctor", "dev", "--timeout", "0"], "--timeout must be > 0"),
    (["doctor", "nope"], "stacks/Pulumi.nope.yaml: no such stack file"),
])
def test_usage_errors_are_one_line_and_exit_2(argv: list[str], message: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, repo=REPO, stdout=out, stderr=err) == 2
    assert len(err.getvalue().strip().splitlines()) == 1 and message in err.getvalue(), err.getvalue()
    assert not out.getvalue()


def test_an_unreachable_hub_is_a_hub_finding(fleet: DoctorFleet, tmp_path: Path) -> None:
    kc = fleet.kubeconfigs(tmp_path / "kc")
    fleet.karmada.down = True
    out = io.StringIO()
    code = main(["doctor", "dev", "--kubeconfigs", str(kc), "--timeout", "2", "--json"], repo=REPO, stdout=out,
                stderr=io.StringIO())
    report = json.loads(out.getvalue())
    assert code == 1
    assert [(f["blame"], f["check"], f["subject"]) for f in report["findings"]] == [
        ("hub", "api", "karmada-apiserver")]
    assert "unreachable" in report["findings"][0]["detail"]


# ----------------------------------------------------------------------------------------------- pure checks

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def expect() -> checks.Expect:
    config = load_stack("dev")
    return checks.expect_from(config, list(config.members), list(config.tenants))


def _verdicts(rows: list[checks.Row]) -> list[tuple[str, str, str]]:
    return [(r.blame, r.check, r.subject) for r in rows if r.status == "finding"]


def test_expect_follows_the_stack(expect: checks.Expect) -> None:
    assert expect.deployments["karmada-apiserver"] == 3 and expect.deployments["karmada-webhook"] == 2
    assert expect.deployments["karmada-scheduler-estimator-dev-hel1-a"] == 2
    assert {"karmada-search", "karmada-dashboard-api", "karmada-dashboard-web"} <= set(expect.deployments)
    assert expect.leases == ("karmada-controller-manager", "karmada-descheduler", "karmada-scheduler",
                             "kube-controller-manager")
    assert expect.apiservices == ("v1alpha1.cluster.karmada.io", "v1alpha1.search.karmada.io")
    assert expect.quota_tenants == {"shop": "shop"} and expect.region_members("eu-fsn") == ["dev-fsn1-a"]


def test_etcd_quorum(expect: checks.Expect) -> None:
    def pod(i: int, ready: bool) -> dict[str, Any]:
        return {"metadata": {"name": f"etcd-{i}", "labels": {"app.kubernetes.io/name": "etcd"}},
                "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}

    assert _verdicts(checks.check_etcd([pod(0, True), pod(1, True), pod(2, True)], expect)) == []
    lost = checks.check_etcd([pod(0, True), pod(1, False), pod(2, False)], expect)
    assert _verdicts(lost) == [("hub", "etcd", "etcd")] and lost[0].detail.startswith("QUORUM LOST: 1/3")
    missing = checks.check_etcd([pod(0, True), pod(1, True)], expect)
    assert "1 member pod(s) missing" in missing[0].detail and "quorum holds" in missing[0].detail


def test_api_readyz_names_the_failing_checks() -> None:
    rows = checks.check_api("karmada-apiserver", Probe(False, "[+]ping ok\n[-]etcd failed: reason withheld\n"
                                                              "[-]poststarthook/x failed: not finished\n"))
    assert rows[0].detail == "/readyz: failing: etcd, poststarthook/x" and rows[0].blame == "hub"
    assert checks.check_api("hub host API (k3s)", Probe(None))[0].status == "unknown"


def test_leases(expect: checks.Expect) -> None:
    def lease(name: str, renewed: dt.datetime, holder: str = "pod-a") -> dict[str, Any]:
        return {"metadata": {"name": name}, "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15,
                                                     "acquireTime": "2026-12-01T09:00:00.000000Z",
                                                     "renewTime": renewed.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}}

    fresh = [lease(n, NOW - dt.timedelta(seconds=3)) for n in expect.leases]
    assert _verdicts(checks.check_leases(fresh, expect, NOW)) == []
    stale = [*fresh[:-1], lease(expect.leases[-1], NOW - dt.timedelta(seconds=40))]
    rows = checks.check_leases(stale, expect, NOW)
    assert _verdicts(rows) == [("hub", "lease", "kube-controller-manager")]
    assert "no leader: last held by pod-a, renewed 40s ago" in rows[-1].detail
    assert _verdicts(checks.check_leases(fresh[1:], expect, NOW))[0][2] == expect.leases[0]


def test_certificates_close_to_expiry() -> None:
    certs = [Certificate("karmada-system/a-pki a.crt", "CN=a", NOW + dt.timedelta(days=200)),
             Certificate("karmada-system/b-pki b.crt", "CN=b", NOW + dt.timedelta(days=10)),
             Certificate("karmada-system/c-pki c.crt", "CN=c", NOW - dt.timedelta(days=1))]
    rows = checks.check_certificates(certs, NOW, 30)
    assert [(r.subject, r.detail) for r in rows] == [("karmada-system/c-pki c.crt", "CN=c EXPIRED 2026-11-30"),
                                                     ("karmada-system/b-pki b.crt", "CN=b expires 2026-12-11")]
    assert all(r.runbook.endswith("#hub-certificates-close-to-expiry") for r in rows)
    assert _verdicts(checks.check_certificates(certs[:1], NOW, 30)) == []


def _cluster(name: str, ready: str = "True", taints: list[dict[str, Any]] | None = None,
             k8s: str = "v1.33.4") -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"taints": taints or []},
            "status": {"kubernetesVersion": k8s, "conditions": [{"type": "Ready", "status": ready}]}}


def test_a_member_unreachable_from_here_but_ready_is_not_blamed(expect: checks.Expect) -> None:
    clusters = [_cluster("dev-fsn1-a"), _cluster("dev-hel1-a", k8s="v1.34.1")]
    rows = checks.check_clusters(clusters, {"dev-fsn1-a": Probe(False, "timed out")}, expect)
    assert _verdicts(rows) == []


def test_a_ready_member_with_a_taint_is_a_policy_finding(expect: checks.Expect) -> None:
    taint = [{"key": "fleet.karmada-hub.io/not-ready", "effect": "NoExecute"}]
    rows = checks.check_clusters([_cluster("dev-fsn1-a", taints=taint), _cluster("dev-hel1-a")], {}, expect)
    assert _verdicts(rows) == [("policy", "taint", "dev-fsn1-a")]


def test_an_estimator_is_the_hubs_unless_its_member_is_down(expect: checks.Expect) -> None:
    deployments = [{"metadata": {"name": n}, "spec": {"replicas": r}, "status": {"readyReplicas": r}}
                   for n, r in expect.deployments.items()]
    name = "karmada-scheduler-estimator-dev-fsn1-a"
    down = [d if d["metadata"]["name"] != name else {**d, "status": {"readyReplicas": 0}} for d in deployments]
    ready = [_cluster("dev-fsn1-a"), _cluster("dev-hel1-a")]
    assert _verdicts(checks.check_workloads(down, [], ready, expect)) == [("hub", "estimator", name)]
    not_ready = [_cluster("dev-fsn1-a", "False"), _cluster("dev-hel1-a")]
    assert _verdicts(checks.check_workloads(down, [], not_ready, expect)) == [
        ("member dev-fsn1-a", "estimator", "dev-fsn1-a")]


def test_work_failures_are_the_members_or_a_quota() -> None:
    def work(cluster: str, message: str) -> dict[str, Any]:
        return {"metadata": {"name": "w", "namespace": f"karmada-es-{cluster}"},
                "status": {"conditions": [{"type": "Applied", "status": "False", "message": message}]}}

    rows = checks.check_works([work("dev-fsn1-a", 'namespaces "shop" not found'),
                               work("dev-hel1-a", 'pods "x" is forbidden: exceeded quota: compute')],
                              checks.Expect("v1.18.2", 3, {}, (), (), {}, (), False, 40))
    assert _verdicts(rows) == [("member dev-fsn1-a", "works", "dev-fsn1-a"), ("quota", "quota", "dev-hel1-a")]


def test_a_skewed_kubernetes_version(expect: checks.Expect) -> None:
    rows = checks.check_versions([_cluster("dev-fsn1-a", k8s="v1.27.3"), _cluster("dev-hel1-a", k8s="v1.34.1")],
                                 {}, expect)
    assert _verdicts(rows) == [("skew", "skew", "dev-fsn1-a")]
    assert "outside what Karmada v1.18.2 supports" in rows[0].detail
    assert rows[1].status == "ok" and "karmada-agent" not in rows[1].detail  # the agent was not read: not claimed


def test_every_runbook_is_a_section_of_the_on_call_runbook() -> None:
    text = (REPO / checks.ON_CALL).read_text()
    anchors = {re.sub(r"[^a-z0-9 -]", "", h.lower()).strip().replace(" ", "-")
               for h in re.findall(r"^#+ (.+)$", text, re.M)}
    assert set(checks.RUNBOOKS.values()) <= anchors, sorted(set(checks.RUNBOOKS.values()) - anchors)
    for target, anchor in re.findall(r"\]\(([^)#]+\.md)(?:#([^)]+))?\)", text):
        path = REPO / "docs/runbooks" / target
        assert path.is_file(), target
        if anchor:
            headings = {re.sub(r"[^a-z0-9 -]", "", h.lower()).strip().replace(" ", "-")
                        for h in re.findall(r"^#+ (.+)$", path.read_text(), re.M)}
            assert anchor in headings, f"{target}#{anchor}"


def test_snapshot_defaults_read_nothing() -> None:
    report = checks.diagnose("dev", Snapshot(now=NOW), checks.expect_from(load_stack("dev"), [], []))
    assert report.healthy and {r.status for r in report.rows} == {"unknown"}
