"""`hubctl doctor`'s checks: pure functions from what was read (`Snapshot`) and what the stack declares (`Expect`)
to rows, each either fine or a finding with a verdict — hub, member X, policy, quota or skew — and the section of
docs/runbooks/on-call.md that starts from it.

Nothing here reads a cluster: `read.py` does, once, and the tests hand these functions the objects a fault leaves
behind. A check blames only what its own evidence points at (a member's Work failing is that member's; an estimator
down while its member is Ready is the hub's), so a fault in one place does not make healthy parts look guilty.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from components.config import FleetConfig, MemberConfig, TenantConfig
from components.karmada import addons_docs, flags, workloads
from components.karmada.pki_spec import estimator_service_name
from components.kube.quantity import parse_quantity
from components.operations.skew import MemberVersions, version_skew_rows

Verdict = Literal["hub", "member", "policy", "quota", "skew"]
Status = Literal["ok", "finding", "unknown"]

ON_CALL = "docs/runbooks/on-call.md"
RUNBOOKS: Mapping[str, str] = {
    "api": "hub-an-api-server-is-not-ready",
    "servers": "hub-a-hub-server-is-not-ready",
    "etcd": "hub-etcd-members-and-quorum",
    "workload": "hub-a-control-plane-workload-is-degraded",
    "apiservice": "hub-an-apiservice-is-not-available",
    "webhook": "hub-the-webhook-does-not-answer",
    "lease": "hub-no-leader",
    "certificates": "hub-certificates-close-to-expiry",
    "dns": "member-region-withdrawn-from-dns",
    "cluster": "member-not-ready-or-tainted",
    "agent": "member-the-pull-agent-is-not-renewing",
    "estimator": "member-its-estimator-does-not-answer",
    "works": "member-work-fails-to-apply",
    "evictions": "member-evictions-in-progress",
    "taint": "policy-a-ready-member-is-tainted",
    "scheduling": "policy-a-binding-is-not-scheduled",
    "quota": "quota-a-tenant-is-at-its-quota",
    "skew": "skew-versions-outside-the-matrix",
}
"""Check -> the anchor of its section in docs/runbooks/on-call.md (tests/test_doctor.py holds them to the headings)."""


def runbook(check: str) -> str:
    return f"{ON_CALL}#{RUNBOOKS[check]}"


@dataclass(frozen=True)
class Row:
    """One line of the report: a check on one subject, fine (`ok`), a `finding` (with its verdict and runbook),
    or `unknown` (doctor could not read what it needs: said, never passed or blamed)."""

    check: str
    subject: str
    status: Status
    detail: str
    verdict: Verdict | None = None
    runbook: str = ""

    @property
    def blame(self) -> str:
        """`hub`, `member <name>`, `policy`, `quota` or `skew`; empty for a row that is no finding."""
        if self.verdict is None:
            return ""
        return f"member {self.subject}" if self.verdict == "member" else self.verdict

    def as_dict(self) -> dict[str, Any]:
        return {"status": self.status, "verdict": self.verdict, "blame": self.blame, "check": self.check,
                "subject": self.subject, "detail": self.detail, "runbook": self.runbook}


def ok(check: str, subject: str, detail: str) -> Row:
    return Row(check, subject, "ok", detail)


def finding(verdict: Verdict, check: str, subject: str, detail: str, book: str | None = None) -> Row:
    return Row(check, subject, "finding", detail, verdict, runbook(book or check))


def unknown(check: str, subject: str, detail: str) -> Row:
    return Row(check, subject, "unknown", detail)


# -------------------------------------------------------------------------------------- what is expected


@dataclass(frozen=True)
class MemberExpect:
    name: str
    region: str
    sync_mode: str
    estimator: bool


@dataclass(frozen=True)
class Expect:
    """What the stack declares, as plain values (`expect_from`)."""

    karmada_version: str
    etcd_replicas: int
    deployments: Mapping[str, int]
    """Host Deployment in karmada-system -> replicas (control plane, estimators, addons)."""
    leases: tuple[str, ...]
    """Leader leases in the karmada-apiserver's karmada-system."""
    members: tuple[MemberExpect, ...]
    quota_tenants: Mapping[str, str]
    """Tenant -> namespace, for tenants with a FederatedResourceQuota."""
    apiservices: tuple[str, ...]
    dns: bool
    cluster_lease_seconds: int
    """How long a Pull agent's cluster lease lives (karmada-agent --cluster-lease-duration)."""

    def member(self, name: str) -> MemberExpect | None:
        return next((m for m in self.members if m.name == name), None)

    def region_members(self, region: str) -> list[str]:
        return sorted(m.name for m in self.members if m.region == region)


