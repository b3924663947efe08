"""The plan's report: what `hubctl plan` prints, what `--json` emits and what `report.json` keeps for `hubctl diff`.

A report is a list of sections, each built by one function from the plan and the validated config. A
section has a table (what the terminal shows), optional plain text of its own (the budget's fixed-width
format), metrics (numbers `hubctl diff` compares between two plans and puts at the top of a PR comment) and
data (the JSON detail). A new room adds one builder to `SECTIONS`; the CLI, `--json`, `report.json` and the
diff's deltas pick it up without further changes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from components.config import FleetConfig
from components.kube import cert_schedule
from hubctl import certs
from hubctl.mocks import unwrap
from hubctl.output import Output, Table
from hubctl.plan import REDACTED, Plan, manifests

REPORT_FILE = "report.json"
REPORT_VERSION = 1


@dataclass(frozen=True)
class Metric:
    value: float | int | str
    unit: str = ""
    better: Literal["lower", "higher", ""] = ""
    """Which direction is an improvement (the diff marks the other one)."""

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "unit": self.unit, "better": self.better}


@dataclass
class Section:
    key: str
    title: str
    table: Table | None = None
    text: str | None = None
    """Plain-text rendering when the section has a format of its own (else the table's)."""
    metrics: dict[str, Metric] = field(default_factory=dict)
    data: Any = None
    tables: list[Table] = field(default_factory=list)
    """What a terminal shows when the section has more than its one table (the scenario table, the clocks with
    their subtotals): the same facts as `text`, as rich tables. Empty: the terminal shows `table`."""
    notes: list[str] = field(default_factory=list)
    """Lines a terminal prints after `tables` (the model's limits, footnotes)."""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"title": self.title}
        if self.table is not None:
            out["headers"] = list(self.table.headers)
            out["rows"] = [list(r) for r in self.table.rows]
        out["metrics"] = {k: m.as_dict() for k, m in self.metrics.items()}
        if self.data is not None:
            out["data"] = self.data
        return out


SectionBuilder = Callable[[Plan, FleetConfig], Section | None]


# ---------------------------------------------------------------------------------------------- sections


def top_component(plan: Plan) -> dict[str, str]:
    """urn -> the label of its top-level component (`HubCluster hub`), or `(stack)` for top-level resources."""
    by_urn = {r.urn: r for r in plan.records}
    labels: dict[str, str] = {}
    for record in plan.records:
        top = record
        while top.parent and top.parent in by_urn:
            top = by_urn[top.parent]
        labels[record.urn] = (f"{top.type.rsplit(':', 1)[-1]} {top.name}"
                              if top is not record or not record.custom else "(stack)")
    return labels


def components_section(plan: Plan, config: FleetConfig) -> Section:
    counts = Counter(top_component(plan).values())
    rows = [[k, str(v)] for k, v in sorted(counts.items())]
    return Section("components", "resources per component", Table(["component", "resources"], rows),
                   metrics={"total": Metric(len(plan.records))}, data=dict(sorted(counts.items())))


def outputs_section(plan: Plan, config: FleetConfig) -> Section | None:
    endpoints = {k: v for k, v in plan.outputs.items()
                 if v != REDACTED and isinstance(v, str | int) and "\n" not in str(v)}
    if not endpoints:
        return None
    return Section("outputs", "outputs", Table(["output", "value"], [[k, str(v)] for k, v in endpoints.items()]),
                   data=endpoints)


def control_plane_rows(plan: Plan) -> list[list[str]]:
    """Component, replicas, image:tag, leader election — from the objects that would be applied."""
    rows = []
    for obj in manifests(plan).get("host", []):
        meta = obj.get("metadata", {})
        if obj.get("kind") not in ("Deployment", "StatefulSet") or meta.get("namespace") != "karmada-system":
            continue
        containers = obj["spec"]["template"]["spec"]["containers"]
        args = [a for c in containers for a in (c.get("args") or []) + (c.get("command") or [])]
        if obj["kind"] == "StatefulSet":
            election = "raft"
        else:
            election = "yes" if any(a in ("--leader-elect=true", "--leader-elect") for a in args) else "no"
        rows.append([meta["name"], str(obj["spec"].get("replicas", 1)), containers[0]["image"], election])
    return rows


