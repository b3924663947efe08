"""The failover budget: two clocks from a member's death, term by term.

This is the room where fleet-capi-failover.md §2.6 and docs/traffic-failover.md §4 become arithmetic.

- The **traffic clock**: until clients stop being sent to the dead region. The hub's health-checked DNS
  failover controller (agents/traffic_failover.py) probes every region's load balancer from each hub server
  and withdraws a region once a majority of vantage points saw it fail K rounds in a row; the record is written
  (dns.mode hetzner: by external-dns into Hetzner DNS; self-hosted: by the controller itself into the fleet's
  own nameservers); clients' caches expire. It is independent of Karmada's detection. Two totals: the
  *authoritative* one (the zone's servers answer without the dead region) and the one that counts the TTL
  (every client cache that honours the TTL has expired). What clients add beyond that, whatever the DNS
  design, is a separate table (`CLIENT_RESIDUALS`).

Every term names its source: a rendered value, an upstream file, a Kubernetes SLO, or a measurement (`[lab]`:
shared/reference/self-hosted-dns.md §5, Debian's packages in network namespaces, re-measured by
tests/integration/test_dns_lab.py). A term nobody can source is shown as unknown (its known part, if any, is
counted, and totals say "at least").
- The **capacity clock**: Karmada's path (detection, taints, eviction, scheduling, dispatch, pod start), until
  the survivors run the replicas the dead member ran.

Which clock a tenant waits for depends on its placement: a Duplicated tenant already runs full copies on the
survivors (traffic clock only); a Divided tenant needs both (the larger of the two). `rtoSeconds` is checked
per tenant against that clock. `failover_budget` reads a `FleetConfig`; `compute_budget` and
`traffic_budget` take plain numbers so the arithmetic can be tested (and run by `hubctl budget`) without a
stack or Pulumi.

What is deliberately *not* a term: the regional Hetzner LB health check. When a member dies its region's load
balancer stays up (only the targets behind it go bad), so the LB cannot send clients elsewhere.
`lb_detection_seconds` is still here because the drill records it and the failover controller's probe
attempts are sized against it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

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

EXTERNAL_DNS_EVENT_FLOOR_SECONDS = 5.0
"""external-dns v0.22.0 `Controller.ScheduleRunOnce` (controller/controller.go): an event schedules the next run
at `latest(lastRunAt + MinEventSyncInterval, earliest(now + 5s, nextRunAt))`; the 5 s is a literal."""
EXTERNAL_DNS_TICK_SECONDS = 1.0
"""`Controller.Run` checks `ShouldRunOnce` on a one-second ticker."""
EXTERNAL_DNS_MIN_EVENT_SYNC_SECONDS = 5
"""The `--min-event-sync-interval` the program renders (upstream's default, types.go); lower does not help."""
CONTROLLER_DECISION_SECONDS = 1.0
"""The failover controller's leader reads the vantage points' observations this often (rendered as its
`--decision-period`)."""
API_WRITE_SECONDS = 1.0
"""One write to the hub's Kubernetes API (a vantage point's observation Lease, the leader's DNSEndpoint): the
upstream SLO for mutating API calls, 99th percentile <= 1 s (kubernetes/community
sig-scalability/slos/api_call_latency.md); the hub's API serves a handful of clients, far below the SLO's scale."""
ZONE_UPDATE_SECONDS = 1.0
"""Mode self-hosted: one RFC 2136 UPDATE (TCP, TSIG) to every hub nameserver at once until each answers it.
[lab] 0.04-0.09 s per UPDATE answered by Knot (shared/reference/self-hosted-dns.md §5 K1); the hub servers share a
private network in one network zone; rounded up to 1 s. tests/integration/test_dns_lab.py measures it."""
SECONDARY_TRANSFER_SECONDS = 1.0
"""Mode self-hosted with secondaries: NOTIFY, then IXFR from any primary. [lab] 0.30-0.99 s (self-hosted-dns.md §5
K2); the lab test re-measures it."""
CLIENT_RESIDUALS: tuple[tuple[str, str, str], ...] = (
    ("Chromium (Chrome, Edge)", "keeps a host-cache entry >= 60 s whatever the TTL: up to 60 s instead of dns.ttl",
     "Chromium net/dns host_resolver_manager_job.cc kCacheEntryTTLSeconds = kMinimumTTLSeconds = 60; "
     "textslashplain.com 2022-03-31 'Chromium's DNS cache'"),
    ("Java (InetAddress, no security manager)", "caches 30 s whatever the TTL, unless networkaddress.cache.ttl is "
     "set lower", "JDK conf/security/java.security, networkaddress.cache.ttl (default: 30 s)"),
    ("any client, black-holed address", "a connect to the dead region's address waits for the OS SYN timeout "
     "(about 130 s on Linux, tcp_syn_retries = 6) before it tries the next address, unless the client sets a "
     "connect timeout", "[lab] curl 7.88 and CPython with defaults: 134-135 s; refused connections fall over in "
     "<= 0.2 s (self-hosted-dns.md §3.3)"),
    ("any client, open connection", "a keep-alive connection to a region's load balancer stays until it fails; "
     "a dead cluster behind a live Hetzner LB may accept and close (empty reply)", "hcloud-cloud-controller-manager "
     "issues 173/185/270 (reported, not verified here)"),
)
"""What clients add that no DNS design removes: listed beside the traffic clock, never a term of it."""


@dataclass(frozen=True)
class Term:
    """One addend of the budget. `how` shows the formula with the values used, so a reviewer can redo it."""

    name: str
    seconds: float
    how: str
    unknown: str = ""
    """Why this term's value is not known (`seconds` is then its known part only; totals become lower bounds)."""
    lower: tuple[str, ...] = ()
    """Config keys that shrink this term when lowered (for the RTO error's advice)."""
    higher: tuple[str, ...] = ()
    """Config keys that shrink this term when raised."""


class _Clock:
    """A clock's ordered terms: their sum and each by name (Budget and TrafficBudget)."""

    terms: tuple[Term, ...]

    @property
    def total(self) -> float:
        """Every term (for the traffic clock: until every client cache has expired, the traffic RTO); a lower
        bound when a term is unknown."""
        return sum(t.seconds for t in self.terms)

    @property
    def unknown(self) -> tuple[str, ...]:
        """Names of the terms whose value nobody can source."""
        return tuple(t.name for t in self.terms if t.unknown)

    def term(self, name: str) -> Term:
        for t in self.terms:
            if t.name == name:
                return t
        raise KeyError(name)


@dataclass(frozen=True)
class Budget(_Clock):
    """The capacity clock: ordered terms of the worst case, and the member sync mode that produced it."""

    terms: tuple[Term, ...]
    sync_mode: SyncMode
    """The sync mode whose members give the largest total (the worst case is per mode, not mixed)."""
    members: tuple[str, ...] = ()
    """Members with that sync mode, when known (empty when computed from plain numbers)."""
    note: str = ""


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
    toleration_seconds: Sequence[float | None], pod_start_seconds: float,
) -> tuple[Term, ...]:
    tol = max_toleration_seconds(toleration_seconds)
    shown = ", ".join("unset" if t is None else fmt_seconds(t) for t in toleration_seconds) or "no tenants"
    n, rate = bindings_per_cluster, resource_eviction_rate
    queue = eviction_queue_seconds(n, rate)
    fast = eviction_queue_seconds(n, rate, EVICTION_WORKERS)
    return (
        _detection_term(mode, status_update_frequency, failure_threshold, monitor_period, monitor_grace_period),
        Term("taint", 0.0, "≈ 0: NoSchedule (cluster-controller) and NoExecute (ClusterTaintPolicy controller) "
             "are both watch-driven"),
        Term("toleration", float(tol), f"largest placement.tolerationSeconds of the tenants on this clock: "
             f"max({shown}) = {fmt_seconds(tol)} (unset evicts at once)",
             lower=("tenants[].placement.tolerationSeconds",)),
        Term("eviction queue", queue, f"last of N = {n} bindings, W = 1 as the docs imply: (N-1)/R_e = "
             f"({n}-1)/{fmt_seconds(rate)} = {fmt_seconds(queue)} (with upstream's {EVICTION_WORKERS} workers "
             f"floor((N-1)/{EVICTION_WORKERS})/R_e = {fmt_seconds(fast)})",
             lower=("bindingsPerCluster",), higher=("resourceEvictionRate",)),
        Term("scheduling", SCHEDULING_SECONDS, "scheduling P99 32 ms (Karmada 2022 100-cluster test)"),
        _dispatch_term(fleet_modes),
        Term("pod start", float(pod_start_seconds), "failover.podStartSeconds (image pull + readiness on the "
             "survivor)", lower=("podStartSeconds",)),
    )