def expect_from(config: FleetConfig, members: Sequence[MemberConfig], tenants: Sequence[TenantConfig]) -> Expect:
    """The expected fleet of a stack that owns the hub (all-in-one, or hub with its region stacks' members)."""
    deployments = {w.name: w.replicas for w in workloads.deployments(config)}
    for m in members:
        if m.scheduler_estimator:
            deployments[estimator_service_name(m.name)] = config.karmada.estimator.replicas
    addons = config.karmada.addons
    if addons.search.enabled:
        deployments[addons_docs.SEARCH] = addons.search.replicas
    if addons.dashboard.enabled:
        deployments[addons_docs.DASHBOARD_API] = addons.dashboard.replicas
        deployments[addons_docs.DASHBOARD_WEB] = addons.dashboard.replicas
    leases = tuple(sorted(lease.name for name, lease in flags.LEADER_ELECTION.items()
                          if lease is not None and name in deployments))
    apiservices = ["v1alpha1.cluster.karmada.io"]
    if addons.search.enabled:
        apiservices.append(addons_docs.SEARCH_APISERVICE)
    return Expect(
        karmada_version=config.karmada.version, etcd_replicas=config.karmada.etcd.replicas,
        deployments=deployments, leases=leases,
        members=tuple(MemberExpect(m.name, m.region, m.sync_mode, m.scheduler_estimator) for m in members),
        quota_tenants={t.name: t.namespace for t in tenants if t.quota is not None},
        apiservices=tuple(apiservices), dns=config.dns is not None,
        cluster_lease_seconds=config.failover.cluster_lease_duration,
    )


# ---------------------------------------------------------------------------------------- what was read


@dataclass(frozen=True)
class Probe:
    """One request's outcome: `ok` None when it was not made (no kubeconfig for it)."""

    ok: bool | None
    detail: str = ""


@dataclass(frozen=True)
class Certificate:
    where: str
    """`<namespace>/<secret> <key>`."""
    subject: str
    not_after: dt.datetime


@dataclass
class Snapshot:
    """Everything doctor read, as the API servers returned it (lists of objects; None: could not be read)."""

    now: dt.datetime
    karmada_readyz: Probe = Probe(None)
    host_readyz: Probe = Probe(None)
    webhook: Probe = Probe(None)
    nodes: list[dict[str, Any]] | None = None
    pods: list[dict[str, Any]] | None = None
    deployments: list[dict[str, Any]] | None = None
    apiservices: list[dict[str, Any]] | None = None
    leases: list[dict[str, Any]] | None = None
    cluster_leases: list[dict[str, Any]] | None = None
    certificates: list[Certificate] | None = None
    dnsendpoints: list[dict[str, Any]] | None = None
    vantage_leases: list[dict[str, Any]] | None = None
    clusters: list[dict[str, Any]] | None = None
    bindings: list[dict[str, Any]] | None = None
    works: list[dict[str, Any]] | None = None
    quotas: list[dict[str, Any]] | None = None
    member_api: dict[str, Probe] = field(default_factory=dict)
    agents: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    """Pull member -> its karmada-agent Deployment as its own API returns it (None: not read)."""
    errors: dict[str, str] = field(default_factory=dict)
    """What could not be read -> why (e.g. `clusters` -> `HTTP 403 ...`)."""


# ------------------------------------------------------------------------------------------------ helpers


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _name(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("name", "?"))


