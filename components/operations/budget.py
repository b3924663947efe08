"""The failover budget: worst-case seconds from a member's death to its workloads serving from a survivor.

This is the room where fleet-capi-failover.md §2.6 becomes arithmetic. Each term says which values it
used, so an operator can see why the total is what it is and which knob moves it. `failover_budget`
reads a `FleetConfig`; `compute_budget` takes plain numbers so the arithmetic can be tested (and run by
`hubctl budget`) without a stack or Pulumi.

What is deliberately *not* a term: the regional Hetzner LB health check. When a member dies its
region's load balancer stays up (only the targets behind it go bad), so the LB cannot send clients
elsewhere; what moves traffic between regions is external-dns dropping the dead region from DNS and
clients' caches expiring. `lb_detection_seconds` is still here because the per-region failover drill
measures it separately.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:  # config imports pulumi; the budget must stay importable without it
    from components.config import FleetConfig

SyncMode = Literal["Push", "Pull"]
SYNC_MODES: tuple[SyncMode, ...] = ("Push", "Pull")

PROBE_TIMEOUT_SECONDS = 32.0
"""Member REST client timeout, hard-coded upstream (pkg/util/membercluster_client.go): one probe of a
black-holed member can hang this long. Not a flag, so it is a constant here."""

SCHEDULING_SECONDS = 0.03
"""Scheduling P99 (32 ms) in Karmada's 2022 100-cluster test report."""

DISPATCH_SECONDS: dict[SyncMode, float] = {"Push": 1.3, "Pull": 1.0}
"""Resource-distribution P99 in the same report, rounded up: Push 1298 ms, Pull 989 ms (SLO 2 s)."""
DISPATCH_P99_MS: dict[SyncMode, int] = {"Push": 1298, "Pull": 989}

EVICTION_WORKERS = 3
"""Taint-manager workers per queue upstream; only used for the optimistic bound in the explanation."""


@dataclass(frozen=True)
class Term:
    """One addend of the budget. `how` shows the formula with the values used, so a reviewer can redo it."""

    name: str
    seconds: float
    how: str
    lower: tuple[str, ...] = ()
    """Config keys that shrink this term when lowered (for the RTO error's advice)."""
    higher: tuple[str, ...] = ()
    """Config keys that shrink this term when raised."""


@dataclass(frozen=True)
class Budget:
    """Ordered terms of the worst case, and the member sync mode that produced it."""

    terms: tuple[Term, ...]
    sync_mode: SyncMode
    """The sync mode whose members give the largest total (the worst case is per mode, not mixed)."""
    members: tuple[str, ...] = ()
    """Members with that sync mode, when known (empty when computed from plain numbers)."""
    note: str = ""
    footnotes: tuple[str, ...] = ()
    """What the total does not include, said after it (tenants without automatic failover, the descheduler)."""

    @property
    def total(self) -> float:
        return sum(t.seconds for t in self.terms)

    def term(self, name: str) -> Term:
        for t in self.terms:
            if t.name == name:
                return t
        raise KeyError(name)


class HealthCheck(Protocol):
    """What `lb_detection_seconds` needs of `config.HealthCheckConfig` (kept structural to avoid pulumi)."""

    @property
    def interval(self) -> int: ...
    @property
    def timeout(self) -> int: ...
    @property
    def retries(self) -> int: ...


# ------------------------------------------------------------------------------------------ pieces


def fmt_seconds(x: float) -> str:
    """`84.0` -> `84`, `85.33000001` -> `85.33`: whole seconds stay whole, the rest keep two decimals."""
    r = round(x, 2)
    if r == int(r):
        return str(int(r))
    return f"{r:.2f}".rstrip("0").rstrip(".")


def push_detection_seconds(
    update_frequency: float, failure_threshold: float, probe_seconds: float = PROBE_TIMEOUT_SECONDS
) -> float:
    """Worst time until `Ready=False` when the status probe fails every cycle.

    A cycle lasts U plus however long the probe hangs (P). The death can land just after a successful
    probe, costing one cycle, and the failure must then persist F seconds, which is only noticed at
    whole cycles: (U+P) + ceil(F/(U+P))*(U+P).
    """
    cycle = update_frequency + probe_seconds
    return cycle + math.ceil(failure_threshold / cycle) * cycle


def pull_lease_detection_seconds(monitor_grace_period: float, monitor_period: float) -> float:
    """Upper bound until `Ready=Unknown` when a Pull member dies whole and its agent stops renewing: G + 2M."""
    return monitor_grace_period + 2 * monitor_period


