"""The hub's PrometheusRule with the real promtool: `check rules` on every rendered group, and `test rules` with,
for every alert, one case that fires it (labels and templated annotations exactly) and one that does not.

The rules are the ones the dev plan renders (PrometheusRule `spec.groups`, certificate records included).
Coverage is enforced: an alert without both cases fails here. Mutations (a broken expression, a flipped
threshold) prove that the checks can fail.
"""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.operations import alerts
from components.operations import monitoring_docs as docs
from hubctl.plan import Plan
from tests.support.rendered import find
from tests.support.tools import REPO, load_stack, require_tool

RUNBOOK = REPO / "docs" / "runbooks" / alerts.RUNBOOK_FILE
BASE = "https://code.example.com/platform/karmada-hub/blob/main/docs/runbooks"
NS = 'namespace="karmada-system"'
BACKUP = 'namespace="karmada-system",cronjob="etcd-backup"'
DEFRAG = 'namespace="karmada-system",cronjob="etcd-defrag"'
TF = 'job="traffic-failover"'
NS0 = 'nameserver="10.0.1.11:53",role="primary"'


def s(series: str, values: str) -> dict[str, str]:
    return {"series": series, "values": values}


Case = tuple[str, str, list[dict[str, str]], str, list[dict[str, Any]]]
"""(alert, interval, input series, eval time, expected alerts: each {labels, summary})."""


def fires(labels: dict[str, str], summary: str) -> dict[str, Any]:
    return {"labels": labels, "summary": summary}


