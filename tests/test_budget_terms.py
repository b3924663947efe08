"""components/operations/budget.py at its edges and in its own words: every term's explanation (`hubctl budget`
prints the formula with the values used, so a reviewer can redo it: a wrong number there misleads as much as a
wrong total), ties between the clocks and the sync modes, the guards on its inputs, and the RTO check's rounding
and advice. tests/test_budget.py covers the arithmetic against the upstream sources; both run in the mutation
run's budget target.
"""

from __future__ import annotations

import dataclasses

import pytest

from components.operations import budget as b

KNOBS = dict(status_update_frequency=10, failure_threshold=30, monitor_period=5, monitor_grace_period=40,
             resource_eviction_rate=0.5, bindings_per_cluster=50, toleration_seconds=[None, 30], pod_start_seconds=60)

SHARED = [
    ("taint", 0.0, "≈ 0: NoSchedule (cluster-controller) and NoExecute (ClusterTaintPolicy controller) are both "
                   "watch-driven", (), ()),
    ("toleration", 30.0, "largest placement.tolerationSeconds of the tenants on this clock: max(unset, 30) = 30 "
                         "(unset evicts at once)", ("tenants[].placement.tolerationSeconds",), ()),
    ("eviction queue", 98.0, "last of N = 50 bindings, W = 1 as the docs imply: (N-1)/R_e = (50-1)/0.5 = 98 (with "
                             "upstream's 3 workers floor((N-1)/3)/R_e = 32)", ("bindingsPerCluster",),
     ("resourceEvictionRate",)),
    ("scheduling", 0.03, "scheduling P99 32 ms (Karmada 2022 100-cluster test)", (), ()),
]
POD_START = ("pod start", 60.0, "failover.podStartSeconds (image pull + readiness on the survivor)",
             ("podStartSeconds",), ())


def _terms(budget: b.Budget | b.TrafficBudget) -> list[tuple[object, ...]]:
    return [(t.name, t.seconds, t.how, t.lower, t.higher) for t in budget.terms]


def test_the_push_clock_in_its_own_words() -> None:
    push = b.compute_budget(sync_modes=["Push"], **KNOBS)
    assert push.sync_mode == "Push" and push.note == "" and push.members == ()
    assert _terms(push) == [
        ("detection", 84.0, "Push, black-holed probe: (U+P) + ceil(F/(U+P))*(U+P) = (10+32) + ceil(30/42)*42 = 84; "
                            "P = 32 s client timeout is hard-coded upstream (refused connection, P = 0: 10 + 3*10 = "
                            "40)",
         ("clusterStatusUpdateFrequency",), ()),
        *SHARED,
        ("dispatch", 1.3, "to a survivor; slowest mode in the fleet is Push: resource-distribution P99 1298 ms (2022 "
                          "test report)", (), ()),
        POD_START,
    ]


def test_the_pull_clock_in_its_own_words() -> None:
    pull = b.compute_budget(sync_modes=["Pull"], **KNOBS)
    assert _terms(pull) == [
        ("detection", 50, "Pull, worst of whole member dead: G + 2M = 40 + 2*5 = 50 and member apiserver dead, agent "
                          "alive (local probe, P = 0): U + ceil(F/U)*U = 10 + 3*10 = 40",
         ("clusterMonitorGracePeriod", "clusterMonitorPeriod"), ()),
        *SHARED,
        ("dispatch", 1.0, "to a survivor; slowest mode in the fleet is Pull: resource-distribution P99 989 ms (2022 "
                          "test report)", (), ()),
        POD_START,
    ]
    alone = b.compute_budget(sync_modes=["Pull"], **{**KNOBS, "toleration_seconds": ()})
    assert alone.term("toleration").how == ("largest placement.tolerationSeconds of the tenants on this clock: max(no "
                                            "tenants) = 0 (unset evicts at once)")