def eviction_queue_seconds(bindings: int, eviction_rate: float, workers: int = 1) -> float:
    """When the last of N bindings on the dead cluster is evicted: floor((N-1)/W) / R_e.

    Each worker sleeps 1/R_e after every item. The docs' example (12 workloads take about 24 s) implies
    W = 1, so the budget uses W = 1; upstream runs 3 workers, which is the optimistic bound.
    """
    if bindings < 1:
        return 0.0
    return math.floor((bindings - 1) / workers) / eviction_rate


def max_toleration_seconds(tolerations: Iterable[float | None]) -> float:
    """The longest tenant toleration of the failover taint; unset means evict at once (0)."""
    return max((t or 0 for t in tolerations), default=0)


def lb_detection_seconds(health_check: HealthCheck) -> float:
    """How long a Hetzner LB takes to mark a target down: interval*(retries+1) + timeout.

    Not a budget term (see the module docstring); the per-region drill names its expected duration.
    """
    return health_check.interval * (health_check.retries + 1) + health_check.timeout


def _detection_term(
    mode: SyncMode, update_frequency: float, failure_threshold: float, monitor_period: float,
    monitor_grace_period: float,
) -> Term:
    u, f, g, m = update_frequency, failure_threshold, monitor_grace_period, monitor_period
    f_u, f_f, f_g, f_m = (fmt_seconds(x) for x in (u, f, g, m))
    if mode == "Push":
        p = PROBE_TIMEOUT_SECONDS
        worst = push_detection_seconds(u, f, p)
        refused = push_detection_seconds(u, f, 0)
        cycle = fmt_seconds(u + p)
        how = (
            f"Push, black-holed probe: (U+P) + ceil(F/(U+P))*(U+P) = ({f_u}+{fmt_seconds(p)}) + "
            f"ceil({f_f}/{cycle})*{cycle} = {fmt_seconds(worst)}; P = {fmt_seconds(p)} s client timeout is "
            f"hard-coded upstream (refused connection, P = 0: {f_u} + {math.ceil(f / u)}*{f_u} = "
            f"{fmt_seconds(refused)})"
        )
        return Term("detection", worst, how, lower=("clusterStatusUpdateFrequency",))
    lease = pull_lease_detection_seconds(g, m)
    apiserver = push_detection_seconds(u, f, 0)
    worst = max(lease, apiserver)
    how = (
        f"Pull, worst of whole member dead: G + 2M = {f_g} + 2*{f_m} = {fmt_seconds(lease)} and member "
        f"apiserver dead, agent alive (local probe, P = 0): U + ceil(F/U)*U = {f_u} + {math.ceil(f / u)}*{f_u} = "
        f"{fmt_seconds(apiserver)}"
    )
    knobs = ("clusterMonitorGracePeriod", "clusterMonitorPeriod") if lease >= apiserver else (
        "clusterStatusUpdateFrequency",)
    return Term("detection", worst, how, lower=knobs)


def _dispatch_term(fleet_modes: tuple[SyncMode, ...]) -> Term:
    """Dispatch goes to a survivor, whose mode may differ from the dead member's: take the slowest in the fleet."""
    slowest = max(fleet_modes, key=lambda m: DISPATCH_SECONDS[m])
    return Term("dispatch", DISPATCH_SECONDS[slowest], f"to a survivor; slowest mode in the fleet is {slowest}: "
                f"resource-distribution P99 {DISPATCH_P99_MS[slowest]} ms (2022 test report)")


