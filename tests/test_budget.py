"""Tests for the failover budget: each case is worked by hand in the comments, per fleet-capi-failover.md §2.6."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.config import HealthCheckConfig
from components.operations.budget import (
    Budget,
    Term,
    budget_markdown,
    check_rto,
    compute_budget,
    eviction_queue_seconds,
    failover_budget,
    fmt_seconds,
    format_budget,
    lb_detection_seconds,
    max_toleration_seconds,
    pull_lease_detection_seconds,
    push_detection_seconds,
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


# ------------------------------------------------------------------------------------------ DNS


def test_dns_terms_follow_pod_start() -> None:
    # Push, N = 1, pod 60, refresher 15, DNS interval 60 + TTL 30: 84 + 0.03 + 1.3 + 60 + 15 + 60 + 30 = 250.33
    b = budget(sync_modes=["Push"], pod_start_seconds=60, dns_interval_seconds=60, dns_ttl_seconds=30,
               status_refresh_seconds=15)
    names = [t.name for t in b.terms]
    assert names[-4:] == ["pod start", "status refresh", "external-dns sync", "DNS TTL"]
    assert b.term("status refresh").seconds == 15
    assert b.term("external-dns sync").seconds == 60
    assert b.term("DNS TTL").seconds == 30
    assert b.total == pytest.approx(250.33)


def test_no_dns_no_traffic_terms() -> None:
    names = [t.name for t in budget(sync_modes=["Push"]).terms]
    assert not {"status refresh", "external-dns sync", "DNS TTL"} & set(names)


def test_dns_half_set_is_rejected() -> None:
    with pytest.raises(ValueError):
        budget(sync_modes=["Push"], dns_interval_seconds=60)
    with pytest.raises(ValueError, match="set together"):
        budget(sync_modes=["Push"], dns_interval_seconds=60, dns_ttl_seconds=30)


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


def test_rto_pass_at_and_above_total() -> None:
    # Push, N = 1: 84 + 0.03 + 1.3 = 85.33 <= 86, and None means no RTO declared
    b = budget(sync_modes=["Push"])
    check_rto(b, 86)
    check_rto(b, None)
    exact = Budget(terms=(Term("a", 100, ""), Term("b", 200, "")), sync_mode="Push")
    check_rto(exact, 300)  # 100 + 200 = 300 is not over 300


def test_rto_fail_message_names_two_largest_terms_and_knobs() -> None:
    # Push, N = 50, pod 60: 84 + 0 + 0 + 98 + 0.03 + 1.3 + 60 = 243.33 > 200
    b = budget(sync_modes=["Push"], bindings_per_cluster=50, pod_start_seconds=60)
    with pytest.raises(ValueError) as err:
        check_rto(b, 200)
    assert str(err.value) == (
        "failover.rtoSeconds: worst case 243.33 s exceeds rtoSeconds 200 s (largest terms: detection 84 s, "
        "eviction queue 98 s); lower clusterStatusUpdateFrequency/bindingsPerCluster or raise resourceEvictionRate"
    )


def test_rto_fail_advice_follows_the_largest_terms() -> None:
    # Push, N = 1: 84 + 600 toleration + 0.03 + 1.3 + 120 pod = 805.33; largest: toleration 600, pod start 120
    b = budget(sync_modes=["Push"], toleration_seconds=[600], pod_start_seconds=120)
    with pytest.raises(ValueError) as err:
        check_rto(b, 300)
    assert str(err.value) == (
        "failover.rtoSeconds: worst case 805.33 s exceeds rtoSeconds 300 s (largest terms: toleration 600 s, "
        "pod start 120 s); lower tenants[].placement.tolerationSeconds/podStartSeconds"
    )


# ------------------------------------------------------------------------------------------ dev stack


def test_dev_stack_budget() -> None:
    # dev: members dev-fsn1-a (Push) and dev-hel1-a (Pull); U 10, F 30, M 5, G 40, R_e 0.5, N 50, pod 60;
    # tenants shop/search set no tolerationSeconds; dns refresh 15, interval 60, ttl 30.
    # Push: 84 + 0 + 0 + (50-1)/0.5 = 98 + 0.03 + 1.3 + 60 + 15 + 60 + 30 = 348.33
    # Pull: 50 + 0 + 0 + 98 + 0.03 + 1.3 + 60 + 15 + 60 + 30 = 314.33 -> Push is worst
    config = load_stack()
    b = failover_budget(config)
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
        ("status refresh", 15),
        ("external-dns sync", 60),
        ("DNS TTL", 30),
    ]
    assert b.total == pytest.approx(348.33)


def test_dev_stack_meets_its_rto_and_a_tighter_one_is_refused() -> None:
    # dev declares rtoSeconds 360 and the worst case is 348.33 (see above): it passes; 300 must be refused
    config = load_stack()
    assert config.failover.rto_seconds == 360
    check_rto(failover_budget(config), config.failover.rto_seconds)
    with pytest.raises(ValueError, match=r"worst case 348\.33 s exceeds rtoSeconds 300 s"):
        check_rto(failover_budget(config), 300)


def test_no_members_assumes_worse_mode() -> None:
    config = load_stack().model_copy(update={"members": []})
    b = failover_budget(config)
    assert b.sync_mode == "Push" and b.members == () and "no members" in b.note


# ------------------------------------------------------------------------------------------ output


def test_fmt_seconds() -> None:
    assert [fmt_seconds(x) for x in (84.0, 0.03, 1.3, 85.33000000001, 49.5)] == ["84", "0.03", "1.3", "85.33", "49.5"]


def test_format_budget_is_a_fixed_width_table() -> None:
    b = budget(sync_modes=["Push"], bindings_per_cluster=50, dns_interval_seconds=60, dns_ttl_seconds=30,
               status_refresh_seconds=15)
    text = format_budget(b)
    lines = text.splitlines()
    assert lines[0].startswith("Failover budget, worst case: Push")
    header = lines[1]
    assert header.split() == ["term", "seconds", "how"]
    end = header.index("seconds") + len("seconds")
    rows = lines[3:3 + len(b.terms)]
    for term, row in zip(b.terms, rows, strict=True):
        assert row.startswith(term.name)
        assert row[:end].rstrip().endswith(fmt_seconds(term.seconds))  # right-aligned under "seconds"
        assert row[end:].strip() == term.how
    # 84 + 98 + 0.03 + 1.3 + 15 + 60 + 30 = 288.33
    assert lines[-1].split() == ["total", "288.33"]
    assert lines[-1].index("288.33") + len("288.33") == end


def test_budget_markdown() -> None:
    b = budget(sync_modes=["Pull"])
    md = budget_markdown(b).splitlines()
    assert md[2] == "| term | seconds | how |"
    assert len(md) == 4 + len(b.terms) + 1
    assert md[-1] == "| **total** | **51.03** | |"  # 50 + 0.03 + 1.0 = 51.03
    assert md[4].startswith("| detection | 50 | ")