def control_plane_section(plan: Plan, config: FleetConfig) -> Section | None:
    rows = control_plane_rows(plan)
    if not rows:
        return None
    return Section("controlPlane", "control plane", Table(["component", "replicas", "image", "leader election"], rows),
                   metrics={f"{r[0]} replicas": Metric(int(r[1]), better="higher") for r in rows},
                   data=[dict(zip(("component", "replicas", "image", "leaderElection"), r, strict=True)) for r in rows])


def version_skew_section(plan: Plan, config: FleetConfig) -> Section | None:
    if not config.members:
        return None
    from components.operations.skew import format_skew, skew_rows

    rows = skew_rows(config)
    bad = sum(not r.ok for r in rows)
    table = Table(["component", "version", "against", "status"],
                  [[r.component, r.version, r.against, r.status] for r in rows],
                  footer=[f"{len(rows)} pairs, {bad} problem{'s' if bad != 1 else ''}"])
    return Section("versionSkew", "version skew", table, text="version skew\n" + format_skew(rows),
                   metrics={"problems": Metric(bad, better="lower"), **{r.component: Metric(r.version) for r in rows}},
                   data=[{"component": r.component, "version": r.version, "against": r.against, "problem": r.problem}
                         for r in rows])


def failover_budget_section(plan: Plan, config: FleetConfig) -> Section | None:
    if not config.members:
        return None
    from components.operations.budget import failover_budget, format_budget

    report = failover_budget(config)
    return budget_section(report, format_budget(report))


def _terms(budget: Any) -> list[dict[str, Any]]:
    """Each term; `unknown` (why) when nobody can source its value (`seconds` is then its known part)."""
    return [{"name": t.name, "seconds": round(t.seconds, 2), "how": t.how,
             **({"unknown": t.unknown} if getattr(t, "unknown", "") else {})} for t in budget.terms]


def budget_section(report: Any, text: str) -> Section:
    """The failover budget (components/operations/budget.py FailoverReport: the traffic clock, the capacity
    clock, the RTO per tenant) as a section; also what `hubctl budget --json` prints."""
    from components.operations.budget import fmt_seconds

    capacity, traffic = report.capacity, report.traffic
    rows = [[f"traffic: {t.name}", fmt_seconds(t.seconds), t.how] for t in (traffic.terms if traffic else ())]
    rows += [[f"capacity: {t.name}", fmt_seconds(t.seconds), t.how] for t in capacity.terms]
    footer = [f"capacity clock  {fmt_seconds(capacity.total)} s"]
    if traffic is not None:
        footer.insert(0, f"traffic clock   {fmt_seconds(traffic.total)} s")
    footer += [f"{r.tenant} ({r.placement}, {r.clock})  {fmt_seconds(r.seconds)} s" for r in report.tenants]
    metrics = {"worst case": Metric(round(report.worst.seconds, 2), "s", "lower")}
    metrics["capacity clock"] = Metric(round(capacity.total, 2), "s", "lower")
    if traffic is not None:
        metrics["traffic clock"] = Metric(round(traffic.total, 2), "s", "lower")
    metrics |= {f"{r.tenant} RTO": Metric(round(r.seconds, 2), "s", "lower") for r in report.tenants}
    metrics |= {f"capacity: {t.name}": Metric(round(t.seconds, 2), "s", "lower") for t in capacity.terms}
    if traffic is not None:
        metrics |= {f"traffic: {t.name}": Metric(round(t.seconds, 2), "s", "lower") for t in traffic.terms}
    data = {
        "worstSeconds": round(report.worst.seconds, 2), "rtoSeconds": report.rto_seconds,
        "capacity": {"syncMode": capacity.sync_mode, "members": list(capacity.members), "note": capacity.note,
                     "totalSeconds": round(capacity.total, 2), "terms": _terms(capacity)},
        "traffic": None if traffic is None else {"mode": traffic.mode, "totalSeconds": round(traffic.total, 2),
                                                 "authoritativeSeconds": round(traffic.authoritative, 2),
                                                 "restoreSeconds": round(traffic.restore_seconds, 2),
                                                 "lowerBound": bool(traffic.unknown),
                                                 "terms": _terms(traffic)},
        "tenants": [{"tenant": r.tenant, "placement": r.placement, "clock": r.clock,
                     "seconds": round(r.seconds, 2)} for r in report.tenants],
        "footnotes": list(report.footnotes),
    }
    tables, notes = budget_tables(report)
    return Section("failoverBudget", "failover budget", Table(["term", "seconds", "how"], rows, footer=footer),
                   text="failover budget\n" + text, metrics=metrics, data=data, tables=tables, notes=notes)