def _mode_terms(
    mode: SyncMode, fleet_modes: tuple[SyncMode, ...], *, status_update_frequency: float, failure_threshold: float,
    monitor_period: float,
    monitor_grace_period: float, resource_eviction_rate: float, bindings_per_cluster: int,
    toleration_seconds: Sequence[float | None], pod_start_seconds: float, dns_interval_seconds: float | None,
    dns_ttl_seconds: float | None, status_refresh_seconds: float | None,
) -> tuple[Term, ...]:
    tol = max_toleration_seconds(toleration_seconds)
    shown = ", ".join("unset" if t is None else fmt_seconds(t) for t in toleration_seconds) or "no tenants"
    n, rate = bindings_per_cluster, resource_eviction_rate
    queue = eviction_queue_seconds(n, rate)
    fast = eviction_queue_seconds(n, rate, EVICTION_WORKERS)
    terms = [
        _detection_term(mode, status_update_frequency, failure_threshold, monitor_period, monitor_grace_period),
        Term("taint", 0.0, "≈ 0: NoSchedule (cluster-controller) and NoExecute (ClusterTaintPolicy controller) "
             "are both watch-driven"),
        Term("toleration", float(tol), f"largest tenant placement.tolerationSeconds: max({shown}) = "
             f"{fmt_seconds(tol)} (unset evicts at once)", lower=("tenants[].placement.tolerationSeconds",)),
        Term("eviction queue", queue, f"last of N = {n} bindings, W = 1 as the docs imply: (N-1)/R_e = "
             f"({n}-1)/{fmt_seconds(rate)} = {fmt_seconds(queue)} (with upstream's {EVICTION_WORKERS} workers "
             f"floor((N-1)/{EVICTION_WORKERS})/R_e = {fmt_seconds(fast)})",
             lower=("bindingsPerCluster",), higher=("resourceEvictionRate",)),
        Term("scheduling", SCHEDULING_SECONDS, "scheduling P99 32 ms (Karmada 2022 100-cluster test)"),
        _dispatch_term(fleet_modes),
        Term("pod start", float(pod_start_seconds), "failover.podStartSeconds (image pull + readiness on the "
             "survivor)", lower=("podStartSeconds",)),
    ]
    dns_values = (dns_interval_seconds, dns_ttl_seconds, status_refresh_seconds)
    if len({v is None for v in dns_values}) != 1:
        raise ValueError("dns_interval_seconds, dns_ttl_seconds and status_refresh_seconds are set together or not "
                         "at all")
    if dns_interval_seconds is not None and dns_ttl_seconds is not None and status_refresh_seconds is not None:
        terms += [
            Term("status refresh", float(status_refresh_seconds), f"one dns.refreshSeconds = "
                 f"{fmt_seconds(status_refresh_seconds)}: the hub's status refresher makes Karmada drop the dead "
                 "member's address from the aggregated status (docs/traffic-failover.md §2.1)",
                 lower=("dns.refreshSeconds",)),
            Term("external-dns sync", float(dns_interval_seconds), f"one full dns.intervalSeconds = "
                 f"{fmt_seconds(dns_interval_seconds)} (events usually trigger sooner)",
                 lower=("dns.intervalSeconds",)),
            Term("DNS TTL", float(dns_ttl_seconds), f"dns.ttl = {fmt_seconds(dns_ttl_seconds)}: clients may "
                 "cache the old answer this long", lower=("dns.ttl",)),
        ]
    return tuple(terms)


# ------------------------------------------------------------------------------------------ budget


def compute_budget(
    *,
    sync_modes: Iterable[SyncMode],
    status_update_frequency: float,
    failure_threshold: float,
    monitor_period: float,
    monitor_grace_period: float,
    resource_eviction_rate: float,
    bindings_per_cluster: int,
    toleration_seconds: Sequence[float | None] = (),
    pod_start_seconds: float = 0,
    dns_interval_seconds: float | None = None,
    dns_ttl_seconds: float | None = None,
    status_refresh_seconds: float | None = None,
) -> Budget:
    """The worst-case budget over the given member sync modes, from plain numbers.

    `sync_modes` are the modes of the fleet's members. The dead member's mode sets detection, so each
    mode present is tried as the dead one and the larger total wins (Push on a tie). Dispatch goes to a
    survivor, so it takes the slowest mode present whichever member died.
    """
    modes = tuple(dict.fromkeys(sync_modes))
    if not modes:
        raise ValueError("sync_modes must name at least one of Push, Pull")
    if resource_eviction_rate <= 0:
        raise ValueError("resource_eviction_rate must be > 0")
    best: Budget | None = None
    for mode in SYNC_MODES:
        if mode not in modes:
            continue
        terms = _mode_terms(
            mode, modes, status_update_frequency=status_update_frequency, failure_threshold=failure_threshold,
            monitor_period=monitor_period, monitor_grace_period=monitor_grace_period,
            resource_eviction_rate=resource_eviction_rate, bindings_per_cluster=bindings_per_cluster,
            toleration_seconds=toleration_seconds, pod_start_seconds=pod_start_seconds,
            dns_interval_seconds=dns_interval_seconds, dns_ttl_seconds=dns_ttl_seconds,
            status_refresh_seconds=status_refresh_seconds,
        )
        candidate = Budget(terms=terms, sync_mode=mode)
        if best is None or candidate.total > best.total:
            best = candidate
    if best is None:
        raise ValueError(f"unknown sync modes {modes}; expected Push or Pull")
    return best


def failover_budget(config: FleetConfig) -> Budget:
    """The stack's worst-case budget: over its members' sync modes, its tenants' tolerations and its DNS."""
    fo = config.failover
    modes = [m.sync_mode for m in config.members]
    note = "" if modes else "no members declared: assuming the worse of Push and Pull"
    dns = config.dns
    budget = compute_budget(
        sync_modes=modes or SYNC_MODES,
        status_update_frequency=fo.cluster_status_update_frequency,
        failure_threshold=fo.cluster_failure_threshold,
        monitor_period=fo.cluster_monitor_period,
        monitor_grace_period=fo.cluster_monitor_grace_period,
        resource_eviction_rate=fo.resource_eviction_rate,
        bindings_per_cluster=fo.bindings_per_cluster,
        # a tenant on failover: manual is never evicted, so its (infinite) toleration is no term of the budget
        toleration_seconds=[t.placement.toleration_seconds for t in config.tenants if t.fails_over],
        pod_start_seconds=fo.pod_start_seconds,
        dns_interval_seconds=None if dns is None else dns.interval_seconds,
        dns_ttl_seconds=None if dns is None else dns.ttl,
        status_refresh_seconds=None if dns is None else dns.refresh_seconds,
    )
    members = tuple(m.name for m in config.members if m.sync_mode == budget.sync_mode)
    return replace(budget, members=members, note=note, footnotes=_footnotes(config))