def _condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def parse_time(value: Any) -> dt.datetime | None:
    """RFC 3339 (Time or MicroTime) -> aware datetime; None when absent or unreadable."""
    if not value or not isinstance(value, str):
        return None
    text = value.strip().replace("Z", "+00:00")
    text = re.sub(r"\.(\d{6})\d+", r".\1", text)
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def ago(now: dt.datetime, then: dt.datetime | None) -> str:
    if then is None:
        return "never"
    seconds = int((now - then).total_seconds())
    if seconds < 120:
        return f"{seconds}s ago"
    if seconds < 7200:
        return f"{seconds // 60}m ago"
    return f"{seconds // 3600}h ago" if seconds < 172800 else f"{seconds // 86400}d ago"


def _failing_checks(detail: str) -> str:
    """`[-]etcd failed: ...` lines of a verbose /readyz, or the detail as is."""
    failed = [line[3:].split(" failed")[0] for line in detail.splitlines() if line.startswith("[-]")]
    return f"failing: {', '.join(failed)}" if failed else (detail.strip().splitlines() or ["not ready"])[0][:200]


def _pod_problem(pod: Mapping[str, Any]) -> str:
    """Why a pod is not Ready, in a few words: its phase, a waiting reason, restarts, or the node."""
    status = pod.get("status") or {}
    for c in status.get("containerStatuses") or []:
        state = c.get("state") or {}
        waiting = (state.get("waiting") or {}).get("reason")
        if waiting:
            return f"{waiting} ({c.get('restartCount', 0)} restarts)"
        if "terminated" in state:
            return f"terminated: {(state['terminated'] or {}).get('reason', '?')}"
    ready = _condition(pod, "Ready")
    reason = (ready or {}).get("reason") or status.get("phase") or "not ready"
    node = (pod.get("spec") or {}).get("nodeName")
    return f"{reason}{f' on {node}' if node else ''}"


def _pods_of(pods: Iterable[Mapping[str, Any]], name: str) -> list[Mapping[str, Any]]:
    return [p for p in pods if (_meta(p).get("labels") or {}).get("app.kubernetes.io/name") == name]


def _ready(pod: Mapping[str, Any]) -> bool:
    return (_condition(pod, "Ready") or {}).get("status") == "True"


# --------------------------------------------------------------------------------------------------- hub


def check_api(name: str, probe: Probe) -> list[Row]:
    """An API server's /readyz, as the kubeconfig's address reaches it."""
    if probe.ok is None:
        return [unknown("api", name, probe.detail or "not read (no kubeconfig)")]
    if probe.ok:
        return [ok("api", name, "/readyz ok")]
    return [finding("hub", "api", name, f"/readyz: {_failing_checks(probe.detail)}")]


def check_nodes(nodes: list[dict[str, Any]] | None) -> list[Row]:
    if nodes is None:
        return []
    out = []
    for node in nodes:
        ready = _condition(node, "Ready") or {}
        if ready.get("status") != "True":
            out.append(finding("hub", "servers", _name(node), f"Node not Ready ({ready.get('reason') or 'no status'}"
                               f", since {ready.get('lastTransitionTime', '?')})"))
    return out or [ok("servers", "hub", f"{len(nodes)} servers Ready")]


def check_etcd(pods: list[dict[str, Any]] | None, expect: Expect) -> list[Row]:
    """Every etcd member Ready (its kubelet probes etcd's /readyz), and a majority of them: quorum."""
    if pods is None:
        return []
    members = sorted(_pods_of(pods, flags.ETCD_SERVICE), key=_name)
    ready = [p for p in members if _ready(p)]
    quorum = expect.etcd_replicas // 2 + 1
    status = f"{len(ready)}/{expect.etcd_replicas} members ready"
    if len(ready) < quorum:
        down = ", ".join(f"{_name(p)} {_pod_problem(p)}" for p in members if not _ready(p)) or "no pods"
        return [finding("hub", "etcd", "etcd", f"QUORUM LOST: {status} (needs {quorum}); {down}")]
    if len(ready) < expect.etcd_replicas:
        down = "; ".join(f"{_name(p)}: {_pod_problem(p)}" for p in members if not _ready(p))
        missing = expect.etcd_replicas - len(members)
        gone = f"; {missing} member pod(s) missing" if missing > 0 else ""
        return [finding("hub", "etcd", "etcd", f"{status}, quorum holds: {down or 'pods missing'}{gone}; one more "
                        "loss stops every write")]
    return [ok("etcd", "etcd", f"{status}, in quorum")]