CASES: list[Case] = [
    ("KarmadaHubEtcdNoLeader", "1m", [s('etcd_server_has_leader{job="etcd",instance="etcd-0"}', "0x10")], "5m",
     [fires({"job": "etcd", "instance": "etcd-0"}, "etcd member etcd-0 has no leader")]),
    ("KarmadaHubEtcdNoLeader", "1m", [s('etcd_server_has_leader{job="etcd",instance="etcd-0"}', "1x10")], "5m", []),
    ("KarmadaHubEtcdMemberDown", "1m", [s('up{job="etcd",instance="a"}', "1x20"), s('up{job="etcd",instance="b"}',
                                                                                    "1x20"),
                                        s('up{job="etcd",instance="c"}', "0x20")], "10m",
     [fires({}, "2 of 3 etcd members answer")]),
    ("KarmadaHubEtcdMemberDown", "1m", [s('up{job="other",instance="a"}', "1x20")], "10m",
     [fires({}, "0 of 3 etcd members answer")]),  # not scraped at all counts as down
    ("KarmadaHubEtcdMemberDown", "1m", [s(f'up{{job="etcd",instance="{i}"}}', "1x20") for i in "abc"], "10m", []),
    ("KarmadaHubEtcdDatabaseNearQuota", "1m", [
        s('etcd_mvcc_db_total_size_in_bytes{job="etcd",instance="etcd-1"}', "1800000000x20"),
        s('etcd_server_quota_backend_bytes{job="etcd",instance="etcd-1"}', "2000000000x20")], "15m",
     [fires({"instance": "etcd-1"}, "etcd on etcd-1 uses 90% of its space quota")]),
    ("KarmadaHubEtcdDatabaseNearQuota", "1m", [
        s('etcd_mvcc_db_total_size_in_bytes{job="etcd",instance="etcd-1"}', "1000000000x20"),
        s('etcd_server_quota_backend_bytes{job="etcd",instance="etcd-1"}', "2000000000x20")], "15m", []),
    ("KarmadaHubEtcdDatabaseFragmented", "1m", [
        s('etcd_mvcc_db_total_size_in_use_in_bytes{job="etcd",instance="etcd-2"}', "50000000x1600"),
        s('etcd_mvcc_db_total_size_in_bytes{job="etcd",instance="etcd-2"}', "200000000x1600")], "25h",
     [fires({"job": "etcd", "instance": "etcd-2"}, "etcd on etcd-2 is more than half free space")]),
    ("KarmadaHubEtcdDatabaseFragmented", "1m", [
        s('etcd_mvcc_db_total_size_in_use_in_bytes{job="etcd",instance="etcd-2"}', "150000000x1600"),
        s('etcd_mvcc_db_total_size_in_bytes{job="etcd",instance="etcd-2"}', "200000000x1600")], "25h", []),
    ("KarmadaHubApiserverDown", "1m", [s('up{job="karmada-apiserver",instance="a"}', "0x10"),
                                       s('up{job="karmada-apiserver",instance="b"}', "0x10")], "5m",
     [fires({}, "No karmada-apiserver replica answers")]),
    ("KarmadaHubApiserverDown", "1m", [s('up{job="karmada-apiserver",instance="a"}', "0x10"),
                                       s('up{job="karmada-apiserver",instance="b"}', "1x10")], "5m", []),
    ("KarmadaHubApiserverErrors", "1m", [
        s('apiserver_request_total{job="karmada-apiserver",code="500"}', "0+10x30"),
        s('apiserver_request_total{job="karmada-apiserver",code="200"}', "0+90x30")], "20m",
     [fires({}, "10% of karmada-apiserver requests fail with 5xx")]),
    ("KarmadaHubApiserverErrors", "1m", [
        s('apiserver_request_total{job="karmada-apiserver",code="500"}', "0+1x30"),
        s('apiserver_request_total{job="karmada-apiserver",code="200"}', "0+99x30")], "20m", []),
    ("KarmadaHubClientCertificateExpiresSoon", "1m", [
        s('apiserver_client_certificate_expiration_seconds_bucket{job="karmada-apiserver",instance="a",le="86400"}',
          "0+1x90"),
        s('apiserver_client_certificate_expiration_seconds_bucket{job="karmada-apiserver",instance="a",le="604800"}',
          "0+1x90"),
        s('apiserver_client_certificate_expiration_seconds_bucket{job="karmada-apiserver",instance="a",le="+Inf"}',
          "0+1x90"),
        s('apiserver_client_certificate_expiration_seconds_count{job="karmada-apiserver",instance="a"}', "0+1x90")],
     "80m", [fires({"job": "karmada-apiserver", "instance": "a"},
                   "A client authenticates to karmada-apiserver with a certificate that expires within 7 days")]),
    ("KarmadaHubClientCertificateExpiresSoon", "1m", [
        s('apiserver_client_certificate_expiration_seconds_bucket{job="karmada-apiserver",instance="a",le="86400"}',
          "0x90"),
        s('apiserver_client_certificate_expiration_seconds_bucket{job="karmada-apiserver",instance="a",le="604800"}',
          "0x90"),
        s('apiserver_client_certificate_expiration_seconds_bucket{job="karmada-apiserver",instance="a",le="2592000"}',
          "0+1x90"),
        s('apiserver_client_certificate_expiration_seconds_bucket{job="karmada-apiserver",instance="a",le="+Inf"}',
          "0+1x90"),
        s('apiserver_client_certificate_expiration_seconds_count{job="karmada-apiserver",instance="a"}', "0+1x90")],
     "80m", []),
    ("KarmadaHubTargetDown", "1m", [s('up{job="karmada-webhook",instance="10.42.0.7:8080"}', "0x20")], "15m",
     [fires({"job": "karmada-webhook", "instance": "10.42.0.7:8080"},
            "karmada-webhook on 10.42.0.7:8080 does not answer its metrics scrape")]),
    ("KarmadaHubTargetDown", "1m", [s('up{job="karmada-webhook",instance="10.42.0.7:8080"}', "1x20"),
                                    s('up{job="somebody-else",instance="x"}', "0x20")], "15m", []),
    ("KarmadaHubWorkloadDegraded", "1m", [
        s(f'kube_deployment_status_replicas_available{{{NS},deployment="karmada-webhook"}}', "1x30"),
        s(f'kube_deployment_spec_replicas{{{NS},deployment="karmada-webhook"}}', "2x30")], "20m",
     [fires({"namespace": "karmada-system", "deployment": "karmada-webhook"},
            "karmada-webhook in karmada-system runs below its replicas")]),
    ("KarmadaHubWorkloadDegraded", "1m", [
        s(f'kube_statefulset_status_replicas_ready{{{NS},statefulset="etcd"}}', "2x30"),
        s(f'kube_statefulset_replicas{{{NS},statefulset="etcd"}}', "3x30")], "20m",
     [fires({"namespace": "karmada-system", "statefulset": "etcd"}, "etcd in karmada-system runs below its replicas")]),
    ("KarmadaHubWorkloadDegraded", "1m", [
        s(f'kube_deployment_status_replicas_available{{{NS},deployment="karmada-webhook"}}', "2x30"),
        s(f'kube_deployment_spec_replicas{{{NS},deployment="karmada-webhook"}}', "2x30"),
        s('kube_deployment_status_replicas_available{namespace="other",deployment="x"}', "0x30"),
        s('kube_deployment_spec_replicas{namespace="other",deployment="x"}', "2x30")], "20m", []),
    ("KarmadaHubMemberNotReady", "1m", [
        s('karmada_hub_member_ready{member_cluster="dev-hel1-a",sync_mode="Pull",instance="a"}', "0x10"),
        s('karmada_hub_member_ready{member_cluster="dev-hel1-a",sync_mode="Pull",instance="b"}', "0x10")], "7m",
     [fires({"member_cluster": "dev-hel1-a", "sync_mode": "Pull"}, "Member cluster dev-hel1-a (Pull) is not Ready")]),
    ("KarmadaHubMemberNotReady", "1m", [
        s('karmada_hub_member_ready{member_cluster="dev-hel1-a",sync_mode="Pull",instance="a"}', "1x10"),
        s('karmada_hub_member_ready{member_cluster="dev-fsn1-a",sync_mode="Push",instance="a"}', "1x10")], "7m", []),
    ("KarmadaHubMemberNotReady", "1m", [  # one exporter replica still has the old list: the other one decides
        s('karmada_hub_member_ready{member_cluster="dev-hel1-a",sync_mode="Pull",instance="a"}', "1x10"),
        s('karmada_hub_member_ready{member_cluster="dev-hel1-a",sync_mode="Pull",instance="b"}', "0x10")], "7m", []),
    ("KarmadaHubExporterStale", "1m", [s("karmada_hub_exporter_last_success_timestamp_seconds", "0x30")], "20m",
     [fires({}, "Member readiness is not being measured")]),
    ("KarmadaHubExporterStale", "1m", [s("up", "1x30")], "20m", [fires({}, "Member readiness is not being measured")]),
    ("KarmadaHubExporterStale", "1m", [s("karmada_hub_exporter_last_success_timestamp_seconds", "0+60x30")], "20m",
     []),
    ("KarmadaHubCertificateRenewalOverdue", "1m", [
        s(f'{alerts.RENEWAL_METRIC}{{certificate="example-leaf",kind="leaf",signer="karmada"}}', "-700000x90")],
     "80m", [fires({"certificate": "example-leaf", "kind": "leaf", "signer": "karmada"},
                   "Certificate example-leaf entered its renewal window more than 7 days ago")]),
    ("KarmadaHubCertificateRenewalOverdue", "1m", [
        s(f'{alerts.RENEWAL_METRIC}{{certificate="example-leaf",kind="leaf",signer="karmada"}}', "0x90")],
     "80m", []),
    ("KarmadaHubCertificateExpiresSoon", "1m", [
        s(f'{alerts.EXPIRY_METRIC}{{certificate="example-ca",kind="ca",signer="karmada"}}', "864000x30")], "20m",
     [fires({"certificate": "example-ca", "kind": "ca", "signer": "karmada"},
            "Certificate example-ca expires in 9d 23h 40m 0s")]),
    ("KarmadaHubCertificateExpiresSoon", "1m", [
        s(f'{alerts.EXPIRY_METRIC}{{certificate="example-ca",kind="ca",signer="karmada"}}', "2000000x30")], "20m",
     []),
    ("KarmadaHubEtcdBackupFailed", "1m", [
        s(f"kube_cronjob_status_last_schedule_time{{{BACKUP}}}", "3600x200"),
        s(f"kube_cronjob_status_last_successful_time{{{BACKUP}}}", "0x200")], "2h30m",
     [fires({"namespace": "karmada-system", "cronjob": "etcd-backup"},
            "The last scheduled etcd backup did not succeed")]),
    ("KarmadaHubEtcdBackupFailed", "1m", [  # a run still inside its deadline is not a failure yet
        s(f"kube_cronjob_status_last_schedule_time{{{BACKUP}}}", "3600x200"),
        s(f"kube_cronjob_status_last_successful_time{{{BACKUP}}}", "0x200")], "70m", []),
    ("KarmadaHubEtcdBackupFailed", "1m", [
        s(f"kube_cronjob_status_last_schedule_time{{{BACKUP}}}", "3600x200"),
        s(f"kube_cronjob_status_last_successful_time{{{BACKUP}}}", "3700x200")], "2h30m", []),
    ("KarmadaHubEtcdBackupMissing", "1m", [s(f"kube_cronjob_status_last_successful_time{{{BACKUP}}}", "0x500")],
     "7h20m", [fires({"namespace": "karmada-system", "cronjob": "etcd-backup"},
                     "No etcd backup succeeded for 7h 20m 0s")]),
    ("KarmadaHubEtcdBackupMissing", "1m", [s(f"kube_cronjob_status_last_successful_time{{{BACKUP}}}", "0+60x500")],
     "7h20m", []),
    ("KarmadaHubEtcdBackupNeverSucceeded", "1m", [s(f"kube_cronjob_status_last_schedule_time{{{BACKUP}}}",
                                                     "0x500")], "7h10m",
     [fires({"namespace": "karmada-system", "cronjob": "etcd-backup"}, "No successful etcd backup is known")]),
    ("KarmadaHubEtcdBackupNeverSucceeded", "1m", [s(f"kube_cronjob_status_last_successful_time{{{BACKUP}}}",
                                                     "0x500")], "7h10m", []),
    ("KarmadaHubEtcdMaintenanceFailed", "1m", [
        s(f"kube_cronjob_status_last_schedule_time{{{DEFRAG}}}", "3600x200"),
        s(f"kube_cronjob_status_last_successful_time{{{DEFRAG}}}", "0x200")], "2h30m",
     [fires({"namespace": "karmada-system", "cronjob": "etcd-defrag"},
            "The last etcd defragmentation run did not succeed")]),
    ("KarmadaHubEtcdMaintenanceFailed", "1m", [
        s(f"kube_cronjob_status_last_schedule_time{{{DEFRAG}}}", "3600x200"),
        s(f"kube_cronjob_status_last_successful_time{{{DEFRAG}}}", "3900x200")], "2h30m", []),
    # the traffic layer (agents/traffic_failover.py `metrics`; dev runs dns.mode self-hosted)
    ("KarmadaHubTrafficFailoverDown", "1m", [s(f'up{{{TF},instance="a"}}', "1x20"),
                                             s(f'up{{{TF},instance="b"}}', "0x20"),
                                             s(f'up{{{TF},instance="c"}}', "0x20")], "10m",
     [fires({}, "Fewer than a majority of the DNS failover controller's replicas answer")]),
    ("KarmadaHubTrafficFailoverDown", "1m", [s(f'up{{{TF},instance="a"}}', "1x20"),
                                             s(f'up{{{TF},instance="b"}}', "1x20"),
                                             s(f'up{{{TF},instance="c"}}', "0x20")], "10m", []),
    ("KarmadaHubTrafficFailoverNoLeader", "1m", [s(f'traffic_failover_leader{{{TF},instance="a"}}', "0x10"),
                                                 s(f'traffic_failover_leader{{{TF},instance="b"}}', "0x10")], "5m",
     [fires({}, "No DNS failover controller replica leads")]),
    ("KarmadaHubTrafficFailoverNoLeader", "1m", [s("up", "1x10")], "5m",
     [fires({}, "No DNS failover controller replica leads")]),  # not scraped at all: nobody is known to lead
    ("KarmadaHubTrafficFailoverNoLeader", "1m", [s(f'traffic_failover_leader{{{TF},instance="a"}}', "0x10"),
                                                 s(f'traffic_failover_leader{{{TF},instance="b"}}', "1x10")], "5m", []),
    ("KarmadaHubTrafficFailOpen", "1m", [s(f'traffic_failover_fail_open_names{{{TF},instance="a"}}', "2x10")], "7m",
     [fires({}, "2 names stay published although every region fails their probes")]),
    ("KarmadaHubTrafficFailOpen", "1m", [s(f'traffic_failover_fail_open_names{{{TF},instance="a"}}', "0x10")], "7m",
     []),
    ("KarmadaHubNameserverDown", "1m", [
        s(f'traffic_failover_nameserver_up{{{TF},instance="a",{NS0}}}', "0x10"),
        s(f'traffic_failover_nameserver_up{{{TF},instance="b",{NS0}}}', "0x10")], "5m",
     [fires({"nameserver": "10.0.1.11:53", "role": "primary"},
            "Nameserver 10.0.1.11:53 (primary) answers no SOA for the zone")]),
    ("KarmadaHubNameserverDown", "1m", [  # one replica still reaches it: a path of that replica, not the server
        s(f'traffic_failover_nameserver_up{{{TF},instance="a",{NS0}}}', "0x10"),
        s(f'traffic_failover_nameserver_up{{{TF},instance="b",{NS0}}}', "1x10")], "5m", []),
    ("KarmadaHubNameserversAllDown", "1m", [
        s(f'traffic_failover_nameserver_up{{{TF},instance="a",{NS0}}}', "0x10"),
        s(f'traffic_failover_nameserver_up{{{TF},instance="a",nameserver="203.0.113.9:53",role="secondary"}}',
          "1x10")], "5m", [fires({}, "No hub nameserver answers for the zone")]),
    ("KarmadaHubNameserversAllDown", "1m", [
        s(f'traffic_failover_nameserver_up{{{TF},instance="a",{NS0}}}', "0x10"),
        s(f'traffic_failover_nameserver_up{{{TF},instance="a",nameserver="10.0.1.12:53",role="primary"}}', "1x10")],
     "5m", []),
    ("KarmadaHubNameserverSerialSkew", "1m", [
        s(f'traffic_failover_nameserver_behind_seconds{{{TF},instance="a",{NS0}}}', "45+60x10")], "5m",
     [fires({"nameserver": "10.0.1.11:53", "role": "primary"},
            "Nameserver 10.0.1.11:53 has not held the zone's current serial for 5m 45s")]),
    ("KarmadaHubNameserverSerialSkew", "1m", [
        s(f'traffic_failover_nameserver_behind_seconds{{{TF},instance="a",{NS0}}}', "0x10")], "5m", []),
]
HETZNER_CASES: list[Case] = [
    ("KarmadaHubExternalDnsStale", "1m", [s('external_dns_controller_last_sync_timestamp_seconds{job="external-dns"}',
                                            "0x30")], "20m",
     [fires({}, "external-dns has not synced with Hetzner DNS for three intervals")]),
    ("KarmadaHubExternalDnsStale", "1m", [s("up", "1x30")], "20m",
     [fires({}, "external-dns has not synced with Hetzner DNS for three intervals")]),
    ("KarmadaHubExternalDnsStale", "1m", [s('external_dns_controller_last_sync_timestamp_seconds{job="external-dns"}',
                                            "0+60x30")], "20m", []),
]
"""dns.mode hetzner only (no example stack runs it any more): tested on the rules rendered for it."""