# ------------------------------------------------------------------------------------------ capacity


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
) -> Budget:
    """The capacity clock's worst case over the given member sync modes, from plain numbers.

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
        )
        candidate = Budget(terms=terms, sync_mode=mode)
        if best is None or candidate.total > best.total:
            best = candidate
    if best is None:
        raise ValueError(f"unknown sync modes {modes}; expected Push or Pull")
    return best


# ------------------------------------------------------------------------------ one hub server lost

LEASE_RENEW_FRACTION = 0.25
"""karmada-agent's `--cluster-lease-renew-interval-fraction` (default, not rendered): it renews its lease every
clusterLeaseDuration/4 (karmada v1.18.2 pkg/controllers/status/cluster_status_controller.go initLeaseController)."""
CLIENT_READ_IDLE_SECONDS = 30
"""client-go pings an HTTP/2 connection after this long without a frame (env HTTP2_READ_IDLE_TIMEOUT_SECONDS)..."""
CLIENT_PING_TIMEOUT_SECONDS = 15
"""...and closes it when the ping is not answered within this (env HTTP2_PING_TIMEOUT_SECONDS); both are
k8s.io/apimachinery v0.35.3 pkg/util/net/http.go defaults. Until then a request on a connection to a server that
died without a reset hangs: the lease controller's updates carry no timeout of their own
(k8s.io/component-helpers apimachinery/lease/controller.go)."""
CLIENT_DIAL_TIMEOUT_SECONDS = 30.0
"""client-go's dialer timeout (k8s.io/client-go transport/cache.go). Go splits it over a name's addresses in turn
(net dialSerial), so the next connection, when the dead server's address comes first, waits timeout/servers."""
ETCD_KEEPALIVE_SECONDS = 40.0
"""karmada-apiserver's etcd client drops a stream to a dead etcd member after gRPC keepalive 30 s + 10 s
(k8s.io/apiserver v0.35.4 pkg/storage/storagebackend/factory/etcd3.go keepaliveTime, keepaliveTimeout); a write
through it hangs that long at least (the etcd-client Service may still route to the dead member after that)."""