def _deployment(deployments: Iterable[Mapping[str, Any]], name: str) -> Mapping[str, Any] | None:
    return next((d for d in deployments if _name(d) == name), None)


def check_workloads(deployments: list[dict[str, Any]] | None, pods: list[dict[str, Any]] | None,
                    clusters: list[dict[str, Any]] | None, expect: Expect) -> list[Row]:
    """Every control-plane, estimator and addon Deployment with all its replicas ready (for the API servers that is
    each replica's /readyz, as its kubelet probes it). An estimator down while its member is Ready is the hub's."""
    if deployments is None:
        return []
    pods = pods or []
    ready_members = {_name(c) for c in clusters or [] if (_condition(c, "Ready") or {}).get("status") == "True"}
    out = []
    for name, replicas in sorted(expect.deployments.items()):
        member = name.removeprefix(estimator_service_name(""))
        check = "estimator" if name.startswith(estimator_service_name("")) else "workload"
        blame: Verdict = "hub"
        subject = name
        if check == "estimator" and clusters is not None and member not in ready_members:
            blame, subject = "member", member
        doc = _deployment(deployments, name)
        if doc is None:
            out.append(finding(blame, check, subject, f"Deployment {name} missing in {flags.NAMESPACE}"))
            continue
        status = doc.get("status") or {}
        ready = int(status.get("readyReplicas") or 0)
        want = int((doc.get("spec") or {}).get("replicas", replicas))
        if ready >= want and want >= replicas:
            out.append(ok(check, name, f"{ready}/{want} ready"))
            continue
        bad = [f"{_name(p)}: {_pod_problem(p)}" for p in _pods_of(pods, name) if not _ready(p)]
        scaled = f" (scaled to {want}, the stack declares {replicas})" if want < replicas else ""
        what = "not answering" if check == "estimator" else "degraded"
        out.append(finding(blame, check, subject, f"{name} {what}: {ready}/{want} ready{scaled}"
                           + (f"; {'; '.join(bad)}" if bad else "")))
    return out


def check_apiservices(apiservices: list[dict[str, Any]] | None, expect: Expect) -> list[Row]:
    if apiservices is None:
        return []
    out = []
    by_name = {_name(a): a for a in apiservices}
    for name in sorted({*expect.apiservices, *(n for n, a in by_name.items() if (a.get("spec") or {}).get("service"))}):
        api = by_name.get(name)
        if api is None:
            out.append(finding("hub", "apiservice", name, "APIService missing"))
            continue
        available = _condition(api, "Available") or {}
        if available.get("status") != "True":
            why = available.get("message") or available.get("reason") or "no Available condition"
            out.append(finding("hub", "apiservice", name, f"not Available: {why}"))
        else:
            out.append(ok("apiservice", name, "Available"))
    return out


def check_webhook(probe: Probe) -> list[Row]:
    """A server-side dry run through the fail-closed webhooks: it persists nothing and answers only when
    karmada-webhook does."""
    if probe.ok is None:
        return [unknown("webhook", "karmada-webhook", probe.detail or "not probed")]
    if probe.ok:
        return [ok("webhook", "karmada-webhook", "answers (dry-run PropagationPolicy admitted)")]
    return [finding("hub", "webhook", "karmada-webhook", f"not answering: {probe.detail}")]


def check_leases(leases: list[dict[str, Any]] | None, expect: Expect, now: dt.datetime) -> list[Row]:
    """Who holds each leader lease and since when; a lease nobody renewed within its duration has no leader."""
    if leases is None:
        return []
    by_name = {_name(lease): lease for lease in leases}
    out = []
    for name in expect.leases:
        lease = by_name.get(name)
        if lease is None:
            out.append(finding("hub", "lease", name, "no lease: the component never elected a leader"))
            continue
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        renewed = parse_time(spec.get("renewTime"))
        acquired = parse_time(spec.get("acquireTime"))
        duration = int(spec.get("leaseDurationSeconds") or 15)
        since = f"since {acquired.isoformat(timespec='seconds') if acquired else '?'}"
        if not holder or renewed is None or (now - renewed).total_seconds() > duration:
            out.append(finding("hub", "lease", name, f"no leader: last held by {holder or 'nobody'}, renewed "
                               f"{ago(now, renewed)} (lease {duration}s)"))
        else:
            out.append(ok("lease", name, f"held by {holder} {since}, renewed {ago(now, renewed)}"))
    return out