def rendered_groups(plan: Plan) -> list[dict[str, Any]]:
    return find(plan, "host", "PrometheusRule", docs.RULE_NAME)["spec"]["groups"]


def _alerts(groups: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["alert"]: r for g in groups for r in g["rules"] if "alert" in r}


def unit_tests(groups: list[dict[str, Any]], cases: list[Case], rule_file: str) -> dict[str, Any]:
    by_name = _alerts(groups)
    tests = []
    for alert, interval, series, at, expected in cases:
        rule = by_name[alert]
        exp = [{"exp_labels": {**e["labels"], **rule["labels"]},
                "exp_annotations": {**rule["annotations"], "summary": e["summary"]}} for e in expected]
        tests.append({"interval": interval, "input_series": series,
                      "alert_rule_test": [{"eval_time": at, "alertname": alert, "exp_alerts": exp}]})
    return {"rule_files": [rule_file], "evaluation_interval": "1m", "tests": tests}


def _promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([require_tool("promtool", "Debian package prometheus"), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def _write(path: Path, doc: Any) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def groups(rendered_dev: Plan) -> list[dict[str, Any]]:
    return rendered_groups(rendered_dev)


def test_every_alert_has_a_firing_and_a_quiet_case(groups: list[dict[str, Any]]) -> None:
    names = set(_alerts(groups))
    thresholds = alerts.Thresholds(3, 2, "17 */6 * * *", "37 3 * * 0", dns_mode="self-hosted")
    assert names == set(alerts.alert_names(thresholds)) and len(names) == 23
    firing = {c[0] for c in CASES if c[4]}
    quiet = {c[0] for c in CASES if not c[4]}
    assert names - firing == set() and names - quiet == set(), (names - firing, names - quiet)


@pytest.mark.parametrize("stack", ["dev", "prod-hub"])
def test_promtool_check_rules_passes_on_every_rendered_group(rendered_dev: Plan, rendered_prod_hub: Plan,
                                                             tmp_path: Path, stack: str) -> None:
    groups = rendered_groups(rendered_dev if stack == "dev" else rendered_prod_hub)
    rules = _write(tmp_path / "rules.yaml", {"groups": groups})
    result = _promtool("check", "rules", "--lint=all", "--lint-fatal", str(rules), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    count = sum(len(g["rules"]) for g in groups)
    assert f"SUCCESS: {count} rules found" in result.stdout, result.stdout
    for group in groups:  # and each group on its own, as the operator loads them
        alone = _write(tmp_path / "one.yaml", {"groups": [group]})
        assert _promtool("check", "rules", str(alone), cwd=tmp_path).returncode == 0, group["name"]


def test_promtool_check_rules_can_fail(groups: list[dict[str, Any]], tmp_path: Path) -> None:
    broken = copy.deepcopy(groups)
    broken[1]["rules"][0]["expr"] = "etcd_server_has_leader{job=\"etcd\"} == == 0"
    result = _promtool("check", "rules", str(_write(tmp_path / "rules.yaml", {"groups": broken})), cwd=tmp_path)
    assert result.returncode != 0 and "parse error" in (result.stdout + result.stderr)


def test_promtool_unit_tests_fire_and_stay_quiet(groups: list[dict[str, Any]], tmp_path: Path) -> None:
    _write(tmp_path / "rules.yaml", {"groups": groups})
    tests = _write(tmp_path / "tests.yaml", unit_tests(groups, CASES, "rules.yaml"))
    result = _promtool("test", "rules", str(tests), cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "SUCCESS" in result.stdout


def test_the_hetzner_mode_alerts_fire_and_stay_quiet(tmp_path: Path) -> None:
    thresholds = alerts.Thresholds(3, 2, None, "37 3 * * 0", dns_mode="hetzner")
    groups = alerts.rule_groups(thresholds, BASE, [])
    names = {a for _, group in alerts.alert_groups(thresholds) for a in (x.name for x in group)}
    assert "KarmadaHubExternalDnsStale" in names and "KarmadaHubNameserverDown" not in names
    assert {c[0] for c in HETZNER_CASES if c[4]} == {c[0] for c in HETZNER_CASES if not c[4]} == {
        "KarmadaHubExternalDnsStale"}
    _write(tmp_path / "rules.yaml", {"groups": groups})
    tests = _write(tmp_path / "tests.yaml", unit_tests(groups, HETZNER_CASES, "rules.yaml"))
    result = _promtool("test", "rules", str(tests), cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    anchors = {_slug(line.lstrip("#")) for line in RUNBOOK.read_text().splitlines() if line.startswith("#")}
    assert "karmadahubexternaldnsstale" in anchors


@pytest.mark.parametrize(("alert", "old", "new"), [
    ("KarmadaHubEtcdDatabaseNearQuota", "> 0.8", "> 0.95"),
    ("KarmadaHubEtcdBackupFailed", "> 3600", "> 36000"),
    ("KarmadaHubMemberNotReady", "max by", "min by"),
    ("KarmadaHubNameserverSerialSkew", "> 30", "> 3000"),
])
def test_the_unit_tests_catch_a_changed_rule(groups: list[dict[str, Any]], tmp_path: Path, alert: str, old: str,
                                             new: str) -> None:
    mutated = copy.deepcopy(groups)
    rule = _alerts(mutated)[alert]
    assert old in rule["expr"]
    rule["expr"] = rule["expr"].replace(old, new)
    _write(tmp_path / "rules.yaml", {"groups": mutated})
    cases = [c for c in CASES if c[0] == alert]
    tests = _write(tmp_path / "tests.yaml", unit_tests(mutated, cases, "rules.yaml"))
    assert _promtool("test", "rules", str(tests), cwd=tmp_path).returncode != 0


def _slug(heading: str) -> str:
    """GitHub's heading anchor: lower case, spaces to dashes, punctuation other than - and _ dropped."""
    text = heading.strip().lower()
    return "".join(c for c in text.replace(" ", "-") if c.isalnum() or c in "-_")


def test_every_alert_links_an_existing_runbook_section(groups: list[dict[str, Any]]) -> None:
    anchors = {_slug(line.lstrip("#")) for line in RUNBOOK.read_text().splitlines() if line.startswith("#")}
    for name, rule in _alerts(groups).items():
        url = rule["annotations"]["runbook_url"]
        assert url == f"{BASE}/monitoring.md#{name.lower()}"
        assert url.split("#", 1)[1] in anchors, f"{RUNBOOK} has no section {name}"
        assert rule["labels"]["severity"] in ("critical", "warning", "info")


def test_certificate_records_cover_every_certificate_of_the_hub(groups: list[dict[str, Any]], rendered_dev: Plan
                                                                ) -> None:
    from components.kube.cert_schedule import certificate_expiry
    from hubctl.mocks import plan_epoch
    from hubctl.report import certificate_resources

    records = next(g for g in groups if g["name"] == "karmada-hub.certificates.records")["rules"]
    expiry = {r["labels"]["certificate"]: int(r["expr"][len("vector("):-1]) for r in records
              if r["record"] == alerts.EXPIRY_METRIC}
    renewal = {r["labels"]["certificate"]: int(r["expr"][len("vector("):-1]) for r in records
               if r["record"] == alerts.RENEWAL_METRIC}
    rows = {r.name: r for r in certificate_expiry(certificate_resources(rendered_dev), plan_epoch())}
    # the hub issues every estimator's certificate (recorded); region identities' are signed from a CSR, not yet
    member_side = {n for n in rows if n.startswith("region-")}
    assert set(expiry) == set(renewal) == set(rows) - member_side and len(expiry) > 20
    for name, at in expiry.items():
        assert at == int(rows[name].not_after.timestamp()) and renewal[name] == int(rows[name].renew_from.timestamp())


def test_no_backup_no_backup_alerts() -> None:
    without = alerts.alert_names(alerts.Thresholds(3, 2, None, "37 3 * * 0"))
    assert not [n for n in without if "Backup" in n] and "KarmadaHubEtcdMaintenanceFailed" in without


@pytest.mark.parametrize(("schedule", "hours"), [("17 */6 * * *", 6), ("0 3 * * *", 24), ("37 3 * * 0", 168),
                                                 ("0 0,12 * * 1-5", 60), ("*/15 * * * *", 0.25)])
def test_cron_max_gap(schedule: str, hours: float) -> None:
    assert alerts.cron_max_gap(schedule).total_seconds() == hours * 3600
    load_stack("dev")  # the example schedules parse