@dataclass(frozen=True)
class HubServerLoss:
    """One hub server dies without a reset: how long a healthy Pull agent's lease renewal can stall, against the
    grace period after which karmada-controller-manager marks its Cluster `Ready=Unknown` (karmada v1.18.2
    pkg/controllers/cluster/cluster_controller.go tryUpdateClusterHealth), and the ClusterTaintPolicy taints it."""

    stall: float
    grace: float
    how: str

    @property
    def margin(self) -> float:
        return self.grace - self.stall

    def footnote(self) -> str:
        f = fmt_seconds
        if self.margin > 0:
            return (f"one hub server lost without a reset: a Pull agent's lease renewal can stall {self.how}, within "
                    f"clusterMonitorGracePeriod {f(self.grace)} s (margin {f(self.margin)} s)")
        need = math.floor(self.stall) + 1
        return (f"one hub server lost without a reset: a Pull agent's lease renewal can stall {self.how}, "
                f"{f(-self.margin)} s over clusterMonitorGracePeriod {f(self.grace)} s: healthy Pull members can turn "
                "Unknown, get the NoExecute taint and lose their failover tenants that set no tolerationSeconds. "
                f"Levers and their cost: clusterMonitorGracePeriod >= {need} s adds {f(need - self.grace)} s to Pull "
                "detection; failover.clientReadIdleSeconds/clientPingTimeoutSeconds shorten the first path (a ping "
                "per silent connection that often); a tenant's tolerationSeconds adds itself to that tenant's "
                "eviction. Estimated, not measured: the defaults stay until a drill on the real binaries decides")


def hub_server_loss(*, grace: float, lease_duration: float, servers: int, read_idle: float | None = None,
                    ping_timeout: float | None = None) -> HubServerLoss:
    """The longest lease-renewal stall of a Pull agent whose hub server (karmada-apiserver, or the etcd member its
    apiserver's stream went to) died without a reset: the worse of the two paths, each from the last renewal."""
    if servers < 1:
        raise ValueError("servers must be >= 1")
    renew = lease_duration * LEASE_RENEW_FRACTION
    idle = CLIENT_READ_IDLE_SECONDS if read_idle is None else read_idle
    ping = CLIENT_PING_TIMEOUT_SECONDS if ping_timeout is None else ping_timeout
    redial = CLIENT_DIAL_TIMEOUT_SECONDS / servers
    via_apiserver = renew + idle + ping + redial
    via_etcd = renew + ETCD_KEEPALIVE_SECONDS
    f = fmt_seconds
    how = (f"max(renew R + HTTP/2 read-idle I + ping P + redial D, R + etcd keepalive E) = max({f(renew)} + {f(idle)} "
           f"+ {f(ping)} + {f(redial)}, {f(renew)} + {f(ETCD_KEEPALIVE_SECONDS)}) = "
           f"{f(max(via_apiserver, via_etcd))} s (the first when its connection went to the dead server's "
           "karmada-apiserver, the second when its apiserver's etcd stream went to the dead etcd member)")
    return HubServerLoss(stall=max(via_apiserver, via_etcd), grace=grace, how=how)