def check_certificates(certificates: list[Certificate] | None, now: dt.datetime, warn_days: int) -> list[Row]:
    if certificates is None:
        return []
    soon = [c for c in certificates if c.not_after - now < dt.timedelta(days=warn_days)]
    out = [finding("hub", "certificates", c.where,
                   f"{c.subject} {'EXPIRED' if c.not_after <= now else 'expires'} {c.not_after.date().isoformat()}")
           for c in sorted(soon, key=lambda c: c.not_after)]
    if not out and certificates:
        first = min(certificates, key=lambda c: c.not_after)
        out.append(ok("certificates", "hub", f"{len(certificates)} certificates, none within {warn_days} days; "
                      f"first {first.not_after.date().isoformat()} ({first.where})"))
    return out


def check_dns(endpoints: list[dict[str, Any]] | None, vantage: list[dict[str, Any]] | None,
              expect: Expect) -> list[Row]:
    """The DNS failover controller's view: which regions it withdrew from which name, since when and why (the
    vantage points' last probe errors); fail-open names (every region down, or no majority)."""
    if not expect.dns or endpoints is None:
        return []
    errors: dict[str, set[str]] = {}
    for lease in vantage or []:
        raw = (_meta(lease).get("annotations") or {}).get("karmada-hub.io/observations") or "{}"
        try:
            obs = json.loads(raw).get("obs") or {}
        except ValueError:
            continue
        for key, counts in obs.items():
            if isinstance(counts, list) and len(counts) == 3 and counts[2]:
                errors.setdefault(key, set()).add(str(counts[2]))
    out = []
    withdrawn_regions: dict[str, list[str]] = {}
    for ep in endpoints:
        annotations = _meta(ep).get("annotations") or {}
        host = _name(ep)
        try:
            withdrawn = json.loads(annotations.get("karmada-hub.io/withdrawn") or "{}")
        except ValueError:
            withdrawn = {}
        for region, since in sorted(withdrawn.items()):
            why = "; ".join(sorted(errors.get(f"{host} {region}", set()))) or "probes failed"
            withdrawn_regions.setdefault(region, []).append(f"{host} since {since} ({why})")
        if annotations.get("karmada-hub.io/fail-open"):
            out.append(finding("hub", "dns", host, "fail-open: no region of this name is healthy, or no majority of "
                               "vantage points reports; the last published answer stays", book="dns"))
    for region, names in sorted(withdrawn_regions.items()):
        members = ",".join(expect.region_members(region)) or f"region {region}"
        out.append(finding("member", "dns", members, f"region {region} withdrawn from {'; '.join(names)}"))
    if not out:
        out.append(ok("dns", "failover controller", f"{len(endpoints)} names, every region published"))
    return out


# ------------------------------------------------------------------------------------------------ members


def check_clusters(clusters: list[dict[str, Any]] | None, member_api: Mapping[str, Probe],
                   expect: Expect) -> list[Row]:
    """Each member's Cluster: Ready, and its taints. Not Ready is the member's (with what this machine sees of its
    API as evidence); a Ready member that carries a taint is a policy doing it (a ClusterTaintPolicy or a hand)."""
    if clusters is None:
        return []
    by_name = {_name(c): c for c in clusters}
    out = []
    for m in expect.members:
        cluster = by_name.get(m.name)
        if cluster is None:
            out.append(finding("member", "cluster", m.name, f"no Cluster {m.name} in the karmada-apiserver "
                               f"({'its agent never registered' if m.sync_mode == 'Pull' else 'not joined'})"))
            continue
        ready = _condition(cluster, "Ready") or {}
        taints = [f"{t.get('key')}:{t.get('effect')}" for t in (cluster.get("spec") or {}).get("taints") or []]
        tainted = f"; tainted {', '.join(taints)}" if taints else ""
        if ready.get("status") != "True":
            probe = member_api.get(m.name, Probe(None))
            seen = {True: "; its API answers from here", False: f"; its API does not answer from here "
                    f"({probe.detail})", None: ""}[probe.ok]
            out.append(finding("member", "cluster", m.name, f"Ready={ready.get('status', 'missing')} "
                               f"({ready.get('reason') or '-'}: {(ready.get('message') or '')[:120]}) since "
                               f"{ready.get('lastTransitionTime', '?')}{tainted}{seen}"))
        elif taints:
            out.append(finding("policy", "taint", m.name, f"Ready but tainted {', '.join(taints)}: a "
                               "ClusterTaintPolicy or a manual taint keeps (or evicts) workloads off it"))
        else:
            out.append(ok("cluster", m.name, f"Ready, {m.sync_mode}, no taints"))
    return out