SLO = ("Kubernetes API SLO: mutating calls P99 <= 1 s (kubernetes/community sig-scalability/slos/api_call_latency.md)")
DECIDED = [
    ("probe detection", 17, "a majority (2 of 3 hub servers) each sees K = 3 failed rounds in a row, one every "
                            "P = 5 s, the K-th ending at its T = 2 s timeout: K*P + T = 3*5 + 2 = 17 (dns.failover; "
                            "every pair of a round probed at once)",
     ("dns.failover.probePeriodSeconds", "dns.failover.failureThreshold", "dns.failover.probeTimeoutSeconds"), (), ""),
    ("observation write", 1.0, f"the vantage point's Lease write after its round: {SLO}", (), (), ""),
    ("leader decision", 1.0, "the leader decides every --decision-period = 1 s (components/traffic/failover_docs.py)",
     (), (), ""),
]
CLIENT_TTL = (": only clients whose cached answer holds no live region wait this long; a client holding every "
              "region's address retries another one when the connection fails")


def _traffic_terms(traffic: b.TrafficBudget) -> list[tuple[object, ...]]:
    return [(t.name, t.seconds, t.how, t.lower, t.higher, t.unknown) for t in traffic.terms]


def test_the_traffic_clock_in_its_own_words() -> None:
    traffic = b.traffic_budget(probe_period=5, probe_timeout=2, failure_threshold=3, success_threshold=6,
                               hold_down=60, ttl=60, vantage_points=3)
    assert traffic.mode == "hetzner"
    assert _traffic_terms(traffic) == [
        *DECIDED,
        ("DNSEndpoint write", 1.0, f"the leader's DNSEndpoint update: {SLO}", (), (), ""),
        ("external-dns event sync", 6.0, "DNSEndpoint event -> next run no sooner than max(5 s literal, "
                                         "--min-event-sync-interval 5 s) = 5 s, + 1 s ticker (external-dns v0.22.0 "
                                         "controller/controller.go), + 2 runs against Hetzner (one in flight, then "
                                         "ours): unknown", (), (),
         "no source states how long an external-dns run against the Hetzner webhook takes (it lists the zone's "
         "records and waits for every Hetzner Action); `hubctl drill` measures it"),
        ("provider propagation", 0.0, "Hetzner Action done -> Hetzner's authoritative servers answer the change: "
                                      "unknown", (), (),
         "Hetzner documents no figure; the one public report saw up to 90 minutes (Sliplane, 2026-04, "
         "shared/reference/self-hosted-dns.md §1.1); `hubctl drill` measures it"),
        ("DNS TTL", 60.0, "dns.ttl = 60 (Hetzner Cloud DNS accepts no TTL below 60 s: docs.hetzner.cloud, Create an "
                          f"RRSet){CLIENT_TTL}", ("dns.ttl",), (), ""),
    ]
    assert traffic.restore_seconds == 69.0
    assert traffic.restore_how == ("max(hold-down 60, R*P + T = 6*5 + 2) = 60, + writing it 9 + unknown = 69 + "
                                   "unknown")
    assert (traffic.authoritative, traffic.total) == (26.0, 86.0)
    assert (traffic.decided_seconds, traffic.record_seconds) == (19.0, 20.0)


def test_the_self_hosted_traffic_clock_in_its_own_words() -> None:
    traffic = b.traffic_budget(probe_period=5, probe_timeout=2, failure_threshold=3, success_threshold=6,
                               hold_down=60, ttl=60, vantage_points=3, mode="self-hosted")
    zone = ("zone update", 1.0, "RFC 2136 UPDATE with TSIG to every hub nameserver at once: [lab] 0.04-0.09 s per "
                                "UPDATE answered by Knot (shared/reference/self-hosted-dns.md §5 K1), rounded up to "
                                "1 s for the hub's private network", (), (), "")
    ttl = ("DNS TTL", 60.0, "dns.ttl = 60 (the fleet's own nameservers; [lab] Unbound serves the new answer one TTL "
                            "after the change, self-hosted-dns.md §3.1, re-checked by tests/integration/"
                            f"test_dns_lab.py){CLIENT_TTL}", ("dns.ttl",), (), "")
    assert traffic.mode == "self-hosted"
    assert _traffic_terms(traffic) == [*DECIDED, zone, ttl]
    assert traffic.restore_seconds == 63.0
    assert traffic.restore_how == "max(hold-down 60, R*P + T = 6*5 + 2) = 60, + writing it 3 = 63"
    assert (traffic.authoritative, traffic.total, traffic.unknown) == (20.0, 80.0, ())
    assert (traffic.decided_seconds, traffic.record_seconds) == (19.0, 21.0)
    two = b.traffic_budget(probe_period=5, probe_timeout=2, failure_threshold=3, success_threshold=6,
                           hold_down=60, ttl=60, vantage_points=3, mode="self-hosted", secondaries=2)
    assert _traffic_terms(two) == [*DECIDED, zone, (
        "secondary transfer", 1.0, "2 secondaries: NOTIFY then IXFR from any primary, [lab] 0.30-0.99 s "
                                   "(self-hosted-dns.md §5 K2)", (), (), ""), ttl]
    assert two.restore_how == "max(hold-down 60, R*P + T = 6*5 + 2) = 60, + writing it 4 = 64"
    assert (two.restore_seconds, two.authoritative, two.total, two.record_seconds) == (64.0, 21.0, 81.0, 21.0)
    with pytest.raises(ValueError, match="unknown dns mode 'knot'"):
        b.traffic_budget(probe_period=5, probe_timeout=2, failure_threshold=3, success_threshold=6, hold_down=60,
                         ttl=60, vantage_points=3, mode="knot")