# ------------------------------------------------------------------------------------------- traffic

TTL_TERM = "DNS TTL"


@dataclass(frozen=True)
class TrafficBudget(_Clock):
    """The traffic clock: every term up to the authoritative answer, then the TTL (the last term)."""

    terms: tuple[Term, ...]
    restore_seconds: float
    """From the dead region answering again (and the hold-down having passed) to the authoritative servers
    serving it again: not part of any RTO, the drill times it."""
    restore_how: str = ""
    mode: str = "hetzner"
    decided_seconds: float = 0.0
    """Until the leader has decided (probe detection, observation write, decision period): the drill's first
    traffic phase."""
    record_seconds: float = 0.0
    """Until the DNSEndpoint (the record of the decision) says so: the drill's DNSEndpoint phase."""

    @property
    def authoritative(self) -> float:
        """Until the zone's authoritative servers answer without the dead region."""
        return sum(t.seconds for t in self.terms if t.name != TTL_TERM)


def traffic_budget(
    *, probe_period: float, probe_timeout: float, failure_threshold: int, success_threshold: int,
    hold_down: float, ttl: float, vantage_points: int, mode: str = "hetzner", secondaries: int = 0,
    min_event_sync: float = EXTERNAL_DNS_MIN_EVENT_SYNC_SECONDS,
) -> TrafficBudget:
    """The traffic clock's worst case from plain numbers (docs/traffic-failover.md §4.3), for dns.mode `hetzner`
    or `self-hosted`.

    Detection: the region dies just after a round passed; each vantage point then needs K failed rounds, the
    K-th ending at its timeout: K*P + T. Every (name, region) attempt of a round is in flight at once
    (agents/traffic_failover.py `Prober`), so a round lasts T whatever the number of names. The vantage points
    are not in step, but each is bounded the same way, so the majority (the one that completes it) is too."""
    if vantage_points < 1:
        raise ValueError("vantage_points must be >= 1")
    if mode not in ("hetzner", "self-hosted"):
        raise ValueError(f"unknown dns mode {mode!r}")
    k, p, t = failure_threshold, probe_period, probe_timeout
    majority = vantage_points // 2 + 1
    detect = k * p + t
    f = fmt_seconds
    slo = ("Kubernetes API SLO: mutating calls P99 <= 1 s (kubernetes/community "
           "sig-scalability/slos/api_call_latency.md)")
    common = (
        Term("probe detection", detect, f"a majority ({majority} of {vantage_points} hub servers) each sees K = {k} "
             f"failed rounds in a row, one every P = {f(p)} s, the K-th ending at its T = {f(t)} s timeout: K*P + T "
             f"= {k}*{f(p)} + {f(t)} = {f(detect)} (dns.failover; every pair of a round probed at once)",
             lower=("dns.failover.probePeriodSeconds", "dns.failover.failureThreshold",
                    "dns.failover.probeTimeoutSeconds")),
        Term("observation write", API_WRITE_SECONDS, f"the vantage point's Lease write after its round: {slo}"),
        Term("leader decision", CONTROLLER_DECISION_SECONDS, f"the leader decides every --decision-period = "
             f"{f(CONTROLLER_DECISION_SECONDS)} s (components/traffic/failover_docs.py)"),
    )
    decided = sum(x.seconds for x in common)
    if mode == "hetzner":
        floor = max(EXTERNAL_DNS_EVENT_FLOOR_SECONDS, min_event_sync)
        sync = floor + EXTERNAL_DNS_TICK_SECONDS
        publish: tuple[Term, ...] = (
            Term("DNSEndpoint write", API_WRITE_SECONDS, f"the leader's DNSEndpoint update: {slo}"),
            Term("external-dns event sync", sync, f"DNSEndpoint event -> next run no sooner than max(5 s literal, "
                 f"--min-event-sync-interval {f(min_event_sync)} s) = {f(floor)} s, + {f(EXTERNAL_DNS_TICK_SECONDS)} "
                 f"s ticker (external-dns v0.22.0 controller/controller.go), + 2 runs against Hetzner (one in "
                 "flight, then ours): unknown",
                 unknown="no source states how long an external-dns run against the Hetzner webhook takes (it lists "
                 "the zone's records and waits for every Hetzner Action); `hubctl drill` measures it"),
            Term("provider propagation", 0.0, "Hetzner Action done -> Hetzner's authoritative servers answer the "
                 "change: unknown",
                 unknown="Hetzner documents no figure; the one public report saw up to 90 minutes (Sliplane, "
                 "2026-04, shared/reference/self-hosted-dns.md §1.1); `hubctl drill` measures it"),
        )
        record = decided + API_WRITE_SECONDS
        ttl_how = (f"dns.ttl = {f(ttl)} (Hetzner Cloud DNS accepts no TTL below 60 s: docs.hetzner.cloud, Create "
                   "an RRSet)")
    else:
        publish = (
            Term("zone update", ZONE_UPDATE_SECONDS, "RFC 2136 UPDATE with TSIG to every hub nameserver at once: [lab] "
                 "0.04-0.09 s per UPDATE answered by Knot (shared/reference/self-hosted-dns.md §5 K1), rounded up "
                 "to 1 s for the hub's private network"),
        )
        if secondaries:
            publish += (Term("secondary transfer", SECONDARY_TRANSFER_SECONDS, f"{secondaries} secondaries: NOTIFY "
                             "then IXFR from any primary, [lab] 0.30-0.99 s (self-hosted-dns.md §5 K2)"),)
        record = decided + ZONE_UPDATE_SECONDS + API_WRITE_SECONDS
        ttl_how = (f"dns.ttl = {f(ttl)} (the fleet's own nameservers; [lab] Unbound serves the new answer one TTL "
                   "after the change, self-hosted-dns.md §3.1, re-checked by tests/integration/test_dns_lab.py)")
    terms = (*common, *publish, Term(
        TTL_TERM, float(ttl), f"{ttl_how}: only clients whose cached answer holds no live region wait this long; a "
        "client holding every region's address retries another one when the connection fails", lower=("dns.ttl",)))
    restore_decide = max(float(hold_down), success_threshold * p + t)
    published = sum(x.seconds for x in terms[1:] if x.name != TTL_TERM)
    restore = restore_decide + published
    unknown = " + unknown" if any(x.unknown for x in publish) else ""
    restore_how = (f"max(hold-down {f(hold_down)}, R*P + T = {success_threshold}*{f(p)} + {f(t)}) = "
                   f"{f(restore_decide)}, + writing it {f(published)}{unknown} = {f(restore)}{unknown}")
    return TrafficBudget(terms=terms, restore_seconds=restore, restore_how=restore_how, mode=mode,
                         decided_seconds=decided, record_seconds=record)


