"""Tests for the failover budget: each case is worked by hand in the comments, per fleet-capi-failover.md §2.6."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.config import HealthCheckConfig
from components.operations import budget as budget_mod
from components.operations.budget import (
    Budget,
    FailoverReport,
    Term,
    TrafficBudget,
    budget_markdown,
    check_rto,
    compute_budget,
    eviction_queue_seconds,
    failover_budget,
    fmt_seconds,
    format_budget,
    format_clock,
    lb_detection_seconds,
    max_toleration_seconds,
    pull_lease_detection_seconds,
    push_detection_seconds,
    tenant_rtos,
    traffic_budget,
)
from tests.support.tools import load_stack

ROOT = Path(__file__).resolve().parents[1]
DEV_STACK = ROOT / "stacks" / "Pulumi.dev.yaml"
PREFIX = "karmada-hub:"




DEFAULTS: dict[str, Any] = {
    "status_update_frequency": 10,
    "failure_threshold": 30,
    "monitor_period": 5,
    "monitor_grace_period": 40,
    "resource_eviction_rate": 0.5,
    "bindings_per_cluster": 1,
}


def budget(**overrides: Any) -> Budget:
    args = {**DEFAULTS, **overrides}
    return compute_budget(**args)


# ------------------------------------------------------------------------------------------ detection


def test_push_refused_probe() -> None:
    # P = 0: cycle = 10 + 0 = 10; 10 + ceil(30/10)*10 = 10 + 3*10 = 40
    assert push_detection_seconds(10, 30, probe_seconds=0) == 40


def test_push_black_holed_probe_uses_hard_coded_32s() -> None:
    # P = 32: cycle = 10 + 32 = 42; 42 + ceil(30/42)*42 = 42 + 1*42 = 84
    assert push_detection_seconds(10, 30) == 84


def test_push_black_holed_threshold_spanning_two_cycles() -> None:
    # U = 5, F = 60, P = 32: cycle = 37; ceil(60/37) = 2; 37 + 2*37 = 111
    assert push_detection_seconds(5, 60) == 111


def test_push_budget_detection_is_the_black_holed_case() -> None:
    # Push only: detection = 84 (black-holed) rather than 40 (refused); the refused figure is in the text
    b = budget(sync_modes=["Push"])
    term = b.term("detection")
    assert term.seconds == 84
    assert "(10+32)" in term.how and "= 40" in term.how


def test_pull_whole_member_death_lease_bound() -> None:
    # G + 2M = 40 + 2*5 = 50
    assert pull_lease_detection_seconds(40, 5) == 50


def test_pull_takes_worst_of_lease_and_apiserver_only() -> None:
    # lease: 40 + 2*5 = 50; apiserver only (P = 0): 10 + ceil(30/10)*10 = 40 -> max = 50
    b = budget(sync_modes=["Pull"])
    assert b.sync_mode == "Pull"
    assert b.term("detection").seconds == 50
    assert b.term("detection").lower == ("clusterMonitorGracePeriod", "clusterMonitorPeriod")


def test_pull_apiserver_only_can_dominate() -> None:
    # U = 20, F = 100: apiserver only = 20 + ceil(100/20)*20 = 20 + 5*20 = 120; lease = 40 + 2*5 = 50 -> 120
    b = budget(sync_modes=["Pull"], status_update_frequency=20, failure_threshold=100)
    assert b.term("detection").seconds == 120
    assert b.term("detection").lower == ("clusterStatusUpdateFrequency",)


def test_pull_only_total() -> None:
    # 50 detection + 0 taint + 0 toleration + 0 queue (N = 1) + 0.03 scheduling + 1.0 Pull dispatch + 0 pod = 51.03
    b = budget(sync_modes=["Pull"])
    assert [t.name for t in b.terms] == [
        "detection", "taint", "toleration", "eviction queue", "scheduling", "dispatch", "pod start"
    ]
    assert b.total == pytest.approx(51.03)


def test_mixed_fleet_push_is_worst_with_defaults() -> None:
    # Push: 84 + 0.03 + 1.3 = 85.33; Pull: 50 + 0.03 + 1.3 = 51.33 (dispatch to a survivor: slowest mode, Push 1.3)
    b = budget(sync_modes=["Pull", "Push"])
    assert b.sync_mode == "Push"
    assert b.total == pytest.approx(85.33)
    assert b.term("dispatch").seconds == 1.3


def test_mixed_fleet_pull_is_worst_with_long_grace() -> None:
    # Pull lease: G + 2M = 300 + 2*10 = 320 > Push 84 -> Pull; total 320 + 0.03 + 1.3 = 321.33
    b = budget(sync_modes=["Push", "Pull"], monitor_grace_period=300, monitor_period=10)
    assert b.sync_mode == "Pull"
    assert b.total == pytest.approx(321.33)


def test_unknown_or_empty_sync_modes_rejected() -> None:
    with pytest.raises(ValueError):
        budget(sync_modes=[])


def test_taint_term_is_zero_and_says_watch_driven() -> None:
    term = budget(sync_modes=["Push"]).term("taint")
    assert term.seconds == 0 and "watch-driven" in term.how


# ------------------------------------------------------------------------------------------ toleration


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        ([], 0),  # no tenants -> 0
        ([None], 0),  # unset -> evict at once -> 0
        ([None, 120, 30], 120),  # max(0, 120, 30) = 120
        ([0, 45], 45),  # max(0, 45) = 45
    ],
)
def test_max_toleration(tolerations: list[int | None], expected: int) -> None:
    assert max_toleration_seconds(tolerations) == expected


def test_toleration_adds_to_total() -> None:
    # Push, N = 1: 84 + 120 + 0.03 + 1.3 = 205.33
    b = budget(sync_modes=["Push"], toleration_seconds=[None, 120, 30])
    assert b.term("toleration").seconds == 120
    assert b.total == pytest.approx(205.33)


# ------------------------------------------------------------------------------------------ eviction queue


@pytest.mark.parametrize(
    ("n", "rate", "workers", "expected"),
    [
        (1, 0.5, 1, 0),  # the first binding goes at once: floor(0/1)/0.5 = 0
        (12, 0.5, 1, 22),  # docs' 12 workloads: (12-1)/0.5 = 22 (the docs round up to N/R_e = 24)
        (50, 0.5, 1, 98),  # (50-1)/0.5 = 98
        (100, 2, 1, 49.5),  # (100-1)/2 = 49.5
        (100, 0.5, 3, 66),  # 3 workers: floor(99/3)/0.5 = 33/0.5 = 66
        (2, 0.5, 3, 0),  # floor(1/3) = 0 -> 0
    ],
)
def test_eviction_queue(n: int, rate: float, workers: int, expected: float) -> None:
    assert eviction_queue_seconds(n, rate, workers) == pytest.approx(expected)


def test_eviction_term_uses_one_worker_and_states_three_worker_bound() -> None:
    # N = 50, R_e = 0.5: W = 1 -> 98; W = 3 -> floor(49/3)/0.5 = 16/0.5 = 32
    term = budget(sync_modes=["Push"], bindings_per_cluster=50).term("eviction queue")
    assert term.seconds == 98
    assert "= 32" in term.how and "(50-1)/0.5" in term.how


# ------------------------------------------------------------------------------------------ traffic

TRAFFIC: dict[str, Any] = {"probe_period": 5, "probe_timeout": 2, "failure_threshold": 3, "success_threshold": 6,
                           "hold_down": 60, "ttl": 60, "vantage_points": 3}


def test_traffic_clock_term_by_term_in_mode_hetzner() -> None:
    # detection 3*5 + 2 = 17; observation write 1; decision 1; DNSEndpoint write 1; external-dns max(5, 5) + 1
    # = 6 + two runs (unknown); propagation unknown; TTL 60: at least 86, two terms unknown
    t = traffic_budget(**TRAFFIC)
    assert [(x.name, x.seconds, bool(x.unknown)) for x in t.terms] == [
        ("probe detection", 17, False), ("observation write", 1, False), ("leader decision", 1, False),
        ("DNSEndpoint write", 1, False), ("external-dns event sync", 6, True), ("provider propagation", 0, True),
        ("DNS TTL", 60, False)]
    assert t.authoritative == 26 and t.total == 86 and t.unknown == ("external-dns event sync",
                                                                     "provider propagation")
    assert "2 of 3 hub servers" in t.term("probe detection").how
    # restore: max(hold-down 60, 6*5 + 2 = 32) = 60, + 1 + 1 + 1 + 6 = 69 (+ unknown)
    assert t.restore_seconds == 69 and t.restore_how.endswith("+ unknown")
    assert (t.decided_seconds, t.record_seconds) == (19, 20)
    shown = budget_mod.format_traffic(t)
    total = next(line for line in shown.splitlines() if line.startswith("traffic RTO, client caches included"))
    assert total.split()[-2:] == [">=", "86"]
    assert "unknown: provider propagation: Hetzner documents no figure" in shown


def test_traffic_clock_term_by_term_in_mode_self_hosted() -> None:
    # the shipped defaults: P 3, T 2, K 3, TTL 15: 11 + 1 + 1 + 1 (zone update) = 14 authoritative, + 15 = 29;
    # a secondary adds its transfer (1 s): 30
    t = traffic_budget(**{**TRAFFIC, "probe_period": 3, "ttl": 15, "mode": "self-hosted"})
    assert [(x.name, x.seconds) for x in t.terms] == [
        ("probe detection", 11), ("observation write", 1), ("leader decision", 1), ("zone update", 1),
        ("DNS TTL", 15)]
    assert t.authoritative == 14 and t.total == 29 and t.unknown == ()
    assert t.record_seconds == 15, "the DNSEndpoint is written after the zone"
    with_secondary = traffic_budget(**{**TRAFFIC, "probe_period": 3, "ttl": 15, "mode": "self-hosted",
                                       "secondaries": 2})
    assert with_secondary.term("secondary transfer").seconds == 1 and with_secondary.total == 30


def test_every_traffic_term_names_its_source_and_no_placeholder_is_left() -> None:
    """The old 5 s "provider propagation" placeholder and the 3 s external-dns run estimate had no source: an
    unknown is now shown as unknown, and every known term cites a rendered value, an upstream file, an SLO or a
    measurement."""
    sources = ("dns.failover", "SLO", "--decision-period", "controller.go", "[lab]", "docs.hetzner.cloud",
               "dns.ttl")
    for mode in ("hetzner", "self-hosted"):
        t = traffic_budget(**{**TRAFFIC, "mode": mode, "ttl": 60, "secondaries": 1})
        for term in t.terms:
            assert term.unknown or any(s in term.how for s in sources), (mode, term)
            assert "estimate" not in term.how and "placeholder" not in term.how, (mode, term)
    assert budget_mod.CLIENT_RESIDUALS and all(len(row) == 3 and all(row) for row in budget_mod.CLIENT_RESIDUALS)


def test_traffic_clock_follows_its_knobs() -> None:
    # P 2, K 2, T 1: 2*2 + 1 = 5; a min-event-sync below the 5 s literal changes nothing, above it counts
    fast = traffic_budget(**{**TRAFFIC, "probe_period": 2, "failure_threshold": 2, "probe_timeout": 1})
    assert fast.term("probe detection").seconds == 5
    assert traffic_budget(**TRAFFIC, min_event_sync=1).term("external-dns event sync").seconds == 6
    assert traffic_budget(**TRAFFIC, min_event_sync=10).term("external-dns event sync").seconds == 11
    assert traffic_budget(**{**TRAFFIC, "vantage_points": 5}).term("probe detection").how.startswith(
        "a majority (3 of 5")
    with pytest.raises(ValueError):
        traffic_budget(**{**TRAFFIC, "vantage_points": 0})
    with pytest.raises(ValueError):
        traffic_budget(**{**TRAFFIC, "mode": "route53"})


def test_the_controller_and_external_dns_render_what_the_budget_counts() -> None:
    from components.traffic import docs as traffic_docs
    from components.traffic import failover_docs

    assert failover_docs.DECISION_PERIOD_SECONDS == budget_mod.CONTROLLER_DECISION_SECONDS
    assert traffic_docs.MIN_EVENT_SYNC_SECONDS == budget_mod.EXTERNAL_DNS_MIN_EVENT_SYNC_SECONDS


def test_capacity_clock_has_no_dns_terms() -> None:
    names = [t.name for t in budget(sync_modes=["Push"]).terms]
    assert not {"status refresh", "external-dns sync", "DNS TTL"} & set(names)


def test_tenant_clock_follows_placement() -> None:
    cap = budget(sync_modes=["Push"], bindings_per_cluster=50, pod_start_seconds=60)  # 243.33
    small = budget(sync_modes=["Push"])  # 85.33
    traffic = traffic_budget(**TRAFFIC)  # >= 86
    rows = tenant_rtos({"a": cap, "b": cap, "c": small}, traffic,
                       [("a", "Duplicated"), ("b", "Divided"), ("c", "Divided")], cap)
    assert [(r.tenant, r.clock, r.seconds) for r in rows] == [
        ("a", "traffic", 86), ("b", "max(traffic, capacity) = capacity", pytest.approx(243.33)),
        ("c", "max(traffic, capacity) = traffic", 86)]
    (fleet,) = tenant_rtos({}, traffic, [], cap)
    assert fleet.tenant == "(no tenants)" and fleet.seconds == pytest.approx(243.33)
    (no_dns,) = tenant_rtos({"a": small}, None, [("a", "Duplicated")], cap)
    assert no_dns.clock.startswith("capacity") and no_dns.seconds == pytest.approx(85.33)


def test_lb_health_check_is_not_a_budget_term() -> None:
    assert not any("health" in t.name.lower() or "lb" in t.name.lower() for t in budget(sync_modes=["Push"]).terms)


@pytest.mark.parametrize(
    ("interval", "timeout", "retries", "expected"),
    [
        (5, 3, 2, 18),  # 5*(2+1) + 3 = 18
        (10, 10, 0, 20),  # 10*(0+1) + 10 = 20
        (3, 1, 5, 19),  # 3*(5+1) + 1 = 19
    ],
)
def test_lb_detection_seconds(interval: int, timeout: int, retries: int, expected: int) -> None:
    hc = HealthCheckConfig(interval=interval, timeout=timeout, retries=retries)
    assert lb_detection_seconds(hc) == expected


# ------------------------------------------------------------------------------------------ RTO


def _report(capacity: Budget, traffic: TrafficBudget | None, placements: list[tuple[str, str]]) -> FailoverReport:
    return FailoverReport(capacity=capacity, traffic=traffic,
                          tenants=tenant_rtos({}, traffic, placements, capacity))


def test_rto_pass_at_and_above_total() -> None:
    # Push, N = 1: 84 + 0.03 + 1.3 = 85.33 <= 86 for a Divided tenant (traffic 96 > capacity: 96 is checked)
    report = _report(budget(sync_modes=["Push"]), None, [("t", "Divided")])
    check_rto(report, 86)
    check_rto(report, None)
    exact = Budget(terms=(Term("a", 100, ""), Term("b", 200, "")), sync_mode="Push")
    check_rto(_report(exact, None, [("t", "Divided")]), 300)  # 100 + 200 = 300 is not over 300


def test_rto_fail_message_names_tenant_clock_two_largest_terms_and_knobs() -> None:
    # Push, N = 50, pod 60: 84 + 0 + 0 + 98 + 0.03 + 1.3 + 60 = 243.33 > 200 for the Divided tenant
    report = _report(budget(sync_modes=["Push"], bindings_per_cluster=50, pod_start_seconds=60),
                     traffic_budget(**TRAFFIC), [("web", "Duplicated"), ("search", "Divided")])
    with pytest.raises(ValueError) as err:
        check_rto(report, 200)
    assert str(err.value) == (
        "failover.rtoSeconds: tenant search (Divided, max(traffic, capacity) = capacity clock) takes 243.33 s, over "
        "rtoSeconds 200 s (largest terms: detection 84 s, eviction queue 98 s); lower "
        "clusterStatusUpdateFrequency/bindingsPerCluster or raise resourceEvictionRate"
    )


def test_rto_of_a_duplicated_tenant_is_the_traffic_clock() -> None:
    # the capacity clock (243.33) does not count for a Duplicated tenant: >= 86 <= 100 passes; 80 names traffic terms
    report = _report(budget(sync_modes=["Push"], bindings_per_cluster=50, pod_start_seconds=60),
                     traffic_budget(**TRAFFIC), [("web", "Duplicated")])
    check_rto(report, 100)
    with pytest.raises(ValueError) as err:
        check_rto(report, 80)
    assert str(err.value) == (
        "failover.rtoSeconds: tenant web (Duplicated, traffic clock) takes 86 s, over rtoSeconds 80 s (largest terms: "
        "probe detection 17 s, DNS TTL 60 s); lower dns.failover.probePeriodSeconds/dns.failover.failureThreshold/"
        "dns.failover.probeTimeoutSeconds/dns.ttl"
    )


def test_rto_fail_advice_follows_the_largest_terms() -> None:
    # Push, N = 1: 84 + 600 toleration + 0.03 + 1.3 + 120 pod = 805.33; largest: toleration 600, pod start 120
    report = _report(budget(sync_modes=["Push"], toleration_seconds=[600], pod_start_seconds=120), None,
                     [("t", "Divided")])
    with pytest.raises(ValueError) as err:
        check_rto(report, 300)
    assert str(err.value).endswith(
        "takes 805.33 s, over rtoSeconds 300 s (largest terms: toleration 600 s, pod start 120 s); lower "
        "tenants[].placement.tolerationSeconds/podStartSeconds")


# ------------------------------------------------------------------------------------------ dev stack


def test_dev_stack_budget() -> None:
    # dev: members dev-fsn1-a (Push) and dev-hel1-a (Pull); U 10, F 30, M 5, G 40, R_e 0.5, N 50, pod 60;
    # tenants shop (Duplicated) and search (Divided) set no tolerationSeconds.
    # capacity Push: 84 + 0 + 0 + (50-1)/0.5 = 98 + 0.03 + 1.3 + 60 = 243.33; Pull: 50 + ... = 209.33 -> Push
    # traffic (dns.mode self-hosted, dns.failover defaults P 3 T 2 K 3, ttl 15, 3 hub servers):
    # 11 + 1 + 1 + 1 = 14 authoritative, + 15 = 29 <= 30
    config = load_stack()
    report = failover_budget(config)
    b = report.capacity
    assert b.sync_mode == "Push"
    assert b.members == ("dev-fsn1-a",)
    assert [(t.name, t.seconds) for t in b.terms] == [
        ("detection", 84),
        ("taint", 0),
        ("toleration", 0),
        ("eviction queue", 98),
        ("scheduling", 0.03),
        ("dispatch", 1.3),
        ("pod start", 60),
    ]
    assert b.total == pytest.approx(243.33)
    assert report.traffic is not None and report.traffic.mode == "self-hosted"
    assert report.traffic.authoritative == 14
    assert report.traffic.total == 29 <= 30, "the traffic RTO meets the issue's 30 s"
    assert report.traffic.unknown == ()
    # ledger is Duplicated on one member (maxClusters 1): no copy runs elsewhere, so it waits for capacity too;
    # archive is on failover: manual and never evicted (a footnote, not a row)
    assert [(r.tenant, r.placement, r.seconds) for r in report.tenants] == [
        ("shop", "Duplicated", 29), ("search", "Divided", pytest.approx(243.33)),
        ("ledger", "Duplicated (rescheduled)", pytest.approx(243.33))]


def test_dev_stack_meets_its_rto_and_a_tighter_one_is_refused() -> None:
    # dev declares rtoSeconds 360 and the worst tenant is search at 243.33 (see above): it passes; 200 must not
    config = load_stack()
    assert config.failover.rto_seconds == 360
    check_rto(failover_budget(config), config.failover.rto_seconds)
    with pytest.raises(ValueError, match=r"tenant search .* takes 243\.33 s, over rtoSeconds 200 s"):
        check_rto(failover_budget(config), 200)


def test_no_members_assumes_worse_mode() -> None:
    config = load_stack().model_copy(update={"members": []})
    b = failover_budget(config).capacity
    assert b.sync_mode == "Push" and b.members == () and "no members" in b.note


def test_every_example_stack_meets_the_authoritative_60_s() -> None:
    for stack in ("dev", "prod-hub", "prod-fsn1", "prod-hel1", "prod-ash"):
        traffic = failover_budget(load_stack(stack)).traffic
        assert traffic is not None and traffic.authoritative <= 60, stack


# ------------------------------------------------------------------------------------------ output


def test_fmt_seconds() -> None:
    assert [fmt_seconds(x) for x in (84.0, 0.03, 1.3, 85.33000000001, 49.5)] == ["84", "0.03", "1.3", "85.33", "49.5"]


def test_format_clock_is_a_fixed_width_table() -> None:
    b = budget(sync_modes=["Push"], bindings_per_cluster=50)
    text = format_clock(b)
    lines = text.splitlines()
    assert lines[0].startswith("Capacity RTO (Karmada path), worst case: Push")
    header = lines[1]
    assert header.split() == ["term", "seconds", "how"]
    end = header.index("seconds") + len("seconds")
    rows = lines[3:3 + len(b.terms)]
    for term, row in zip(b.terms, rows, strict=True):
        assert row.startswith(term.name)
        assert row[:end].rstrip().endswith(fmt_seconds(term.seconds))  # right-aligned under "seconds"
        assert row[end:].strip() == term.how
    # 84 + 98 + 0.03 + 1.3 = 183.33
    assert lines[-1].split() == ["total", "183.33"]
    assert lines[-1].index("183.33") + len("183.33") == end


def test_format_budget_shows_both_clocks_and_the_tenants() -> None:
    text = format_budget(failover_budget(load_stack()))
    traffic, clients, capacity, tenants, *_footnotes = text.split("\n\n")  # footnotes: manual tenants, descheduler
    lines = traffic.splitlines()
    assert lines[0].startswith("Traffic RTO") and lines[0].endswith("dns.mode self-hosted")
    auth = next(line for line in lines if line.startswith("authoritative answer without the dead region"))
    total = next(line for line in lines if line.startswith("traffic RTO, client caches included"))
    assert auth.split()[-1] == "14" and total.split()[-1] == "29"
    assert clients.splitlines()[0].startswith("What clients add") and "Chromium" in clients and "Java" in clients
    assert lines.index(auth) < next(i for i, line in enumerate(lines) if line.startswith("DNS TTL")) < lines.index(
        total)
    assert capacity.splitlines()[-1].split() == ["total", "243.33"]
    assert tenants.splitlines()[0] == "RTO per tenant placement (failover.rtoSeconds: 360 s)"
    assert tenants.splitlines()[3].split() == ["shop", "Duplicated", "traffic", "29"]


def test_budget_markdown() -> None:
    md = budget_markdown(failover_budget(load_stack())).splitlines()
    assert md[0].startswith("**Traffic RTO")
    assert md[2] == "| term | seconds | how |"
    assert "| *authoritative answer without the dead region* | *14* | |" in md
    assert "| **traffic RTO, client caches included** | **29** | |" in md
    assert "| client | adds | source |" in md
    assert "| **total** | **243.33** | |" in md
    assert "| search | Divided | max(traffic, capacity) = capacity | 243.33 |" in md


# ------------------------------------------------------------------------------ one hub server lost


def test_a_lost_hub_server_can_stall_a_pull_lease_past_the_default_grace() -> None:
    """The defaults (grace 40, lease 40, client-go's 30 + 15): a renewal on a connection to the dead server's
    karmada-apiserver hangs until the HTTP/2 health check drops it, then redials: 10 + 30 + 15 + 10 = 65 s."""
    loss = budget_mod.hub_server_loss(grace=40, lease_duration=40, servers=3)
    assert loss.stall == 65 and loss.margin == -25
    text = loss.footnote()
    assert "max(10 + 30 + 15 + 10, 10 + 40) = 65 s" in text and "25 s over clusterMonitorGracePeriod 40 s" in text
    assert "clusterMonitorGracePeriod >= 66 s adds 26 s to Pull detection" in text
    # what each lever buys
    assert budget_mod.hub_server_loss(grace=40, lease_duration=40, servers=3, read_idle=10, ping_timeout=5).stall == 50
    assert budget_mod.hub_server_loss(grace=70, lease_duration=40, servers=3).margin == 5
    assert "within clusterMonitorGracePeriod 70 s (margin 5 s)" in budget_mod.hub_server_loss(
        grace=70, lease_duration=40, servers=3).footnote()
    with pytest.raises(ValueError):
        budget_mod.hub_server_loss(grace=40, lease_duration=40, servers=0)


def test_the_budget_says_it_for_pull_fleets_only() -> None:
    dev = budget_mod.failover_budget(load_stack("dev"))
    assert any(f.startswith("one hub server lost without a reset") for f in dev.footnotes)
    assert "one hub server lost" in budget_mod.format_budget(dev) and "one hub server lost" in \
        budget_mod.budget_markdown(dev)
    push_only = load_stack("dev", members=[{**{k: v for k, v in m.items() if k != "clusterId"}, "syncMode": "Push"}
                                           for m in _dev_members()])  # clusterId is a Pull member's only
    assert not any(f.startswith("one hub server lost") for f in budget_mod.failover_budget(push_only).footnotes)
    tuned = load_stack("dev", failover={**_dev_failover(), "clientReadIdleSeconds": 10, "clientPingTimeoutSeconds": 5})
    assert any("max(10 + 10 + 5 + 10, 10 + 40) = 50 s" in f for f in budget_mod.failover_budget(tuned).footnotes)


def _dev_members() -> list[dict[str, Any]]:
    from tests.support.tools import stack_values

    return list(stack_values("dev")[0]["members"])


def _dev_failover() -> dict[str, Any]:
    from tests.support.tools import stack_values

    return dict(stack_values("dev")[0]["failover"])
