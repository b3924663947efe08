"""The hub's alerting rules as plain data: what Prometheus should page on, each alert linking its runbook.

Every expression names metrics the hub really exposes (sources beside each group) and the `job` labels the
PodMonitors of `monitoring_docs` set. Rule groups are the `spec.groups` of one PrometheusRule; `promtool check
rules` parses them and every alert has a `promtool test rules` case that fires it and one that does not
(tests/test_alerts.py).

Certificate expiry: no component exports when the certificates it serves expire, so the plan records them —
`karmada_hub_certificate_expiry_timestamp_seconds` and `..._renewal_timestamp_seconds` per certificate, recording
rules of constant value computed from the pulumi_tls state (`validity_end_time`, `early_renewal_hours`) and
rewritten by every `pulumi up`. The alerts work on the recorded series (an absolute timestamp inside an alert
expression is what promtool cannot test without simulating years). The karmada-apiserver's own histogram of the
client certificates it sees covers what the plan does not issue itself (Pull agents in region stacks).

Backups: kube-state-metrics' CronJob series (`kube_cronjob_status_last_schedule_time`,
`kube_cronjob_status_last_successful_time`, kube-state-metrics v2.20.0 docs/metrics/workload/cronjob-metrics.md).
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from components.karmada import flags

NAMESPACE = flags.NAMESPACE
RUNBOOK_FILE = "monitoring.md"
EXPIRY_METRIC = "karmada_hub_certificate_expiry_timestamp_seconds"
RENEWAL_METRIC = "karmada_hub_certificate_renewal_timestamp_seconds"
DAY = 86400

JOBS = {
    "etcd": "etcd",
    "apiserver": "karmada-apiserver",
    "aggregated": "karmada-aggregated-apiserver",
    "kcm": "kube-controller-manager",
    "scheduler": "karmada-scheduler",
    "controller_manager": "karmada-controller-manager",
    "webhook": "karmada-webhook",
    "estimator": "karmada-scheduler-estimator",
    "exporter": "karmada-hub-exporter",
    "failover": "traffic-failover",
    "external_dns": "external-dns",
}
"""The `job` label of each scrape target (monitoring_docs sets it from the pod's name label)."""


@dataclass(frozen=True)
class Alert:
    name: str
    expr: str
    duration: str
    severity: str
    summary: str
    description: str
    labels: dict[str, str] = field(default_factory=dict)

    def rule(self, runbook_base: str) -> dict[str, Any]:
        return {
            "alert": self.name,
            "expr": self.expr,
            "for": self.duration,
            "labels": {"severity": self.severity, **self.labels},
            "annotations": {"summary": self.summary, "description": self.description,
                            "runbook_url": runbook_url(runbook_base, self.name)},
        }


def runbook_url(base: str, alert: str) -> str:
    """`<base>/monitoring.md#<alert in lower case>`: the alert's own section (a GitHub heading anchor)."""
    return f"{base.rstrip('/')}/{RUNBOOK_FILE}#{alert.lower()}"


# ------------------------------------------------------------------------------------------- cron


def _field(spec: str, low: int, high: int) -> set[int]:
    values: set[int] = set()
    for part in spec.split(","):
        base, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if base == "*":
            start, end = low, high
        elif "-" in base:
            start, end = (int(x) for x in base.split("-", 1))
        else:
            start = end = int(base)
            if step_text:
                end = high
        if not (low <= start <= end <= high) or step < 1:
            raise ValueError(f"cron field {spec!r} is out of {low}-{high}")
        values |= set(range(start, end + 1, step))
    return values


def cron_max_gap(schedule: str) -> dt.timedelta:
    """The longest time between two runs of a 5-field cron schedule (UTC), over a leap-year cycle's worth of
    days: how stale the last success may be before a run was missed."""
    minute, hour, dom, month, dow = schedule.split()
    minutes, hours = sorted(_field(minute, 0, 59)), sorted(_field(hour, 0, 23))
    days, months = _field(dom, 1, 31), _field(month, 1, 12)
    weekdays = {d % 7 for d in _field(dow, 0, 7)}
    restricted_dom, restricted_dow = dom != "*", dow != "*"
    start = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    runs: list[dt.datetime] = []
    for offset in range(366 * 4 + 31):
        day = start + dt.timedelta(days=offset)
        if day.month not in months:
            continue
        dom_ok, dow_ok = day.day in days, (day.isoweekday() % 7) in weekdays
        matches = (dom_ok or dow_ok) if (restricted_dom and restricted_dow) else (dom_ok and dow_ok)
        if matches:
            runs += [day.replace(hour=h, minute=m) for h in hours for m in minutes]
    if len(runs) < 2:
        raise ValueError(f"cron schedule {schedule!r} runs less than twice in four years")
    return max(b - a for a, b in itertools.pairwise(runs))


def _duration(delta: dt.timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    return f"{minutes // 60}h{minutes % 60}m" if minutes % 60 else f"{minutes // 60}h"


# ---------------------------------------------------------------------------------------- records


@dataclass(frozen=True)
class CertificateRecord:
    """One certificate for the recording rules; `not_after` is RFC 3339 (may be an Output in the program)."""

    name: str
    kind: str
    signer: str
    not_after: Any
    early_renewal_hours: int


def unix_seconds(rfc3339: str) -> int:
    return int(dt.datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp())


def certificate_records(certs: Sequence[CertificateRecord]) -> dict[str, Any]:
    """The recorded expiry and renewal times, one pair of constant series per certificate."""
    rules: list[dict[str, Any]] = []
    for c in sorted(certs, key=lambda c: c.name):
        labels = {"certificate": c.name, "kind": c.kind, "signer": c.signer}
        not_after = c.not_after

        def expr(offset: int, value: Any = not_after) -> Any:
            if isinstance(value, str):
                return f"vector({unix_seconds(value) - offset})"
            return value.apply(lambda v: f"vector({unix_seconds(v) - offset})")

        rules.append({"record": EXPIRY_METRIC, "expr": expr(0), "labels": labels})
        rules.append({"record": RENEWAL_METRIC, "expr": expr(c.early_renewal_hours * 3600), "labels": dict(labels)})
    return {"name": "karmada-hub.certificates.records", "interval": "5m", "rules": rules}


# ----------------------------------------------------------------------------------------- alerts


@dataclass(frozen=True)
class Thresholds:
    etcd_replicas: int
    apiserver_replicas: int
    backup_schedule: str | None
    defrag_schedule: str
    backup_deadline_seconds: int = 3600
    """A run has had time to finish (activeDeadlineSeconds 1800 plus margin) when its schedule is this old."""
    dns_mode: str | None = None
    """The stack's dns.mode (None: no dns section, no traffic alerts)."""
    vantage_points: int = 3
    external_dns_interval_seconds: int = 60
    serial_skew_seconds: int = 30
    """A nameserver behind the zone's current serial this long is an alert: an UPDATE lands in well under a second
    and the controller's reconcile re-syncs a lagging server within one zone check (5 s)."""


def alert_groups(t: Thresholds) -> list[tuple[str, list[Alert]]]:
    j = JOBS
    ns = NAMESPACE
    groups: list[tuple[str, list[Alert]]] = []
    # Metric sources: etcd v3.6.6 server/etcdserver/metrics.go (etcd_server_has_leader), server/storage/metrics.go
    # (etcd_server_quota_backend_bytes), server/storage/mvcc/metrics.go (etcd_mvcc_db_total_size_in_bytes,
    # etcd_mvcc_db_total_size_in_use_in_bytes); tests/integration/test_etcd_metrics.py reads them from a real etcd.
    groups.append(("karmada-hub.etcd", [
        Alert("KarmadaHubEtcdNoLeader", f'etcd_server_has_leader{{job="{j["etcd"]}"}} == 0', "1m", "critical",
              "etcd member {{ $labels.instance }} has no leader",
              "The member sees no raft leader: the cluster has lost quorum or this member is cut off. Writes through "
              "it fail and the karmada-apiserver cannot change anything if quorum is gone."),
        Alert("KarmadaHubEtcdMemberDown",
              f'(count(up{{job="{j["etcd"]}"}} == 1) or vector(0)) < {t.etcd_replicas}', "5m", "warning",
              "{{ $value }} of " + str(t.etcd_replicas) + " etcd members answer",
              "An etcd member is down, Pending or not scraped. One more loss and Karmada's etcd loses quorum."),
        Alert("KarmadaHubEtcdDatabaseNearQuota",
              f'max by (instance) (etcd_mvcc_db_total_size_in_bytes{{job="{j["etcd"]}"}} / '
              f'etcd_server_quota_backend_bytes{{job="{j["etcd"]}"}}) > 0.8', "10m", "warning",
              "etcd on {{ $labels.instance }} uses {{ $value | humanizePercentage }} of its space quota",
              "At the quota etcd raises NOSPACE and refuses every write. Defragment or raise "
              "karmada.etcd.quotaBackendSize."),
        Alert("KarmadaHubEtcdDatabaseFragmented",
              f'(etcd_mvcc_db_total_size_in_use_in_bytes{{job="{j["etcd"]}"}} / '
              f'etcd_mvcc_db_total_size_in_bytes{{job="{j["etcd"]}"}}) < 0.5 and '
              f'etcd_mvcc_db_total_size_in_bytes{{job="{j["etcd"]}"}} > 104857600', "24h", "info",
              "etcd on {{ $labels.instance }} is more than half free space",
              "The weekly defragmentation job should have given the space back; check its last runs."),
    ]))
    # kube-apiserver v1.35 (karmada v1.18.2 vendor/k8s.io/apiserver/pkg/endpoints/metrics/metrics.go
    # apiserver_request_total; pkg/authentication/request/x509/x509.go apiserver_client_certificate_expiration_seconds)
    groups.append(("karmada-hub.apiserver", [
        Alert("KarmadaHubApiserverDown", f'(count(up{{job="{j["apiserver"]}"}} == 1) or vector(0)) == 0', "2m",
              "critical", "No karmada-apiserver replica answers",
              "Nothing can read or change placement; members keep running what they have."),
        Alert("KarmadaHubApiserverErrors",
              f'sum(rate(apiserver_request_total{{job="{j["apiserver"]}",code=~"5.."}}[5m])) / '
              f'sum(rate(apiserver_request_total{{job="{j["apiserver"]}"}}[5m])) > 0.05', "10m", "warning",
              "{{ $value | humanizePercentage }} of karmada-apiserver requests fail with 5xx",
              "Usually etcd trouble (latency, no leader, NOSPACE) or an aggregated API that does not answer."),
        Alert("KarmadaHubClientCertificateExpiresSoon",
              f'apiserver_client_certificate_expiration_seconds_count{{job="{j["apiserver"]}"}} > 0 and on (job, '
              f'instance) histogram_quantile(0.01, sum by (job, instance, le) (rate(apiserver_client_certificate_'
              f'expiration_seconds_bucket{{job="{j["apiserver"]}"}}[5m]))) < {7 * DAY}', "1h", "warning",
              "A client authenticates to karmada-apiserver with a certificate that expires within 7 days",
              "Some client (a component, an agent, an operator) still presents an old certificate; renew it and "
              "restart what uses it."),
    ]))
    comp_jobs = "|".join(j[k] for k in ("etcd", "apiserver", "aggregated", "kcm", "scheduler", "controller_manager",
                                        "webhook", "estimator", "exporter"))
    groups.append(("karmada-hub.components", [
        Alert("KarmadaHubTargetDown", f'up{{job=~"{comp_jobs}"}} == 0', "10m", "warning",
              "{{ $labels.job }} on {{ $labels.instance }} does not answer its metrics scrape",
              "The pod runs but its metrics endpoint fails (crash loop, TLS or RBAC on the scrape identity)."),
        Alert("KarmadaHubWorkloadDegraded",
              f'(kube_deployment_status_replicas_available{{namespace="{ns}"}} < '
              f'kube_deployment_spec_replicas{{namespace="{ns}"}}) or (kube_statefulset_status_replicas_ready'
              f'{{namespace="{ns}"}} < kube_statefulset_replicas{{namespace="{ns}"}})', "15m", "warning",
              "{{ $labels.deployment }}{{ $labels.statefulset }} in karmada-system runs below its replicas",
              "A replica is not ready: a lost server, a Pending pod, or a rollout that does not progress."),
    ]))
    groups.append(("karmada-hub.members", [
        Alert("KarmadaHubMemberNotReady", "max by (member_cluster, sync_mode) (karmada_hub_member_ready) == 0",
              "5m", "warning", "Member cluster {{ $labels.member_cluster }} ({{ $labels.sync_mode }}) is not Ready",
              "Karmada no longer reaches the member (Push) or its agent stopped renewing its lease (Pull). "
              "After the failover grace period its workloads are evicted to other members."),
        Alert("KarmadaHubExporterStale",
              "(time() - max(karmada_hub_exporter_last_success_timestamp_seconds)) > 300 or "
              "absent(karmada_hub_exporter_last_success_timestamp_seconds)", "10m", "warning",
              "Member readiness is not being measured",
              "karmada-hub-exporter cannot list Clusters, or Prometheus does not scrape it: "
              "KarmadaHubMemberNotReady cannot fire."),
    ]))
    groups.append(("karmada-hub.certificates", [
        Alert("KarmadaHubCertificateRenewalOverdue", f"time() - {RENEWAL_METRIC} > {7 * DAY}", "1h", "warning",
              "Certificate {{ $labels.certificate }} entered its renewal window more than 7 days ago",
              "pulumi up re-issues a certificate only when it runs inside the window; run it for the hub stack."),
        Alert("KarmadaHubCertificateExpiresSoon", f"{EXPIRY_METRIC} - time() < {14 * DAY}", "10m", "critical",
              "Certificate {{ $labels.certificate }} expires in {{ $value | humanizeDuration }}",
              "Renew it now: an expired CA or leaf stops the components that use it."),
    ]))
    jobs: list[Alert] = []
    if t.backup_schedule is not None:
        gap = cron_max_gap(t.backup_schedule) + dt.timedelta(seconds=t.backup_deadline_seconds)
        sel = f'{{namespace="{ns}",cronjob="etcd-backup"}}'
        jobs += [
            Alert("KarmadaHubEtcdBackupFailed",
                  f"(kube_cronjob_status_last_schedule_time{sel} > kube_cronjob_status_last_successful_time{sel}) "
                  f"and (time() - kube_cronjob_status_last_schedule_time{sel} > {t.backup_deadline_seconds})", "5m",
                  "critical", "The last scheduled etcd backup did not succeed",
                  "Its Job failed or timed out; nothing newer than the last good snapshot is off the hub."),
            Alert("KarmadaHubEtcdBackupMissing",
                  f"time() - kube_cronjob_status_last_successful_time{sel} > {int(gap.total_seconds())}", "10m",
                  "critical", "No etcd backup succeeded for {{ $value | humanizeDuration }}",
                  "A scheduled run was missed (suspended CronJob, failing runs, a stuck Job)."),
            Alert("KarmadaHubEtcdBackupNeverSucceeded", f"absent(kube_cronjob_status_last_successful_time{sel})",
                  _duration(gap), "critical", "No successful etcd backup is known",
                  "The backup CronJob never succeeded, or kube-state-metrics does not report it."),
        ]
    sel = f'{{namespace="{ns}",cronjob="etcd-defrag"}}'
    jobs.append(Alert(
        "KarmadaHubEtcdMaintenanceFailed",
        f"(kube_cronjob_status_last_schedule_time{sel} > kube_cronjob_status_last_successful_time{sel}) and "
        f"(time() - kube_cronjob_status_last_schedule_time{sel} > {t.backup_deadline_seconds})", "5m", "warning",
        "The last etcd defragmentation run did not succeed",
        "It refuses while a member is down or without one leader; its log says which."))
    groups.append(("karmada-hub.jobs", jobs))
    if t.dns_mode is not None:
        groups.append(("karmada-hub.traffic", traffic_alerts(t)))
    return groups


def traffic_alerts(t: Thresholds) -> list[Alert]:
    """The traffic layer: the failover controller (agents/traffic_failover.py `metrics`), and per dns.mode either
    the fleet's own nameservers or external-dns (v0.22.0 controller/metrics.go
    external_dns_controller_last_sync_timestamp_seconds)."""
    f = f'job="{JOBS["failover"]}"'
    out = [
        Alert("KarmadaHubTrafficFailoverDown", f"(count(up{{{f}}} == 1) or vector(0)) < {t.vantage_points // 2 + 1}",
              "5m", "critical", "Fewer than a majority of the DNS failover controller's replicas answer",
              "Without a majority of vantage points no region can be withdrawn: DNS keeps what it publishes now."),
        Alert("KarmadaHubTrafficFailoverNoLeader", f"(max(traffic_failover_leader{{{f}}}) or vector(0)) < 1", "2m",
              "warning", "No DNS failover controller replica leads",
              "Nothing decides: DNS keeps what it publishes now (fail static) until a replica takes the leader Lease."),
        Alert("KarmadaHubTrafficFailOpen", f"max(traffic_failover_fail_open_names{{{f}}}) > 0", "5m", "warning",
              "{{ $value }} names stay published although every region fails their probes",
              "Fail open: either every region really is down for these names, or the hub cannot reach them (its own "
              "network); the last published addresses stay."),
    ]
    if t.dns_mode == "self-hosted":
        out += [
            Alert("KarmadaHubNameserverDown",
                  f"max by (nameserver, role) (traffic_failover_nameserver_up{{{f}}}) == 0", "2m", "warning",
                  "Nameserver {{ $labels.nameserver }} ({{ $labels.role }}) answers no SOA for the zone",
                  "No controller replica gets an answer from it: knotd down, its server down, or its zone not "
                  "loaded. Resolvers use the other nameservers."),
            Alert("KarmadaHubNameserversAllDown",
                  f'(max(traffic_failover_nameserver_up{{{f},role="primary"}}) or vector(0)) == 0', "2m", "critical",
                  "No hub nameserver answers for the zone",
                  "Only secondaries (if any) answer; failover decisions cannot be written."),
            Alert("KarmadaHubNameserverSerialSkew",
                  f"max by (nameserver, role) (traffic_failover_nameserver_behind_seconds{{{f}}}) > "
                  f"{t.serial_skew_seconds}", "1m", "warning",
                  "Nameserver {{ $labels.nameserver }} has not held the zone's current serial for "
                  "{{ $value | humanizeDuration }}",
                  "It answers an older zone than the others: a write to it fails (key, ACL, address) or, for a "
                  "secondary, its transfers fail."),
        ]
    else:
        e = f'job="{JOBS["external_dns"]}"'
        stale = 3 * t.external_dns_interval_seconds
        out.append(Alert(
            "KarmadaHubExternalDnsStale",
            f"(time() - max(external_dns_controller_last_sync_timestamp_seconds{{{e}}})) > {stale} or "
            "absent(external_dns_controller_last_sync_timestamp_seconds)", "5m", "warning",
            "external-dns has not synced with Hetzner DNS for three intervals",
            "Decisions of the failover controller do not reach Hetzner DNS: the webhook, the token or the Hetzner "
            "API fails (external-dns and webhook logs)."))
    return out


def rule_groups(t: Thresholds, runbook_base: str, certs: Sequence[CertificateRecord]) -> list[dict[str, Any]]:
    """The PrometheusRule's `spec.groups`: the certificate records first, then the alert groups."""
    out = [certificate_records(certs)] if certs else []
    out += [{"name": name, "rules": [a.rule(runbook_base) for a in alerts]} for name, alerts in alert_groups(t)]
    return out


def alert_names(t: Thresholds) -> list[str]:
    return [a.name for _, alerts in alert_groups(t) for a in alerts]