# ------------------------------------------------------------------------------------------- per tenant


@dataclass(frozen=True)
class TenantRto:
    """One tenant's RTO: the clock its placement waits for and its seconds."""

    tenant: str
    placement: str
    clock: str
    seconds: float
    budget: Budget | TrafficBudget
    """The clock whose terms make up the seconds (for the RTO error's advice)."""


@dataclass(frozen=True)
class FailoverReport:
    """Both clocks of a stack and the RTO of each tenant."""

    capacity: Budget
    traffic: TrafficBudget | None
    """None when the stack has no `dns` section: no traffic failover is modelled then."""
    tenants: tuple[TenantRto, ...] = ()
    rto_seconds: float | None = None
    footnotes: tuple[str, ...] = ()
    """What the clocks do not include, said after them (tenants without automatic failover, the descheduler)."""

    @property
    def worst(self) -> TenantRto:
        """The tenant (or the fleet, with no tenants) that waits longest."""
        return max(self.tenants, key=lambda r: r.seconds)


def _capacity_clock_tenants(config: FleetConfig) -> list[Any]:
    # a tenant on failover: manual is never evicted, so its (infinite) toleration is no term of either clock
    automatic = [t for t in config.tenants if t.fails_over]
    divided = [t for t in automatic if t.placement.replica_scheduling == "Divided"]
    return divided or automatic