def test_restoring_waits_for_the_slower_of_hold_down_and_good_rounds() -> None:
    traffic = b.traffic_budget(probe_period=5, probe_timeout=2, failure_threshold=3, success_threshold=6,
                               hold_down=30, ttl=60, vantage_points=3)
    # the known part of writing it: observation write 1 + decision 1 + DNSEndpoint write 1 + external-dns 6
    assert traffic.restore_seconds == 32 + 1 + 1 + 1 + 6
    assert traffic.restore_how.startswith("max(hold-down 30, R*P + T = 6*5 + 2) = 32, ")


def test_one_vantage_point_is_a_majority_of_one_and_none_is_refused() -> None:
    one = b.traffic_budget(probe_period=5, probe_timeout=2, failure_threshold=3, success_threshold=6, hold_down=60,
                           ttl=60, vantage_points=1)
    assert one.terms[0].how.startswith("a majority (1 of 1 hub servers)")
    with pytest.raises(ValueError, match="vantage_points must be >= 1"):
        b.traffic_budget(probe_period=5, probe_timeout=2, failure_threshold=3, success_threshold=6, hold_down=60,
                         ttl=60, vantage_points=0)


def test_inputs_the_arithmetic_cannot_take_are_refused() -> None:
    with pytest.raises(ValueError, match="resource_eviction_rate must be > 0"):
        b.compute_budget(sync_modes=["Push"], **{**KNOBS, "resource_eviction_rate": 0})
    assert b.eviction_queue_seconds(0, 0.5) == 0.0 == b.eviction_queue_seconds(-3, 0.5)
    assert b.eviction_queue_seconds(1, 0.5) == 0.0 and b.eviction_queue_seconds(2, 0.5) == 2.0


def test_ties_go_to_push_and_to_the_lease_knobs() -> None:
    # Push: (10+32) + ceil(30/42)*42 = 84; Pull: G + 2M = 74 + 2*5 = 84; dispatch is the fleet's slowest either way
    tie = b.compute_budget(sync_modes=["Pull", "Push"], **{**KNOBS, "monitor_grace_period": 74})
    assert tie.sync_mode == "Push", "equal totals: Push, the first mode tried"
    over = b.compute_budget(sync_modes=["Pull", "Push"], **{**KNOBS, "monitor_grace_period": 75})
    assert over.sync_mode == "Pull" and over.term("detection").seconds == 85
    # Pull detection: lease G + 2M = 30 + 10 = 40 equals U + ceil(F/U)*U = 40: the lease knobs are named
    level = b.compute_budget(sync_modes=["Pull"], **{**KNOBS, "monitor_grace_period": 30})
    assert level.term("detection").lower == ("clusterMonitorGracePeriod", "clusterMonitorPeriod")
    apiserver = b.compute_budget(sync_modes=["Pull"], **{**KNOBS, "monitor_grace_period": 29})
    assert apiserver.term("detection").lower == ("clusterStatusUpdateFrequency",)


def _capacity(seconds: float) -> b.Budget:
    return b.Budget(terms=(b.Term("detection", seconds, "d", lower=("clusterStatusUpdateFrequency",)),),
                    sync_mode="Push")