def budget_tables(report: Any) -> tuple[list[Table], list[str]]:
    """The failover budget as a terminal shows it: the same clocks, subtotals, restore line, tenant table and
    footnotes as its plain text (components/operations/budget.py format_budget), as rich tables."""
    from components.operations import budget as b

    tables: list[Table] = []
    notes: list[str] = []
    traffic = report.traffic
    if traffic is not None:
        rows = []
        ends: list[int] = []
        for t in traffic.terms:
            if t.name == b.TTL_TERM:
                if rows:
                    ends.append(len(rows) - 1)
                rows.append([b.AUTHORITATIVE, b.total_seconds(traffic, traffic.authoritative), ""])
                ends.append(len(rows) - 1)
            rows.append([t.name, b.term_seconds(t), t.how])
        tables.append(Table(["term", "seconds", "how"], rows, title=b.traffic_title(traffic), ends_section=ends,
                            styles=[None] * len(rows),
                            footer=[f"{b.TRAFFIC_TOTAL}  {b.total_seconds(traffic)} s",
                                    f"restore (not an RTO term): {traffic.restore_how}",
                                    *(f"unknown: {t.name}: {t.unknown}" for t in traffic.terms if t.unknown)]))
        tables.append(Table(["client", "adds", "source"], [list(r) for r in b.CLIENT_RESIDUALS],
                            title=b.CLIENTS_TITLE))
    else:
        notes.append(f"{b.TRAFFIC_TITLE}: not modelled (no dns section)")
    capacity = report.capacity
    tables.append(Table(["term", "seconds", "how"], [[t.name, b.fmt_seconds(t.seconds), t.how] for t in capacity.terms],
                        title=b.format_clock(capacity).splitlines()[0],
                        footer=[f"total  {b.fmt_seconds(capacity.total)} s"]))
    tables.append(Table(["tenant", "placement", "clock", "seconds"],
                        [[r.tenant, r.placement, r.clock, b.total_seconds(r.budget, r.seconds)]
                         for r in report.tenants],
                        title=b.format_tenants(report).splitlines()[0]))
    notes += [f"* {f}" for f in report.footnotes]
    return tables, notes


def whatif_section(plan: Plan, config: FleetConfig) -> Section | None:
    """The what-if table (components/fleet/whatif.py): each tenant's effect of losing one member or region."""
    if not (config.members and config.tenants):
        return None
    from components.fleet.whatif import fleet_whatif, format_whatif

    report = fleet_whatif(config)
    rows = [[t.tenant, t.effect] for t in report.tenants]
    scenarios = [r for t in report.tenants for r in (*t.initial, *t.rows)]
    tables = [Table(["tenant", "what a member loss does"], rows),
              Table(["tenant", "workload", "scenario", "outcome", "members", "group", "note"],
                    [[r.tenant, r.workload, r.scenario, r.outcome, ", ".join(r.clusters) or "-", r.group, r.note]
                     for r in scenarios],
                    styles=[OUTCOME_STYLES.get(r.outcome) for r in scenarios])]
    return Section("whatif", "what-if: one member or region lost", Table(["tenant", "effect"], rows),
                   text="what-if: one member or region lost\n" + format_whatif(report),
                   metrics={f"{t.tenant} effect": Metric(t.effect) for t in report.tenants}, data=report.as_dict(),
                   tables=tables, notes=["limits of this model:", *(f"- {line}" for line in report.limits)])