def tenant_rtos(capacity_for: Mapping[str, Budget], traffic: TrafficBudget | None,
                placements: Sequence[tuple[str, str]], fleet_capacity: Budget) -> tuple[TenantRto, ...]:
    """Per tenant: Duplicated waits for the traffic clock; Divided for the larger of traffic and capacity.

    Without a traffic clock (no dns section) every tenant waits for capacity. No tenants: the fleet as a whole,
    on the larger of the two clocks."""
    rows = []
    for name, placement in placements:
        capacity = capacity_for.get(name, fleet_capacity)
        if traffic is None:
            rows.append(TenantRto(name, placement, "capacity (no dns section)", capacity.total, capacity))
        elif placement == "Duplicated":
            rows.append(TenantRto(name, placement, "traffic", traffic.total, traffic))
        elif capacity.total > traffic.total:
            rows.append(TenantRto(name, placement, "max(traffic, capacity) = capacity", capacity.total, capacity))
        else:
            rows.append(TenantRto(name, placement, "max(traffic, capacity) = traffic", traffic.total, traffic))
    if not rows:
        if traffic is not None and traffic.total >= fleet_capacity.total:
            rows.append(TenantRto("(no tenants)", "-", "max(traffic, capacity) = traffic", traffic.total, traffic))
        else:
            rows.append(TenantRto("(no tenants)", "-", "capacity", fleet_capacity.total, fleet_capacity))
    return tuple(rows)


def failover_budget(config: FleetConfig) -> FailoverReport:
    """The stack's two clocks: capacity over its members' sync modes and tenants' tolerations, traffic from its
    dns section, and each tenant's RTO."""
    fo = config.failover
    modes = [m.sync_mode for m in config.members]
    note = "" if modes else "no members declared: assuming the worse of Push and Pull"

    def capacity(tenants: Sequence[Any]) -> Budget:
        budget = compute_budget(
            sync_modes=modes or SYNC_MODES,
            status_update_frequency=fo.cluster_status_update_frequency,
            failure_threshold=fo.cluster_failure_threshold,
            monitor_period=fo.cluster_monitor_period,
            monitor_grace_period=fo.cluster_monitor_grace_period,
            resource_eviction_rate=fo.resource_eviction_rate,
            bindings_per_cluster=fo.bindings_per_cluster,
            toleration_seconds=[t.placement.toleration_seconds for t in tenants],
            pod_start_seconds=fo.pod_start_seconds,
        )
        members = tuple(m.name for m in config.members if m.sync_mode == budget.sync_mode)
        return replace(budget, members=members, note=note)

    fleet_capacity = capacity(_capacity_clock_tenants(config))
    traffic = None
    dns = config.dns
    if dns is not None:
        d = dns.failover
        traffic = traffic_budget(
            probe_period=d.probe_period_seconds, probe_timeout=d.probe_timeout_seconds,
            failure_threshold=d.failure_threshold, success_threshold=d.success_threshold,
            hold_down=d.hold_down_seconds, ttl=dns.record_ttl,
            vantage_points=config.hub.servers if config.hub is not None else VANTAGE_POINTS_DEFAULT,
            mode=dns.mode, secondaries=len(dns.self_hosted.secondaries) if dns.self_hosted is not None else 0,
        )
    automatic = [t for t in config.tenants if t.fails_over]
    per_tenant = {t.name: capacity([t]) for t in automatic}
    rows = tenant_rtos(per_tenant, traffic, [(t.name, _placement(config, t)) for t in automatic], fleet_capacity)
    return FailoverReport(capacity=fleet_capacity, traffic=traffic, tenants=rows, rto_seconds=fo.rto_seconds,
                          footnotes=_footnotes(config))


def _placement(config: FleetConfig, tenant: Any) -> str:
    """The placement a tenant's clock is chosen by. A Duplicated tenant waits for traffic only if it already runs
    a copy on the survivors of every member loss; with maxClusters or a region spread it may run a single copy
    that must be rescheduled first (the what-if table's answer, from the rendered policy)."""
    if tenant.placement.replica_scheduling != "Duplicated":
        return str(tenant.placement.replica_scheduling)
    from components.fleet.policy_docs import propagation_policy
    from components.fleet.whatif import clusters_of, model_policy, tenant_report

    clusters = clusters_of(config.members)
    if not clusters:
        return "Duplicated"
    policy = propagation_policy(tenant, list(config.regions), list(config.members), config.failover)
    report = tenant_report(model_policy(policy, clusters), clusters)
    single = [r for r in report.rows if not r.scenario.startswith("lose region")]
    if all(r.outcome in ("UNCHANGED", "TRAFFIC MOVES") for r in single):
        return "Duplicated"
    return "Duplicated (rescheduled)"


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
    if not config.members or any(m.sync_mode == "Pull" for m in config.members):
        fo = config.failover
        out.append(hub_server_loss(
            grace=fo.cluster_monitor_grace_period, lease_duration=fo.cluster_lease_duration,
            servers=config.hub.servers if config.hub is not None else VANTAGE_POINTS_DEFAULT,
            read_idle=fo.client_read_idle_seconds, ping_timeout=fo.client_ping_timeout_seconds).footnote())
    return tuple(out)