def check_agents(cluster_leases: list[dict[str, Any]] | None, leases: list[dict[str, Any]] | None,
                 agents: Mapping[str, dict[str, Any] | None], member_api: Mapping[str, Probe], expect: Expect,
                 now: dt.datetime) -> list[Row]:
    """A Pull member's karmada-agent renews `karmada-cluster/<member>` (its heartbeat) and holds
    `karmada-system/karmada-agent-<member>` (its leader lease) in the karmada-apiserver. Both stale while the member's
    own API answers means the agent, not the member, is down."""
    if cluster_leases is None:
        return []
    heartbeat = {_name(x): x for x in cluster_leases}
    leaders = {_name(x): x for x in leases or []}
    out = []
    for m in expect.members:
        if m.sync_mode != "Pull":
            continue
        lease = heartbeat.get(m.name)
        spec = (lease or {}).get("spec") or {}
        renewed = parse_time(spec.get("renewTime"))
        duration = int(spec.get("leaseDurationSeconds") or expect.cluster_lease_seconds)
        leader = (leaders.get(f"karmada-agent-{m.name}") or {}).get("spec") or {}
        if renewed is not None and (now - renewed).total_seconds() <= duration:
            out.append(ok("agent", m.name, f"karmada-agent renewed its lease {ago(now, renewed)}, leader "
                          f"{leader.get('holderIdentity') or '?'}"))
            continue
        evidence = []
        probe = member_api.get(m.name, Probe(None))
        if probe.ok:
            evidence.append("the member's API answers, so the agent itself is down")
        elif probe.ok is False:
            evidence.append(f"the member's API does not answer from here either ({probe.detail})")
        agent = agents.get(m.name)
        if agent is not None:
            status = agent.get("status") or {}
            evidence.append(f"karmada-agent Deployment {int(status.get('readyReplicas') or 0)}/"
                            f"{int((agent.get('spec') or {}).get('replicas', 0))} ready")
        out.append(finding("member", "agent", m.name, f"karmada-agent last renewed its cluster lease "
                           f"{ago(now, renewed)} (lease {duration}s)" + (f"; {'; '.join(evidence)}" if evidence
                                                                        else "")))
    return out


def _tag(image: str) -> str | None:
    ref = image.split("@", 1)[0]
    name, _, tag = ref.rpartition(":")
    return tag if name and "/" not in tag else None