def _footnotes(config: FleetConfig) -> tuple[str, ...]:
    out: list[str] = []
    manual = [t.name for t in config.tenants if not t.fails_over]
    if manual:
        out.append(f"not counted: {', '.join(manual)} (failover: manual; a member loss leaves them waiting for it)")
    if config.karmada.descheduler_enabled:
        d = config.karmada.descheduler
        worst = d.unschedulable_threshold_seconds + d.interval_seconds
        out.append(f"not a term: karmada-descheduler gives replicas stuck Pending on a full member back to the "
                   f"scheduler after at most unschedulableThreshold + interval = {d.unschedulable_threshold_seconds} + "
                   f"{d.interval_seconds} = {worst} s (Divided dynamic/aggregated Deployments, and only when every "
                   "member they are short on runs an estimator); it never moves replicas back after a member "
                   "recovers")
    return tuple(out)


def check_rto(budget: Budget, rto_seconds: float | None) -> None:
    """Refuse a plan whose worst case exceeds the declared RTO, naming the two biggest terms and their knobs."""
    if rto_seconds is None:
        return
    total = round(budget.total, 6)
    if total <= rto_seconds:
        return
    ranked = sorted(range(len(budget.terms)), key=lambda i: (-budget.terms[i].seconds, i))[:2]
    largest = [budget.terms[i] for i in sorted(ranked)]
    lower = list(dict.fromkeys(k for t in largest for k in t.lower))
    higher = list(dict.fromkeys(k for t in largest for k in t.higher))
    advice = " or ".join(
        part for part in (
            f"lower {'/'.join(lower)}" if lower else "",
            f"raise {'/'.join(higher)}" if higher else "",
        ) if part
    ) or "raise rtoSeconds"
    terms = ", ".join(f"{t.name} {fmt_seconds(t.seconds)} s" for t in largest)
    raise ValueError(
        f"failover.rtoSeconds: worst case {fmt_seconds(budget.total)} s exceeds rtoSeconds "
        f"{fmt_seconds(rto_seconds)} s (largest terms: {terms}); {advice}"
    )


# ------------------------------------------------------------------------------------------ output


def _title(budget: Budget) -> str:
    who = f" ({', '.join(budget.members)})" if budget.members else ""
    title = f"Failover budget, worst case: {budget.sync_mode} member{who}"
    return f"{title}; {budget.note}" if budget.note else title


def format_budget(budget: Budget) -> str:
    """A fixed-width table for terminals and plan logs: term, seconds, how; then the total."""
    name_w = max(len("total"), *(len(t.name) for t in budget.terms))
    secs = [fmt_seconds(t.seconds) for t in budget.terms]
    total = fmt_seconds(budget.total)
    sec_w = max(len("seconds"), len(total), *(len(s) for s in secs))
    lines = [_title(budget), f"{'term':<{name_w}}  {'seconds':>{sec_w}}  how"]
    lines.append(f"{'-' * name_w}  {'-' * sec_w}  ---")
    lines += [f"{t.name:<{name_w}}  {s:>{sec_w}}  {t.how}" for t, s in zip(budget.terms, secs, strict=True)]
    lines.append(f"{'-' * name_w}  {'-' * sec_w}")
    lines.append(f"{'total':<{name_w}}  {total:>{sec_w}}")
    lines += [f"* {f}" for f in budget.footnotes]
    return "\n".join(lines)


def _md_cell(text: str) -> str:
    """A `|` inside a cell would end it early."""
    return text.replace("|", "\\|")


def budget_markdown(budget: Budget) -> str:
    """The same table as Markdown, for a pull-request comment."""
    lines = [f"**{_title(budget)}**", "", "| term | seconds | how |", "|---|---:|---|"]
    lines += [f"| {t.name} | {fmt_seconds(t.seconds)} | {_md_cell(t.how)} |" for t in budget.terms]
    lines.append(f"| **total** | **{fmt_seconds(budget.total)}** | |")
    if budget.footnotes:
        lines += ["", *(f"- {_md_cell(f)}" for f in budget.footnotes)]
    return "\n".join(lines)