VANTAGE_POINTS_DEFAULT = 3
"""Region stacks do not declare the hub; its servers are 3 in every example hub stack (preflight checks the
hub contract for the DNS values, which do not depend on it)."""


def check_rto(report: FailoverReport, rto_seconds: float | None) -> None:
    """Refuse a plan where a tenant's clock exceeds the declared RTO, naming the two biggest terms and knobs."""
    if rto_seconds is None:
        return
    worst = report.worst
    total = round(worst.seconds, 6)
    if total <= rto_seconds:
        return
    terms = worst.budget.terms
    ranked = sorted(range(len(terms)), key=lambda i: (-terms[i].seconds, i))[:2]
    largest = [terms[i] for i in sorted(ranked)]
    lower = list(dict.fromkeys(k for t in largest for k in t.lower))
    higher = list(dict.fromkeys(k for t in largest for k in t.higher))
    advice = " or ".join(
        part for part in (
            f"lower {'/'.join(lower)}" if lower else "",
            f"raise {'/'.join(higher)}" if higher else "",
        ) if part
    ) or "raise rtoSeconds"
    shown = ", ".join(f"{t.name} {fmt_seconds(t.seconds)} s" for t in largest)
    who = f"tenant {worst.tenant} ({worst.placement}, {worst.clock} clock)" if worst.placement != "-" else (
        f"the fleet ({worst.clock} clock)")
    raise ValueError(
        f"failover.rtoSeconds: {who} takes {fmt_seconds(worst.seconds)} s, over rtoSeconds "
        f"{fmt_seconds(rto_seconds)} s (largest terms: {shown}); {advice}"
    )


# ------------------------------------------------------------------------------------------ output


def _title(budget: Budget) -> str:
    who = f" ({', '.join(budget.members)})" if budget.members else ""
    title = f"Capacity RTO (Karmada path), worst case: {budget.sync_mode} member{who}"
    return f"{title}; {budget.note}" if budget.note else title


TRAFFIC_TITLE = "Traffic RTO (health-checked DNS failover, independent of Karmada's detection)"
AUTHORITATIVE = "authoritative answer without the dead region"
TRAFFIC_TOTAL = "traffic RTO, client caches included"


def _rows_table(title: str, rows: list[tuple[str, str, str]], totals: list[tuple[int, str, str]]) -> list[str]:
    """A fixed-width table: name, seconds (right-aligned), how; `totals` are (insert before row index, name, s)."""
    names = [r[0] for r in rows] + [t[1] for t in totals]
    secs = [r[1] for r in rows] + [t[2] for t in totals]
    name_w = max(len("term"), *(len(n) for n in names))
    sec_w = max(len("seconds"), *(len(x) for x in secs))
    lines = [title, f"{'term':<{name_w}}  {'seconds':>{sec_w}}  how", f"{'-' * name_w}  {'-' * sec_w}  ---"]
    by_index: dict[int, list[tuple[str, str]]] = {}
    for index, name, sec in totals:
        by_index.setdefault(index, []).append((name, sec))
    for i in range(len(rows) + 1):
        for name, sec in by_index.get(i, []):
            lines.append(f"{'-' * name_w}  {'-' * sec_w}")
            lines.append(f"{name:<{name_w}}  {sec:>{sec_w}}")
        if i < len(rows):
            name, sec, how = rows[i]
            lines.append(f"{name:<{name_w}}  {sec:>{sec_w}}  {how}")
    return lines


def format_clock(budget: Budget) -> str:
    """The capacity clock as a fixed-width table: term, seconds, how; then the total."""
    rows = [(t.name, fmt_seconds(t.seconds), t.how) for t in budget.terms]
    return "\n".join(_rows_table(_title(budget), rows, [(len(rows), "total", fmt_seconds(budget.total))]))


def term_seconds(term: Term) -> str:
    """A term's seconds as shown: `unknown`, `>= 6` (known part of an unknown term), or the value."""
    if not term.unknown:
        return fmt_seconds(term.seconds)
    return f">= {fmt_seconds(term.seconds)}" if term.seconds else "unknown"


def total_seconds(clock: _Clock, value: float | None = None) -> str:
    shown = fmt_seconds(clock.total if value is None else value)
    return f">= {shown}" if clock.unknown else shown


def traffic_title(traffic: TrafficBudget) -> str:
    return f"{TRAFFIC_TITLE}, dns.mode {traffic.mode}"