def check_versions(clusters: list[dict[str, Any]] | None, agents: Mapping[str, dict[str, Any] | None],
                   expect: Expect) -> list[Row]:
    """Each member's Kubernetes version (as Karmada recorded it in its Cluster) and each Pull agent's image tag (as
    the member runs it) against the compatibility matrix: operations/skew.py's rows over components/versions.py."""
    if clusters is None:
        return []
    by_name = {_name(c): c for c in clusters}
    out = []
    for m in expect.members:
        k8s = str(((by_name.get(m.name) or {}).get("status") or {}).get("kubernetesVersion") or "")
        agent_doc = agents.get(m.name)
        agent = None
        if agent_doc is not None:
            containers = (((agent_doc.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")
            image = next((c.get("image", "") for c in containers or [] if c.get("name") == "karmada-agent"), "")
            agent = _tag(image) or "unknown"
        if not k8s and agent is None:
            continue
        # an unread agent is not checked (skew.py would assume the pinned version); an unread Kubernetes version
        # neither (the agent row is then checked alone)
        rows = [r for r in version_skew_rows(expect.karmada_version, None, [MemberVersions(
                    m.name, k8s or expect.karmada_version, m.sync_mode, agent)])
                if (agent is not None or not r.component.startswith("karmada-agent"))
                and (k8s or r.component.startswith("karmada-agent"))]
        problems = [r for r in rows if not r.ok]
        if problems:
            out.append(finding("skew", "skew", m.name, "; ".join(f"{r.component} {r.version}: {r.problem}"
                                                                  for r in problems)))
        elif rows:
            shown = [f"{'karmada-agent' if r.component.startswith('karmada-agent') else 'Kubernetes'} {r.version}"
                     for r in rows]
            out.append(ok("skew", m.name, ", ".join(shown) + f" within the matrix of Karmada {expect.karmada_version}"))
    return out


# ---------------------------------------------------------------------------------------------------- work


def _cluster_of_work(work: Mapping[str, Any]) -> str:
    return str(_meta(work).get("namespace", "")).removeprefix("karmada-es-")


def _quota_words(text: str) -> bool:
    return bool(re.search(r"quota", text, re.I))


def check_bindings(bindings: list[dict[str, Any]] | None, expect: Expect) -> list[Row]:
    """Bindings the scheduler could not place (policy, or quota when it says so) and bindings scheduled but not
    applied on a member (that member's)."""
    if bindings is None:
        return []
    unscheduled: list[Row] = []
    not_applied: dict[str, list[str]] = {}
    for b in bindings:
        where = f"{_meta(b).get('namespace', '')}/{_name(b)}".lstrip("/")
        scheduled = _condition(b, "Scheduled")
        if scheduled is not None and scheduled.get("status") != "True":
            message = f"{scheduled.get('reason', '?')}: {(scheduled.get('message') or '')[:160]}"
            if scheduled.get("reason") == "QuotaExceeded" or _quota_words(message):
                unscheduled.append(finding("quota", "quota", where, f"binding not scheduled: {message}"))
            else:
                unscheduled.append(finding("policy", "scheduling", where, f"binding not scheduled: {message}"))
            continue
        if scheduled is None:
            continue
        for item in (b.get("status") or {}).get("aggregatedStatus") or []:
            if not item.get("applied"):
                not_applied.setdefault(str(item.get("clusterName")), []).append(
                    f"{where} ({(item.get('appliedMessage') or 'not applied yet')[:120]})")
    out = unscheduled
    for cluster, items in sorted(not_applied.items()):
        verdict: Verdict = "quota" if all(_quota_words(i) for i in items) else "member"
        out.append(finding(verdict, "works" if verdict == "member" else "quota", cluster,
                           f"{len(items)} binding(s) scheduled to {cluster} but not applied: {'; '.join(items[:3])}"
                           + (" …" if len(items) > 3 else "")))
    if not out:
        out.append(ok("bindings", "fleet", f"{len(bindings)} bindings scheduled and applied"))
    return out


def check_works(works: list[dict[str, Any]] | None, expect: Expect) -> list[Row]:
    """Works whose Applied condition is False: why, per member (quota when the member refused on a quota)."""
    if works is None:
        return []
    failing: dict[str, list[str]] = {}
    for w in works:
        applied = _condition(w, "Applied")
        if applied is not None and applied.get("status") == "False":
            failing.setdefault(_cluster_of_work(w), []).append(
                f"{_name(w)}: {(applied.get('message') or applied.get('reason') or '?')[:160]}")
    out = []
    for cluster, items in sorted(failing.items()):
        verdict: Verdict = "quota" if all(_quota_words(i) for i in items) else "member"
        out.append(finding(verdict, "works" if verdict == "member" else "quota", cluster,
                           f"{len(items)} Work(s) fail to apply on {cluster}: {'; '.join(items[:3])}"
                           + (" …" if len(items) > 3 else "")))
    return out or [ok("works", "fleet", f"{len(works)} Works, none failing to apply")]


def check_quotas(quotas: list[dict[str, Any]] | None, expect: Expect) -> list[Row]:
    """Each tenant's FederatedResourceQuota: a resource whose use reached its overall limit is a quota finding."""
    if quotas is None:
        return []
    by_ns = {str(_meta(q).get("namespace", "")): q for q in quotas}
    out = []
    for tenant, namespace in sorted(expect.quota_tenants.items()):
        q = by_ns.get(namespace)
        if q is None:
            out.append(unknown("quota", tenant, f"no FederatedResourceQuota in {namespace}"))
            continue
        status = q.get("status") or {}
        hard = status.get("overall") or (q.get("spec") or {}).get("overall") or {}
        used = status.get("overallUsed") or {}
        full = []
        for resource, limit in sorted(hard.items()):
            if resource in used:
                try:
                    if parse_quantity(str(used[resource])) >= parse_quantity(str(limit)):
                        full.append(f"{resource} {used[resource]}/{limit}")
                except ValueError:
                    continue
        if full:
            out.append(finding("quota", "quota", tenant, f"at its quota in {namespace}: {', '.join(full)}"))
        else:
            shown = ", ".join(f"{r} {used.get(r, '0')}/{v}" for r, v in sorted(hard.items()))
            out.append(ok("quota", tenant, f"within quota ({shown})"))
    return out


def check_evictions(bindings: list[dict[str, Any]] | None, now: dt.datetime) -> list[Row]:
    """Graceful evictions in progress (binding.spec.gracefulEvictionTasks), per member they leave."""
    if bindings is None:
        return []
    leaving: dict[str, list[str]] = {}
    for b in bindings:
        where = f"{_meta(b).get('namespace', '')}/{_name(b)}".lstrip("/")
        for task in (b.get("spec") or {}).get("gracefulEvictionTasks") or []:
            since = parse_time(task.get("creationTimestamp"))
            leaving.setdefault(str(task.get("fromCluster")), []).append(
                f"{where} ({task.get('reason', '?')}, {task.get('producer', '?')}, {ago(now, since)})")
    return [finding("member", "evictions", cluster, f"{len(items)} eviction(s) in progress: {'; '.join(items[:3])}"
                    + (" …" if len(items) > 3 else "")) for cluster, items in sorted(leaving.items())]


# --------------------------------------------------------------------------------------------------- all


@dataclass(frozen=True)
class Report:
    stack: str
    rows: tuple[Row, ...]

    @property
    def findings(self) -> list[Row]:
        return [r for r in self.rows if r.status == "finding"]

    @property
    def healthy(self) -> bool:
        return not self.findings

    def as_dict(self) -> dict[str, Any]:
        return {"stack": self.stack, "healthy": self.healthy,
                "findings": [r.as_dict() for r in self.findings],
                "unknown": [r.as_dict() for r in self.rows if r.status == "unknown"],
                "ok": [r.as_dict() for r in self.rows if r.status == "ok"]}


def diagnose(stack: str, snap: Snapshot, expect: Expect, warn_days: int = 30) -> Report:
    """Every check over one snapshot; rows in the order the on-call runbook reads them (hub, members, work)."""
    rows: list[Row] = []
    rows += check_api("karmada-apiserver", snap.karmada_readyz)
    rows += check_api("hub host API (k3s)", snap.host_readyz)
    rows += check_nodes(snap.nodes)
    rows += check_etcd(snap.pods, expect)
    rows += check_workloads(snap.deployments, snap.pods, snap.clusters, expect)
    rows += check_apiservices(snap.apiservices, expect)
    rows += check_webhook(snap.webhook)
    rows += check_leases(snap.leases, expect, snap.now)
    rows += check_certificates(snap.certificates, snap.now, warn_days)
    rows += check_dns(snap.dnsendpoints, snap.vantage_leases, expect)
    rows += check_clusters(snap.clusters, snap.member_api, expect)
    rows += check_agents(snap.cluster_leases, snap.leases, snap.agents, snap.member_api, expect, snap.now)
    rows += check_versions(snap.clusters, snap.agents, expect)
    rows += check_bindings(snap.bindings, expect)
    rows += check_works(snap.works, expect)
    rows += check_quotas(snap.quotas, expect)
    rows += check_evictions(snap.bindings, snap.now)
    rows += [unknown("read", what, why) for what, why in sorted(snap.errors.items())]
    return Report(stack, tuple(rows))