def _traffic(seconds: float) -> b.TrafficBudget:
    return b.TrafficBudget(terms=(b.Term("probe detection", seconds, "p"),), restore_seconds=0)


def test_tenant_clocks_on_ties_and_without_tenants_or_dns() -> None:
    rows = b.tenant_rtos({}, _traffic(100), [("shop", "Divided"), ("web", "Duplicated")], _capacity(100))
    assert [(r.tenant, r.placement, r.clock, r.seconds) for r in rows] == [
        ("shop", "Divided", "max(traffic, capacity) = traffic", 100),
        ("web", "Duplicated", "traffic", 100)]
    assert [(r.tenant, r.placement, r.clock, r.seconds) for r in b.tenant_rtos({}, _traffic(100), [],
                                                                               _capacity(100))] == [
        ("(no tenants)", "-", "max(traffic, capacity) = traffic", 100)]
    assert [(r.tenant, r.placement, r.clock, r.seconds) for r in b.tenant_rtos({}, _traffic(99), [],
                                                                               _capacity(100))] == [
        ("(no tenants)", "-", "capacity", 100)]
    assert [(r.tenant, r.placement, r.clock, r.seconds) for r in b.tenant_rtos({}, None, [], _capacity(100))] == [
        ("(no tenants)", "-", "capacity", 100)]
    assert [(r.clock, r.seconds) for r in b.tenant_rtos({"shop": _capacity(7)}, None, [("shop", "Divided")],
                                                        _capacity(100))] == [("capacity (no dns section)", 7)]
    assert b.TrafficBudget(terms=(), restore_seconds=0).restore_how == ""


def _report(seconds: float, placement: str = "Divided", clock: str = "capacity",
            budget: b.Budget | None = None) -> b.FailoverReport:
    budget = budget or _capacity(seconds)
    return b.FailoverReport(capacity=budget, traffic=None,
                            tenants=(b.TenantRto("shop", placement, clock, seconds, budget),))


def test_the_rto_check_rounds_to_a_microsecond() -> None:
    b.check_rto(_report(100.0000004), 100)  # float noise below a microsecond is not over the RTO
    with pytest.raises(ValueError, match="takes 100 s, over rtoSeconds 100 s"):
        b.check_rto(_report(100.000004), 100)
    b.check_rto(_report(1e9), None)


def test_the_rto_advice_names_the_knobs_or_says_to_raise_the_rto() -> None:
    knobless = b.Budget(terms=(b.Term("scheduling", 50, "s"), b.Term("taint", 0, "t")), sync_mode="Push")
    with pytest.raises(ValueError) as exc:
        b.check_rto(_report(50, placement="-", budget=knobless), 10)
    assert str(exc.value) == ("failover.rtoSeconds: the fleet (capacity clock) takes 50 s, over rtoSeconds 10 s "
                              "(largest terms: scheduling 50 s, taint 0 s); raise rtoSeconds")
    both = b.Budget(terms=(b.Term("eviction queue", 60, "e", lower=("a", "b"), higher=("c", "d")),
                           b.Term("detection", 40, "d", lower=("b", "e"))), sync_mode="Push")
    with pytest.raises(ValueError) as exc:
        b.check_rto(_report(100, budget=both), 10)
    assert str(exc.value).endswith("(largest terms: eviction queue 60 s, detection 40 s); lower a/b/e or raise c/d")
    raise_only = b.Budget(terms=(b.Term("eviction queue", 60, "e", higher=("c",)),), sync_mode="Push")
    with pytest.raises(ValueError, match=r"tenant shop \(Divided, capacity clock\) takes 60 s.*; raise c$"):
        b.check_rto(_report(60, budget=raise_only), 10)


def test_a_fleet_without_members_says_so_and_clocks_are_values() -> None:
    from tests.support.tools import load_stack

    dev = load_stack("dev")
    assert b.failover_budget(dev).capacity.note == ""
    bare = b.failover_budget(dev.model_copy(update={"members": [], "tenants": []})).capacity
    assert bare.note == "no members declared: assuming the worse of Push and Pull" and bare.members == ()
    for value in (_capacity(1), _traffic(1), _report(1), _report(1).tenants[0]):
        with pytest.raises(dataclasses.FrozenInstanceError):
            value.terms = ()  # type: ignore[misc]