OUTCOME_STYLES = {"DOWN": "bold red", "DELETED": "bold red", "UNPLACEABLE": "bold red", "DEGRADED": "yellow",
                  "WAITS": "yellow"}
"""How a terminal marks the what-if outcomes that lose service (the plain text has the same word, unstyled)."""


CERT_TYPES = ("tls:index/locallySignedCert:LocallySignedCert", "tls:index/selfSignedCert:SelfSignedCert")


def certificate_resources(plan: Plan) -> list[dict[str, Any]]:
    """The plan's certificate resources in plan.json's shape, with the provider outputs the mocks computed (what
    components/kube/cert_schedule.certificate_expiry reads)."""
    return [{"type": r.type, "name": r.name, "urn": r.urn, "inputs": unwrap(r.inputs), "outputs": unwrap(r.outputs)}
            for r in plan.records if r.type in CERT_TYPES]


def certificates(plan: Plan) -> list[dict[str, Any]]:
    """Every certificate the plan mints (tls provider), parsed from its (public) certPem output, with when
    `pulumi up` renews it (cert_schedule: `notAfter - early_renewal_hours`)."""
    from hubctl.mocks import plan_epoch

    schedule = {r.name: r for r in cert_schedule.certificate_expiry(certificate_resources(plan), plan_epoch())}
    found = []
    for record in plan.records:
        if record.type not in CERT_TYPES:
            continue
        pem = unwrap(record.outputs or {}).get("certPem")
        info = certs.parse_one(pem) if isinstance(pem, str) else None
        if info is None:
            continue
        inputs = unwrap(record.inputs) or {}
        row = schedule[record.name]
        found.append({"resource": record.name, **info.as_dict(),
                      "earlyRenewalHours": int(inputs.get("earlyRenewalHours") or 0),
                      "kind": row.kind, "renewFrom": row.as_json()["renew_from"]})
    return sorted(found, key=lambda c: c["resource"])


def certificates_section(plan: Plan, config: FleetConfig) -> Section | None:
    """Per CA and leaf: when it expires and from when `pulumi up` re-issues it, soonest renewal first (the
    offline plan issues every certificate today; a live stack renews from its own dates)."""
    found = certificates(plan)
    if not found:
        return None
    shortest = min(found, key=lambda c: (c["validityHours"], c["resource"]))
    by_renewal = sorted(found, key=lambda c: (c["renewFrom"], c["resource"]))
    rows = [[c["resource"], c["kind"], c["notAfter"][:10], c["renewFrom"][:10], str(c["validityHours"])]
            for c in by_renewal]
    table = Table(["certificate", "kind", "expires", "pulumi up renews from", "validity h"], rows,
                  footer=[f"{len(found)} certificates; shortest validity {shortest['validityHours']} h "
                          f"({shortest['resource']}); first renewal {by_renewal[0]['renewFrom'][:10]} "
                          f"({by_renewal[0]['resource']}); subjects and fingerprints in --json"])
    metrics = {"count": Metric(len(found)),
               "shortest validity": Metric(shortest["validityHours"], "h", "higher")}
    return Section("certificates", "certificates", table, metrics=metrics, data=found)