def format_clients() -> str:
    """What clients add that no DNS design removes (not a term of the traffic clock)."""
    heads = ("client", "adds", "source")
    widths = [max(len(h), *(len(r[i]) for r in CLIENT_RESIDUALS)) for i, h in enumerate(heads[:2])]
    out = [CLIENTS_TITLE, f"{heads[0]:<{widths[0]}}  {heads[1]:<{widths[1]}}  {heads[2]}",
           f"{'-' * widths[0]}  {'-' * widths[1]}  ---"]
    out += [f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c}" for a, b, c in CLIENT_RESIDUALS]
    return "\n".join(out)


CLIENTS_TITLE = "What clients add, whatever the DNS design (not terms of the traffic clock)"


def format_traffic(traffic: TrafficBudget) -> str:
    rows = [(t.name, term_seconds(t), t.how) for t in traffic.terms]
    ttl_at = [t.name for t in traffic.terms].index(TTL_TERM)
    totals = [(ttl_at, AUTHORITATIVE, total_seconds(traffic, traffic.authoritative)),
              (len(rows), TRAFFIC_TOTAL, total_seconds(traffic))]
    lines = [*_rows_table(traffic_title(traffic), rows, totals),
             f"restore (not an RTO term): {traffic.restore_how}"]
    for t in traffic.terms:
        if t.unknown:
            lines.append(f"unknown: {t.name}: {t.unknown}")
    return "\n".join(lines)


def format_tenants(report: FailoverReport) -> str:
    rto = "unset" if report.rto_seconds is None else f"{fmt_seconds(report.rto_seconds)} s"
    rows = [(r.tenant, r.placement, r.clock, total_seconds(r.budget, r.seconds)) for r in report.tenants]
    heads = ("tenant", "placement", "clock", "seconds")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]
    line = "  ".join(h.ljust(w) for h, w in zip(heads, widths, strict=True))
    out = [f"RTO per tenant placement (failover.rtoSeconds: {rto})", line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(out)


def format_budget(report: FailoverReport) -> str:
    """What `hubctl budget` prints: the traffic clock, the capacity clock, then the RTO per tenant."""
    parts = []
    if report.traffic is not None:
        parts.append(format_traffic(report.traffic))
        parts.append(format_clients())
    else:
        parts.append(f"{TRAFFIC_TITLE}: not modelled (no dns section)")
    parts.append(format_clock(report.capacity))
    parts.append(format_tenants(report))
    if report.footnotes:
        parts.append("\n".join(f"* {f}" for f in report.footnotes))
    return "\n\n".join(parts)


def _md_cell(text: str) -> str:
    """A `|` inside a cell would end it early."""
    return text.replace("|", "\\|")


def clock_markdown(budget: Budget | TrafficBudget, title: str) -> list[str]:
    lines = [f"**{title}**", "", "| term | seconds | how |", "|---|---:|---|"]
    for t in budget.terms:
        if isinstance(budget, TrafficBudget) and t.name == TTL_TERM:
            lines.append(f"| *{AUTHORITATIVE}* | *{total_seconds(budget, budget.authoritative)}* | |")
        how = t.how + (f" (unknown: {t.unknown})" if t.unknown else "")
        lines.append(f"| {t.name} | {term_seconds(t)} | {_md_cell(how)} |")
    name = TRAFFIC_TOTAL if isinstance(budget, TrafficBudget) else "total"
    lines.append(f"| **{name}** | **{total_seconds(budget)}** | |")
    return lines


def budget_markdown(report: FailoverReport) -> str:
    """The same tables as Markdown, for a pull-request comment."""
    lines: list[str] = []
    if report.traffic is not None:
        lines += [*clock_markdown(report.traffic, traffic_title(report.traffic)), ""]
        lines += [f"**{CLIENTS_TITLE}**", "", "| client | adds | source |", "|---|---|---|"]
        lines += [f"| {_md_cell(a)} | {_md_cell(b)} | {_md_cell(c)} |" for a, b, c in CLIENT_RESIDUALS]
        lines.append("")
    lines += [*clock_markdown(report.capacity, _title(report.capacity)), ""]
    lines += ["| tenant | placement | clock | seconds |", "|---|---|---|---:|"]
    lines += [f"| {r.tenant} | {r.placement} | {r.clock} | {total_seconds(r.budget, r.seconds)} |"
              for r in report.tenants]
    if report.footnotes:
        lines += ["", *(f"- {_md_cell(f)}" for f in report.footnotes)]
    return "\n".join(lines)