def admin_paths_section(plan: Plan, config: FleetConfig) -> Section | None:
    """Who reaches which admin endpoint, and through what: the servers' public addresses behind the Cloud Firewall,
    plus the API load balancer's public interface when (and only when) the stack opted in by name
    (`hub.loadBalancer.worldReachable`), then marked WORLD-REACHABLE."""
    hub = config.hub
    if hub is None:
        return None
    from components.hetzner.hub_cluster import K3S_API_PORT, KARMADA_API_NODE_PORT, KARMADA_API_PORT, karmada_api_cidrs

    firewall = "servers' public IPs (Cloud Firewall)"
    rows = [["ssh", "22", firewall, ", ".join(str(c) for c in hub.firewall.ssh_cidrs)],
            ["k3s", str(K3S_API_PORT), firewall, ", ".join(str(c) for c in hub.firewall.api_cidrs)],
            ["karmada-apiserver", str(KARMADA_API_NODE_PORT), firewall, ", ".join(karmada_api_cidrs(hub))]]
    world = []
    footer = []
    if hub.load_balancer.world_reachable:
        lb = "API load balancer (public interface)"
        world = [["k3s", str(K3S_API_PORT), lb, "WORLD-REACHABLE"],
                 ["karmada-apiserver", str(KARMADA_API_PORT), lb, "WORLD-REACHABLE"]]
        footer = ["WORLD-REACHABLE: hub.loadBalancer.worldReachable is true; a Hetzner load balancer has no firewall, "
                  "so these ports answer the whole internet (authentication still applies)"]
    table = Table(["endpoint", "port", "path", "from"], rows + world, footer=footer)
    text = "admin endpoints\n" + table.plain()
    return Section("adminPaths", "admin endpoints", table, text=text,
                   metrics={"world-reachable ports": Metric(len(world), better="lower")},
                   data={"firewalled": rows, "worldReachable": world})


SECTIONS: list[SectionBuilder] = [
    components_section,
    outputs_section,
    admin_paths_section,
    control_plane_section,
    version_skew_section,
    failover_budget_section,
    whatif_section,
    certificates_section,
]
"""In print order. A new room appends its builder here (a what-if table, budget clocks, ...)."""

TERMINAL_SECTIONS = ("components", "outputs", "adminPaths", "controlPlane", "versionSkew", "failoverBudget", "whatif",
                     "certificates")
"""What the plan prints (the certificates' subjects, SANs and fingerprints only in `--json` and report.json)."""


def build(plan: Plan, config: FleetConfig) -> list[Section]:
    return [s for s in (builder(plan, config) for builder in SECTIONS) if s is not None]


def document(plan: Plan, sections: list[Section], files: list[str]) -> dict[str, Any]:
    """report.json / `hubctl plan --json`: the stack, the resource count, the files and every section."""
    from hubctl.mocks import plan_epoch

    return {"reportVersion": REPORT_VERSION, "project": plan.project, "stack": plan.stack,
            "planEpoch": plan_epoch().date().isoformat(), "resources": len(plan.records), "files": sorted(files),
            "sections": {s.key: s.as_dict() for s in sections}}


def render_tables(out: Output, section: Section, title: bool = True) -> None:
    """A section's terminal view: its title, each of its tables, then its notes."""
    if title:
        out.text(section.title)
        out.text("")
    for i, table in enumerate(section.tables):
        if i:
            out.text("")
        out.table(table)
    if section.notes:
        out.text("")
        for note in section.notes:
            out.text(note)


def render(out: Output, header: str, sections: list[Section], files: list[str],
           keys: tuple[str, ...] | None = TERMINAL_SECTIONS) -> None:
    out.text(header)
    for section in sections:
        if keys is not None and section.key not in keys:
            continue
        out.text("")
        if section.text is not None and not out.rich:
            out.text(section.text)
        elif out.rich and section.tables:
            render_tables(out, section)
        elif section.table is not None:
            titled = out.rich or section.key in ("controlPlane", "certificates")
            table = section.table
            out.table(Table(table.headers, table.rows, title=section.title if titled else "", footer=table.footer))
    listed = sorted(f for f in files if f.startswith(("manifests/", "cloud-init/")))
    out.text("")
    out.text("files: plan.json, report.json, " + ", ".join(listed))
