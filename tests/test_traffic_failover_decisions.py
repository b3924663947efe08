"""agents/traffic_failover.py's decisions, without a network or a clock: which names are published, who votes,
when a region is withdrawn and when it comes back, what is never done (withdraw the last region, write an empty
list, delete a name while the Ingresses cannot be read), and the leader's pass against an in-memory API server.

tests/test_traffic_failover.py runs the same controller for real (probers, leader election, DNS answers); these are
the tests the mutation run (bench/mutation, target `dns-failover`) runs against every mutant of the decisions.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agents import traffic_failover as tf

DOMAIN = "dev.example.com"
HOST = "shop.dev.example.com"
REGIONS = {"fsn": "192.0.2.10", "hel": "192.0.2.20", "ash": "192.0.2.30"}
NOW = 1_000_000.0
KW: dict[str, Any] = {"vantage_points": 3, "failure_threshold": 3, "success_threshold": 6, "hold_down": 60,
                      "now": NOW}


def votes(**regions: list[tuple[int, int]]) -> dict[str, list[tf.Vote]]:
    return {r: [tf.Vote(f, s) for f, s in v] for r, v in regions.items()}


def healthy(*names: str) -> dict[str, list[tf.Vote]]:
    return {r: [tf.Vote(0, 9)] * 3 for r in names}


def ips(*names: str) -> list[str]:
    return [REGIONS[n] for n in names]


# ------------------------------------------------------------------------------------------ names


def _ingress(ns: str, name: str, hosts: list[str], tls: list[str] | None = None, path: str | None = None,
             deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": ns, "name": name}
    if path is not None:
        meta["annotations"] = {tf.PROBE_PATH_ANNOTATION: path}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec: dict[str, Any] = {"rules": [{"host": h} for h in hosts]}
    if tls is not None:
        spec["tls"] = [{"hosts": tls}]
    return {"metadata": meta, "spec": spec}


def test_only_names_under_the_domain_and_outside_the_excluded_subtrees() -> None:
    items = [_ingress("a", "x", ["dev.example.com", "a.dev.example.com", "xdev.example.com", "a.example.com",
                                 "*.dev.example.com", "", " B.Dev.Example.Com. ", "lb.dev.example.com",
                                 "eu.lb.dev.example.com", "notlb.dev.example.com"]),
             {"metadata": {"namespace": "z", "name": "norules"}, "spec": {}},
             {"spec": {"rules": [{"host": "c.dev.example.com"}, {}]}}]
    hosts = tf.published_hosts({"items": items}, DOMAIN, ["lb.dev.example.com"])
    assert sorted(hosts) == ["a.dev.example.com", "b.dev.example.com", "c.dev.example.com", "dev.example.com",
                             "notlb.dev.example.com"]
    assert all(t == tf.Target(h, False, "/") for h, t in hosts.items())
    assert tf.published_hosts({}, DOMAIN) == {}
    assert tf.published_hosts({"items": items}, DOMAIN, ()).keys() >= {"lb.dev.example.com", "eu.lb.dev.example.com"}


def test_an_ingress_being_deleted_publishes_nothing_and_stops_nothing() -> None:
    items = [_ingress("a", "x", [HOST], deleting=True), _ingress("b", "y", ["other.dev.example.com"])]
    assert list(tf.published_hosts({"items": items}, DOMAIN)) == ["other.dev.example.com"]


def test_ingresses_are_read_in_namespace_then_name_order_missing_ones_first() -> None:
    """The first probe-path annotation wins, in (namespace, name) order; a missing namespace or name sorts as ""."""
    def ing(meta: dict[str, Any], path: str) -> dict[str, Any]:
        return {"metadata": {**meta, "annotations": {tf.PROBE_PATH_ANNOTATION: path}},
                "spec": {"rules": [{"host": HOST}]}}

    by_namespace = [ing({"namespace": "0", "name": "a"}, "/zero"), ing({"name": "a"}, "/none")]
    assert tf.published_hosts({"items": by_namespace}, DOMAIN)[HOST].path == "/none"
    by_name = [ing({"namespace": "a", "name": "0"}, "/zero"), ing({"namespace": "a"}, "/none")]
    assert tf.published_hosts({"items": by_name}, DOMAIN)[HOST].path == "/none"
    reversed_input = [ing({"namespace": "b", "name": "a"}, "/b"), ing({"namespace": "a", "name": "b"}, "/a")]
    assert tf.published_hosts({"items": reversed_input}, DOMAIN)[HOST].path == "/a"
    names = [ing({"namespace": "a", "name": "b"}, "/b"), ing({"namespace": "a", "name": "a"}, "/a")]
    assert tf.published_hosts({"items": names}, DOMAIN)[HOST].path == "/a"


def test_tls_if_any_ingress_terminates_it_and_the_first_probe_path_in_name_order() -> None:
    items = [
        _ingress("b", "late", [HOST], path="/late"),
        _ingress("a", "plain", [HOST]),
        _ingress("a", "tls", [HOST], tls=[HOST], path="/healthz"),
        _ingress("c", "bad-path", ["other.dev.example.com"], path="healthz"),
        _ingress("c", "blank", ["third.dev.example.com"], path="  /ready  "),
    ]
    hosts = tf.published_hosts({"items": items}, DOMAIN)
    assert hosts == {HOST: tf.Target(HOST, True, "/healthz"),
                     "other.dev.example.com": tf.Target("other.dev.example.com", False, "/"),
                     "third.dev.example.com": tf.Target("third.dev.example.com", False, "/ready")}
    # TLS sticks once any Ingress has it, whatever the order
    later_tls = [_ingress("a", "tls", [HOST], tls=[HOST]), _ingress("b", "plain", [HOST])]
    assert tf.published_hosts({"items": later_tls}, DOMAIN)[HOST].tls is True
    # a metadata-less Ingress sorts first (namespace "", name "")
    anonymous = [_ingress("a", "x", [HOST], path="/a"), {"spec": {"rules": [{"host": HOST}]},
                                                         "metadata": {"annotations": {tf.PROBE_PATH_ANNOTATION: "/z"}}}]
    assert tf.published_hosts({"items": anonymous}, DOMAIN)[HOST].path == "/z"
    assert tf.Target(HOST) == tf.Target(HOST, False, "/") and tf.Target("a") < tf.Target("b")


def test_region_addresses_are_ipv4_from_the_configmap_named_for_the_region() -> None:
    """The region is the one the ConfigMap's name says (what the hub grants that region's identity); its label must
    say the same, its data must hold an IPv4 address, and one being deleted does not count."""
    def cm(name: str | None, region: str | None, ip: Any, **meta: Any) -> dict[str, Any]:
        labels = {tf.REGION_LABEL: region} if region is not None else {}
        metadata = {"labels": labels, **meta} if name is None else {"name": name, "labels": labels, **meta}
        return {"metadata": metadata, "data": {} if ip is None else {"lbIpv4": ip}}

    items = [cm("traffic-region-hel", "hel", "2001:db8::1"), cm("traffic-region-ash", "ash", "nope"),
             cm("traffic-region-sin", "sin", "192.0.2.60"), cm("traffic-region-fsn", "fsn", "192.0.2.10"),
             cm("traffic-region-nbg", "fsn", "192.0.2.66"), cm("traffic-region-par", None, "192.0.2.40"),
             cm("traffic-region-", "", "192.0.2.50"), cm("fsn", "fsn", "192.0.2.67"), cm(None, "", "192.0.2.68"),
             cm("region-lon", "lon", "192.0.2.69"), cm("traffic-region-ams", "ams", None),
             cm("traffic-region-mad", "mad", "192.0.2.70", deletionTimestamp="2026-01-01T00:00:00Z"),
             {"metadata": None, "data": None}]
    found = tf.region_addresses({"items": items})
    assert found == {"fsn": "192.0.2.10", "sin": "192.0.2.60"}, "a label naming another region is no claim on it"
    assert list(found) == ["fsn", "sin"], "sorted by region"
    assert tf.region_addresses({}) == {}
    # should two still name one region, the newest wins (creationTimestamp, then name); a tie keeps the first
    older = cm("traffic-region-fsn", "fsn", "192.0.2.11", creationTimestamp="2026-01-01T00:00:00Z")
    newer = cm("traffic-region-fsn", "fsn", "192.0.2.12", creationTimestamp="2026-01-02T00:00:00Z")
    assert tf.region_addresses({"items": [newer, older]}) == {"fsn": "192.0.2.12"}
    assert tf.region_addresses({"items": [older, newer]}) == {"fsn": "192.0.2.12"}
    twin = cm("traffic-region-fsn", "fsn", "192.0.2.13", creationTimestamp="2026-01-01T00:00:00Z")
    assert tf.region_addresses({"items": [older, twin]}) == {"fsn": "192.0.2.11"}
    assert (tf.REGION_LABEL, tf.REGION_IP_KEY, tf.REGION_CONFIGMAP_PREFIX) == (
        "karmada-hub.io/traffic-region", "lbIpv4", "traffic-region-")


# ------------------------------------------------------------------------------------------ counts and votes


def test_counters_count_in_a_row() -> None:
    c = tf.Counter()
    assert (c.failures, c.successes, c.error) == (0, 0, "")
    for error in ("HTTP 502", "connect: ConnectionRefusedError"):
        c.record(error)
    assert (c.failures, c.successes, c.error) == (2, 0, "connect: ConnectionRefusedError")
    c.record(None)
    c.record(None)
    assert (c.failures, c.successes, c.error) == (0, 2, "")
    c.record("x")
    assert (c.failures, c.successes, c.error) == (1, 0, "x")
    assert tf.obs_key(HOST, "fsn") == f"{HOST} fsn"


def test_a_majority_is_more_than_half_of_all_vantage_points() -> None:
    assert [tf.majority(n) for n in range(1, 8)] == [1, 2, 2, 3, 3, 4, 4]


# ------------------------------------------------------------------------------------------ decide


def test_a_region_goes_at_the_failure_threshold_of_a_majority() -> None:
    at = tf.decide(HOST, REGIONS, ips("fsn", "hel"), {**votes(fsn=[(3, 0), (3, 0), (0, 1)]), **healthy("hel")}, {},
                   **KW)
    assert at is not None and (at.regions, at.targets, at.changed) == (("hel",), ("192.0.2.20",), True)
    assert at.withdrawn == {"fsn": tf.format_time(NOW)} and not at.fail_open and at.host == HOST
    below = tf.decide(HOST, REGIONS, ips("fsn", "hel"), {**votes(fsn=[(2, 0)] * 3), **healthy("hel")}, {}, **KW)
    assert below is not None and below.regions == ("fsn", "hel") and not below.changed and below.withdrawn == {}
    minority = tf.decide(HOST, REGIONS, ips("fsn", "hel"), {**votes(fsn=[(9, 0), (0, 9), (0, 9)]),
                                                              **healthy("hel")}, {}, **KW)
    assert minority is not None and minority.regions == ("fsn", "hel")


def test_stale_vantage_points_never_make_a_majority() -> None:
    """Two of five vantage points report: a majority of five is three, so nothing moves either way."""
    kw = {**KW, "vantage_points": 5}
    two = tf.decide(HOST, REGIONS, ips("fsn", "hel"), {**votes(fsn=[(9, 0)] * 2), **votes(hel=[(0, 9)] * 2)}, {},
                    **kw)
    assert two is not None and two.regions == ("fsn", "hel")
    three = tf.decide(HOST, REGIONS, ips("fsn", "hel"), {**votes(fsn=[(9, 0)] * 3), **votes(hel=[(0, 9)] * 3)}, {},
                      **kw)
    assert three is not None and three.regions == ("hel",)
    assert tf.decide(HOST, REGIONS, [], votes(fsn=[(0, 9)] * 2), {}, **kw) is None


def test_a_region_comes_back_at_the_success_threshold_after_the_hold_down() -> None:
    back = {**votes(fsn=[(0, 6), (0, 6), (1, 0)]), **healthy("hel")}
    gone = {"fsn": tf.format_time(NOW - 60)}
    restored = tf.decide(HOST, REGIONS, ips("hel"), back, gone, **KW)
    assert restored is not None and restored.regions == ("fsn", "hel") and restored.changed
    assert restored.targets == ("192.0.2.10", "192.0.2.20") and restored.withdrawn == {}
    held = tf.decide(HOST, REGIONS, ips("hel"), back, {"fsn": tf.format_time(NOW - 59.5)}, **KW)
    assert held is not None and held.regions == ("hel",) and not held.changed
    assert held.withdrawn == {"fsn": tf.format_time(NOW - 59.5)}, "the withdrawal time is kept, not renewed"
    short = tf.decide(HOST, REGIONS, ips("hel"), {**votes(fsn=[(0, 5)] * 3), **healthy("hel")}, gone, **KW)
    assert short is not None and short.regions == ("hel",)
    never_withdrawn = tf.decide(HOST, REGIONS, ips("hel"), back, {}, **KW)
    assert never_withdrawn is not None and never_withdrawn.regions == ("fsn", "hel")


def test_the_last_region_stays_and_says_so() -> None:
    dead = votes(fsn=[(5, 0)] * 3, hel=[(5, 0)] * 3, ash=[(5, 0)] * 3)
    withdrawn = {"ash": "2026-01-01T00:00:00.000000Z"}
    kept = tf.decide(HOST, REGIONS, ips("hel", "fsn"), dead, withdrawn, **KW)
    assert kept is not None
    assert (kept.regions, kept.targets, kept.fail_open, kept.changed) == (
        ("fsn", "hel"), ("192.0.2.10", "192.0.2.20"), True, False)
    assert kept.withdrawn == withdrawn and kept.withdrawn is not withdrawn
    # an address nobody knows any more is still kept, and it is still fail-open
    unknown = tf.decide(HOST, REGIONS, ["198.51.100.7"], dead, {}, **KW)
    assert unknown is not None and unknown.targets == ("198.51.100.7",) and unknown.regions == ()
    assert unknown.fail_open
    assert tf.decide(HOST, REGIONS, [], dead, {}, **KW) is None, "nothing was ever published: nothing to keep"


def test_a_new_name_is_published_with_the_regions_that_serve_it() -> None:
    new = tf.decide(HOST, REGIONS, [], {**healthy("fsn", "ash"), **votes(hel=[(0, 2)] * 3)}, {}, **KW)
    assert new is not None and (new.regions, new.targets, new.changed) == (
        ("ash", "fsn"), ("192.0.2.10", "192.0.2.30"), True)


def test_withdrawal_marks_forget_regions_that_are_back_or_gone() -> None:
    withdrawn = {"fsn": tf.format_time(NOW - 100), "old": tf.format_time(NOW - 100), "ash": tf.format_time(NOW - 1)}
    d = tf.decide(HOST, REGIONS, ips("hel"), {**healthy("fsn", "hel", "ash")}, withdrawn, **KW)
    assert d is not None and d.regions == ("fsn", "hel")
    assert d.withdrawn == {"ash": tf.format_time(NOW - 1)}, "fsn is back, old is no region any more"


def test_pending_until_published_or_every_region_voted_down() -> None:
    p = {"vantage_points": 3, "failure_threshold": 3}
    assert tf.pending(HOST, REGIONS, votes(fsn=[(3, 0)] * 3, hel=[(3, 0)] * 3), **p), "ash not voted down"
    assert not tf.pending(HOST, REGIONS, votes(fsn=[(3, 0)] * 2, hel=[(3, 0)] * 2, ash=[(3, 0)] * 2), **p)
    assert tf.pending(HOST, REGIONS, votes(fsn=[(3, 0)] * 3, hel=[(3, 0)] * 3, ash=[(2, 0)] * 3), **p)
    assert tf.pending(HOST, REGIONS, votes(fsn=[(3, 0)], hel=[(3, 0)], ash=[(3, 0)]), **p)
    assert not tf.pending(HOST, {}, {}, **p)


def test_the_dnsendpoint_document() -> None:
    d = tf.Decision(HOST, ("fsn", "hel"), ("192.0.2.10", "192.0.2.20"), {"b": "t2", "a": "t1"})
    assert tf.dnsendpoint("ns", d, 60) == {
        "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSEndpoint",
        "metadata": {"name": HOST, "namespace": "ns", "labels": {"app.kubernetes.io/managed-by":
                                                                  "karmada-hub-traffic-failover"},
                     "annotations": {"karmada-hub.io/withdrawn": '{"a": "t1", "b": "t2"}'}},
        "spec": {"endpoints": [{"dnsName": HOST, "recordType": "A", "recordTTL": 60,
                                "targets": ["192.0.2.10", "192.0.2.20"]}]},
    }
    open_ = tf.dnsendpoint("ns", tf.Decision(HOST, (), ("192.0.2.10",), fail_open=True), 30, "42")
    assert open_["metadata"]["annotations"] == {"karmada-hub.io/withdrawn": "{}", "karmada-hub.io/fail-open": "true"}
    assert open_["metadata"]["resourceVersion"] == "42" and open_["spec"]["endpoints"][0]["recordTTL"] == 30
    with pytest.raises(ValueError, match="refusing to write an empty target list"):
        tf.dnsendpoint("ns", tf.Decision(HOST, (), ()), 60)


def test_times_round_trip_with_and_without_fractions() -> None:
    assert tf.format_time(NOW + 0.25) == "1970-01-12T13:46:40.250000Z"
    assert tf.parse_time(tf.format_time(NOW + 0.25)) == NOW + 0.25
    assert tf.parse_time("1970-01-12T13:46:40Z") == NOW


# ------------------------------------------------------------------------------------------ the leader's pass


class FakeHost:
    """The host API server as the controller uses it: Leases and DNSEndpoints in memory."""

    def __init__(self) -> None:
        self.leases: list[dict[str, Any]] = []
        self.endpoints: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, str]] = []
        self.rv = 100
        self.clock = {"wall": NOW}
        self.fail: set[tuple[str, str]] = set()
        """(method, name) pairs answered with a 409."""

    def request(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        self.calls.append((method, path))
        base = tf.DNSENDPOINTS_PATH.format(namespace="ns")
        if path.startswith(tf.LEASES_PATH.format(namespace="ns")) and method == "GET":
            assert path.endswith(f"?labelSelector={tf.VANTAGE_LABEL}")
            return {"items": self.leases}
        if path == f"{base}?labelSelector=app.kubernetes.io/managed-by%3Dkarmada-hub-traffic-failover":
            assert method == "GET", method
            return {"items": list(self.endpoints.values())}
        self.rv += 1
        target = body["metadata"]["name"] if method == "POST" else path.rsplit("/", 1)[-1]
        if (method, target) in self.fail:
            raise tf.ApiError(409, path, "conflict")
        if method == "POST" and path == base:
            assert body["metadata"]["name"] not in self.endpoints
            self.endpoints[body["metadata"]["name"]] = {**body, "metadata": {**body["metadata"],
                                                                             "resourceVersion": str(self.rv)}}
            return self.endpoints[body["metadata"]["name"]]
        name = path.rsplit("/", 1)[-1]
        if method == "PUT":
            assert body["metadata"]["resourceVersion"] == self.endpoints[name]["metadata"]["resourceVersion"]
            self.endpoints[name] = {**body, "metadata": {**body["metadata"], "resourceVersion": str(self.rv)}}
            return self.endpoints[name]
        if method == "DELETE":
            del self.endpoints[name]
            return {}
        raise tf.ApiError(404, path, "not here")

    def vantage(self, name: str, rv: str, obs: dict[str, list[Any]] | str, renewed: str | None = None) -> None:
        """A vantage Lease renewed now (the fixture's wall clock) unless `renewed` says otherwise."""
        annotations = {tf.OBSERVATIONS_ANNOTATION: obs if isinstance(obs, str) else json.dumps({"obs": obs})}
        renew = tf.format_time(self.clock["wall"]) if renewed is None else renewed
        lease = {"metadata": {"name": name, "resourceVersion": rv, "annotations": annotations},
                 "spec": {"renewTime": renew}}
        self.leases = [x for x in self.leases if x["metadata"]["name"] != name] + [lease]


def settings(**changes: Any) -> tf.Settings:
    base: dict[str, Any] = dict(namespace="ns", vantage="cp-0", identity="pod-0", domain=DOMAIN, exclude=(),
                                ttl=60, period=5.0, timeout=2.0, attempts=2, failure_threshold=3,
                                success_threshold=6, hold_down=60.0, vantage_points=3, decision_period=1.0,
                                lease_duration=15.0, http_port=80, https_port=443)
    return tf.Settings(**{**base, **changes})


@pytest.fixture
def leader(monkeypatch: pytest.MonkeyPatch) -> Any:
    clock = {"mono": 1000.0, "wall": NOW}
    monkeypatch.setattr(tf.time, "monotonic", lambda: clock["mono"])
    monkeypatch.setattr(tf.time, "time", lambda: clock["wall"])
    host = FakeHost()
    host.clock = clock
    controller = tf.Controller(settings(), None, host)  # type: ignore[arg-type]
    return controller, host, clock


def names(host: FakeHost) -> dict[str, dict[str, Any]]:
    """The names' DNSEndpoints, without the regions' drill records."""
    return {n: e for n, e in host.endpoints.items() if tf.REGION_LABEL not in e["metadata"]["labels"]}


def region_records(host: FakeHost) -> dict[str, list[str]]:
    return {n: e["spec"]["endpoints"][0]["targets"] for n, e in host.endpoints.items()
            if tf.REGION_LABEL in e["metadata"]["labels"]}


def _vote_all(host: FakeHost, rv: str, **regions: tuple[int, int]) -> None:
    for i in range(3):
        host.vantage(f"v{i}", f"{rv}-{i}", {tf.obs_key(HOST, r): [f, s, ""] for r, (f, s) in regions.items()})


def test_fresh_votes_come_from_leases_that_changed_within_three_periods_and_a_pass(leader: Any) -> None:
    controller, host, clock = leader
    host.vantage("v0", "1", {tf.obs_key(HOST, "fsn"): [3, 0, "HTTP 502"], tf.obs_key("b.x", "hel"): [0, 7]})
    host.vantage("v1", "1", "not json")
    host.vantage("v2", "1", {})
    assert controller.fresh_votes() == {HOST: {"fsn": [tf.Vote(3, 0)]}, "b.x": {"hel": [tf.Vote(0, 7)]}}
    clock["mono"] += 3 * 5.0 + 1.0  # exactly three periods and a decision period: still fresh
    assert controller.fresh_votes()[HOST] == {"fsn": [tf.Vote(3, 0)]}
    clock["mono"] += 0.001
    assert controller.fresh_votes() == {}, "the Lease did not change: that vantage point abstains"
    host.vantage("v0", "2", {tf.obs_key(HOST, "fsn"): [4, 0, "x"]})
    assert controller.fresh_votes() == {HOST: {"fsn": [tf.Vote(4, 0)]}}, "a new resourceVersion is fresh again"


def test_a_lease_first_seen_is_as_old_as_its_renew_time_less_the_tolerated_skew(leader: Any) -> None:
    """A new leader dates a vantage Lease it never saw change by its renewTime (less CLOCK_SKEW_SECONDS), never
    fresher than now: a prober that died long ago does not vote for the next three periods."""
    controller, host, clock = leader
    obs = {tf.obs_key(HOST, "fsn"): [9, 0, ""]}
    assert tf.CLOCK_SKEW_SECONDS == 2.0 and controller.stale_after() == 3 * 5.0 + 1.0
    host.vantage("recent", "1", obs, renewed=tf.format_time(NOW - 10))   # 10 - 2 = 8 s old
    host.vantage("skewed", "1", obs, renewed=tf.format_time(NOW - 1.5))  # within the skew: now
    host.vantage("ahead", "1", obs, renewed=tf.format_time(NOW + 30))    # a clock ahead: never fresher than now
    host.vantage("dead", "1", obs, renewed=tf.format_time(NOW - 100))
    host.vantage("edge", "1", obs, renewed=tf.format_time(NOW - 18))     # 18 - 2 = 16 s: the last fresh moment
    host.vantage("blank", "1", obs, renewed="")
    host.vantage("garbage", "1", obs, renewed="yesterday")
    assert controller.fresh_votes() == {HOST: {"fsn": [tf.Vote(9, 0)] * 4}}
    assert {n: clock["mono"] - at for n, (_rv, at) in controller.vantage_seen.items()} == {
        "recent": 8.0, "skewed": 0.0, "ahead": 0.0, "dead": 17.0, "edge": 16.0, "blank": 17.0, "garbage": 17.0}
    clock["mono"] += 8.0
    assert controller.fresh_votes() == {HOST: {"fsn": [tf.Vote(9, 0)] * 3}}, "recent: 16 s, still fresh; edge not"
    clock["mono"] += 0.001
    assert controller.fresh_votes() == {HOST: {"fsn": [tf.Vote(9, 0)] * 2}}
    host.vantage("dead", "2", obs)
    assert len(controller.fresh_votes()[HOST]["fsn"]) == 3, "a Lease seen to change is fresh from then on"


def test_the_leader_publishes_withdraws_and_keeps_what_did_not_change(leader: Any) -> None:
    controller, host, clock = leader
    controller.targets = {HOST: tf.Target(HOST)}
    controller.names_known = True
    controller.regions = {"fsn": "192.0.2.10", "hel": "192.0.2.20"}
    _vote_all(host, "a", fsn=(0, 6), hel=(0, 6))
    assert controller.decide_all() == {"at": tf.format_time(NOW), "pending": 0}
    ep = host.endpoints[HOST]
    assert ep["spec"]["endpoints"][0]["targets"] == ["192.0.2.10", "192.0.2.20"]
    assert ep["spec"]["endpoints"][0]["recordTTL"] == 60
    assert region_records(host) == {"fsn.lb.dev.example.com": ["192.0.2.10"], "hel.lb.dev.example.com": ["192.0.2.20"]}
    calls = len(host.calls)
    controller.decide_all()
    assert [c for c in host.calls[calls:] if c[0] in ("POST", "PUT", "DELETE")] == [], "nothing changed: no write"
    _vote_all(host, "b", fsn=(3, 0), hel=(0, 9))
    controller.decide_all()
    ep = host.endpoints[HOST]
    assert ep["spec"]["endpoints"][0]["targets"] == ["192.0.2.20"]
    assert json.loads(ep["metadata"]["annotations"][tf.WITHDRAWN_ANNOTATION]) == {"fsn": tf.format_time(NOW)}
    # the record it reads back carries the withdrawal: 30 s later fsn is healthy but still held
    clock["wall"] += 30
    _vote_all(host, "c", fsn=(0, 9), hel=(0, 9))
    controller.decide_all()
    assert host.endpoints[HOST]["spec"]["endpoints"][0]["targets"] == ["192.0.2.20"]
    clock["wall"] += 31
    controller.decide_all()
    assert host.endpoints[HOST]["spec"]["endpoints"][0]["targets"] == ["192.0.2.10", "192.0.2.20"]


def test_the_leader_fails_open_once_and_says_so(leader: Any, caplog: pytest.LogCaptureFixture) -> None:
    controller, host, _ = leader
    controller.targets, controller.names_known = {HOST: tf.Target(HOST)}, True
    controller.regions = {"fsn": "192.0.2.10"}
    caplog.set_level("INFO", logger="traffic-failover")
    _vote_all(host, "a", fsn=(0, 6))
    controller.decide_all()
    assert [r.getMessage() for r in caplog.records] == [f"{HOST}: published fsn",
                                                        "fsn.lb.dev.example.com: region fsn at 192.0.2.10"]
    caplog.clear()
    _vote_all(host, "b", fsn=(5, 0))
    controller.decide_all()
    controller.decide_all()
    ep = host.endpoints[HOST]
    assert ep["metadata"]["annotations"][tf.FAIL_OPEN_ANNOTATION] == "true"
    assert ep["spec"]["endpoints"][0]["targets"] == ["192.0.2.10"]
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", f"{HOST}: every region fails; keeping 192.0.2.10 (fail open)")]
    puts = [c for c in host.calls if c[0] == "PUT"]
    assert len(puts) == 1, "written once when it fails open, then left alone"
    caplog.clear()
    _vote_all(host, "c", fsn=(0, 9))
    controller.decide_all()
    assert tf.FAIL_OPEN_ANNOTATION not in host.endpoints[HOST]["metadata"]["annotations"]
    assert caplog.records == [], "leaving fail-open without a change of targets says nothing"


def test_the_leader_logs_each_change_of_targets(leader: Any, caplog: pytest.LogCaptureFixture) -> None:
    controller, host, _ = leader
    controller.targets, controller.names_known = {HOST: tf.Target(HOST)}, True
    controller.regions = {"fsn": "192.0.2.10", "hel": "192.0.2.20"}
    _vote_all(host, "a", fsn=(0, 6), hel=(0, 6))
    controller.decide_all()
    caplog.set_level("INFO", logger="traffic-failover")
    _vote_all(host, "b", fsn=(3, 0), hel=(0, 9))
    controller.decide_all()
    assert [r.getMessage() for r in caplog.records] == [f"{HOST}: now hel (was 192.0.2.10, 192.0.2.20)"]


def test_one_name_waiting_or_unchanged_does_not_stop_the_others(leader: Any) -> None:
    controller, host, _ = leader
    first, last = "a.dev.example.com", "z.dev.example.com"
    controller.targets, controller.names_known = {first: tf.Target(first), last: tf.Target(last)}, True
    controller.regions = {"fsn": "192.0.2.10"}
    for i in range(3):  # first: nobody has seen it serve yet; last: healthy
        host.vantage(f"v{i}", f"a-{i}", {tf.obs_key(first, "fsn"): [0, 1, ""], tf.obs_key(last, "fsn"): [0, 6, ""]})
    controller.decide_all()
    assert list(names(host)) == [last], "a name with no decision yet does not hold up the ones after it"
    for i in range(3):  # now first is published too, last unchanged
        host.vantage(f"v{i}", f"b-{i}", {tf.obs_key(first, "fsn"): [0, 6, ""], tf.obs_key(last, "fsn"): [0, 7, ""]})
    controller.decide_all()
    assert sorted(names(host)) == [first, last]
    for i in range(3):  # first unchanged, last voted down: fail-open, written
        host.vantage(f"v{i}", f"c-{i}", {tf.obs_key(first, "fsn"): [0, 8, ""], tf.obs_key(last, "fsn"): [5, 0, ""]})
    controller.decide_all()
    assert tf.FAIL_OPEN_ANNOTATION in host.endpoints[last]["metadata"]["annotations"], \
        "an unchanged name does not stop the pass before the ones after it"


def test_a_stale_vantage_point_is_skipped_not_the_rest(leader: Any) -> None:
    controller, host, clock = leader
    host.vantage("stale", "1", {tf.obs_key(HOST, "fsn"): [9, 0, ""]})
    host.vantage("fresh", "1", {tf.obs_key(HOST, "fsn"): [0, 9, ""]})
    controller.fresh_votes()
    clock["mono"] += 100
    host.vantage("fresh", "2", {tf.obs_key(HOST, "fsn"): [0, 9, ""]})
    host.leases = [host.leases[0], host.leases[1]]  # the stale one is listed first
    assert controller.fresh_votes() == {HOST: {"fsn": [tf.Vote(0, 9)]}}
    assert set(controller.vantage_seen) == {"stale", "fresh"}


def test_a_name_nobody_serves_yet_is_pending_and_a_fleet_without_regions_waits(leader: Any) -> None:
    controller, host, _ = leader
    controller.targets, controller.names_known = {HOST: tf.Target(HOST), "b.dev.example.com": tf.Target("b")}, True
    assert controller.decide_all() == {"at": tf.format_time(NOW), "pending": 2}, "no region known: all pending"
    controller.names_known = False
    assert controller.decide_all()["pending"] == -1
    controller.names_known = True
    controller.regions = {"fsn": "192.0.2.10"}
    _vote_all(host, "a", fsn=(0, 2))
    assert controller.decide_all()["pending"] == 2 and names(host) == {}
    _vote_all(host, "b", fsn=(3, 0))
    assert controller.decide_all()["pending"] == 1, "shop is voted down everywhere: nothing to wait for; b has no votes"
    controller.names_known = False
    assert controller.decide_all()["pending"] == -1


KEEP = "keep.dev.example.com"


def _two_names(controller: Any, host: FakeHost) -> None:
    controller.regions = {"fsn": "192.0.2.10"}
    controller.targets, controller.names_known = {HOST: tf.Target(HOST), KEEP: tf.Target(KEEP)}, True
    for i in range(3):
        host.vantage(f"v{i}", f"a-{i}", {tf.obs_key(HOST, "fsn"): [0, 6, ""], tf.obs_key(KEEP, "fsn"): [0, 6, ""]})
    controller.decide_all()
    assert sorted(names(host)) == sorted([HOST, KEEP])


def test_a_name_without_an_ingress_goes_after_three_lists_and_delete_after_never_while_unread(leader: Any) -> None:
    controller, host, clock = leader
    assert tf.ABSENT_LISTS_BEFORE_DELETE == 3 and controller.s.delete_after == 120.0
    _two_names(controller, host)
    controller.list_seq = 5
    controller.targets = {KEEP: tf.Target(KEEP)}
    controller.names_known = False  # the Ingresses could not be read: nothing is missing
    for _ in range(5):
        controller.decide_all()
    assert HOST in host.endpoints and controller.absent == {}
    controller.names_known = True
    controller.decide_all()
    assert controller.absent == {HOST: (5, NOW)}
    clock["wall"] += 500
    controller.list_seq = 7
    controller.decide_all()
    assert HOST in host.endpoints and controller.absent == {HOST: (5, NOW)}, "two lists are not three, however long"
    controller.targets = {HOST: tf.Target(HOST), KEEP: tf.Target(KEEP)}
    controller.decide_all()
    assert controller.absent == {}, "seen again: the count starts over"
    controller.targets = {KEEP: tf.Target(KEEP)}
    controller.decide_all()
    start = clock["wall"]
    assert controller.absent == {HOST: (7, start)}
    controller.list_seq = 10
    clock["wall"] = start + 119.9
    controller.decide_all()
    assert HOST in host.endpoints, "three lists, but not delete_after seconds"
    clock["wall"] = start + 120
    note = controller.decide_all()
    assert HOST not in host.endpoints and KEEP in host.endpoints and controller.absent == {}
    assert ("DELETE", f"{tf.DNSENDPOINTS_PATH.format(namespace='ns')}/{HOST}") in host.calls
    assert "deletionsRefused" not in note and "failed" not in note


def test_an_empty_or_mostly_empty_ingress_list_deletes_nothing(leader: Any, caplog: pytest.LogCaptureFixture
                                                                ) -> None:
    controller, host, clock = leader
    _two_names(controller, host)
    caplog.set_level("WARNING", logger="traffic-failover")
    controller.targets = {}
    for seq in range(1, 6):
        controller.list_seq = seq
        clock["wall"] += 200
        note = controller.decide_all()
        assert note["deletionsRefused"] == 2
    assert sorted(names(host)) == sorted([HOST, KEEP]) and controller.stats["deletions_refused"] == 5
    assert [r.getMessage() for r in caplog.records] == [
        "2 of 2 names are missing from the Ingress list; deleting none of them (an empty or mostly empty list looks "
        "like a karmada-apiserver without its data)"], "said once while it lasts"
    assert controller.absent == {HOST: (1, NOW + 200), KEEP: (1, NOW + 200)}, "still counted from the first list"
    # half of the names may go, not more: 2 of 4 is half, 3 of 4 is more
    controller.targets = {HOST: tf.Target(HOST), KEEP: tf.Target(KEEP)}
    controller.decide_all()
    assert not controller.refusing, "the list is whole again: the next refusal is said again"
    others = ["c.dev.example.com", "d.dev.example.com"]
    controller.targets = {h: tf.Target(h) for h in (HOST, KEEP, *others)}
    for i in range(3):
        host.vantage(f"v{i}", f"d-{i}", {tf.obs_key(h, "fsn"): [0, 6, ""] for h in controller.targets})
    controller.decide_all()
    assert len(names(host)) == 4
    controller.targets = {KEEP: tf.Target(KEEP)}
    caplog.clear()
    assert controller.decide_all()["deletionsRefused"] == 3 and controller.refusing
    assert [r.getMessage() for r in caplog.records] == [
        "3 of 4 names are missing from the Ingress list; deleting none of them (an empty or mostly empty list looks "
        "like a karmada-apiserver without its data)"]
    controller.targets = {KEEP: tf.Target(KEEP), HOST: tf.Target(HOST)}
    assert "deletionsRefused" not in controller.decide_all() and not controller.refusing
    controller.list_seq += 3
    clock["wall"] += 120
    controller.decide_all()
    assert sorted(names(host)) == sorted([HOST, KEEP]), "two of four went"


def test_a_deletion_that_fails_is_tried_again_next_pass(leader: Any) -> None:
    controller, host, clock = leader
    _two_names(controller, host)
    controller.targets = {KEEP: tf.Target(KEEP)}
    controller.decide_all()
    controller.list_seq += 3
    clock["wall"] += 120
    host.fail.add(("DELETE", HOST))
    controller.decide_all()
    assert HOST in host.endpoints and HOST in controller.absent and controller.stats["write_failures"] == 1
    host.fail.clear()
    controller.decide_all()
    assert HOST not in host.endpoints and controller.absent == {}


def test_a_write_that_fails_for_one_name_does_not_stop_the_others(leader: Any, caplog: pytest.LogCaptureFixture
                                                                   ) -> None:
    controller, host, _ = leader
    first, last = "a.dev.example.com", "z.dev.example.com"
    controller.regions = {"fsn": "192.0.2.10"}
    controller.targets, controller.names_known = {first: tf.Target(first), last: tf.Target(last)}, True
    for i in range(3):
        host.vantage(f"v{i}", f"a-{i}", {tf.obs_key(first, "fsn"): [0, 6, ""], tf.obs_key(last, "fsn"): [0, 6, ""]})
    host.fail.add(("POST", first))
    caplog.set_level("WARNING", logger="traffic-failover")
    note = controller.decide_all()
    assert list(names(host)) == [last] and note["failed"] == 1 and note["pending"] == 1
    assert controller.stats["write_failures"] == 1 and controller.pending_names == 1
    assert [r.getMessage() for r in caplog.records] == [
        f"{first}: decision not written: HTTP 409 on {tf.DNSENDPOINTS_PATH.format(namespace='ns')}: conflict"]
    host.fail.clear()
    note = controller.decide_all()
    assert sorted(names(host)) == [first, last] and note == {"at": tf.format_time(NOW), "pending": 0}


def test_each_region_gets_its_drill_record_and_loses_it_with_the_region(leader: Any,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    controller, host, _ = leader
    controller.targets, controller.names_known = {}, True
    controller.regions = {"fsn": "192.0.2.10", "hel": "192.0.2.20"}
    assert controller.decide_all() == {"at": tf.format_time(NOW), "pending": 0}
    assert host.endpoints["fsn.lb.dev.example.com"] == {
        "apiVersion": "externaldns.k8s.io/v1alpha1", "kind": "DNSEndpoint",
        "metadata": {"name": "fsn.lb.dev.example.com", "namespace": "ns", "resourceVersion": "101",
                     "labels": {"app.kubernetes.io/managed-by": "karmada-hub-traffic-failover",
                                "karmada-hub.io/traffic-region": "fsn"}},
        "spec": {"endpoints": [{"dnsName": "fsn.lb.dev.example.com", "recordType": "A", "recordTTL": 60,
                                "targets": ["192.0.2.10"]}]}}
    assert tf.region_record_name("fsn", DOMAIN) == "fsn.lb.dev.example.com"
    writes = len(host.calls)
    controller.decide_all()
    assert [c for c in host.calls[writes:] if c[0] != "GET"] == [], "unchanged: not written again"
    caplog.set_level("INFO", logger="traffic-failover")
    controller.regions = {"fsn": "192.0.2.11"}
    controller.decide_all()
    assert region_records(host) == {"fsn.lb.dev.example.com": ["192.0.2.11"]}
    assert host.endpoints["fsn.lb.dev.example.com"]["metadata"]["resourceVersion"] == str(host.rv - 1)
    assert [r.getMessage() for r in caplog.records] == ["fsn.lb.dev.example.com: region fsn at 192.0.2.11"]
    # a region record is nobody's name: no Ingress needs to name it, and it is never decided
    controller.targets = {HOST: tf.Target(HOST)}
    for _ in range(5):
        controller.decide_all()
    assert "fsn.lb.dev.example.com" in host.endpoints and controller.absent == {}
    host.fail.add(("PUT", "fsn.lb.dev.example.com"))
    controller.regions = {"fsn": "192.0.2.12"}
    assert controller.decide_all()["failed"] == 1 and controller.stats["write_failures"] == 1
    host.fail = {("DELETE", "fsn.lb.dev.example.com")}
    controller.regions = {"hel": "192.0.2.20"}
    assert controller.decide_all()["failed"] == 1 and "fsn.lb.dev.example.com" in host.endpoints
    host.fail.clear()
    controller.decide_all()
    assert region_records(host) == {"hel.lb.dev.example.com": ["192.0.2.20"]}


class FakeZone:
    """What decide_all asks of a ZoneWriter (mode self-hosted)."""

    def __init__(self, in_step: int = 3) -> None:
        self.published: list[tuple[dict[str, list[str]], dict[str, str]]] = []
        self.current: Any = None
        self.steps = in_step

    def desired(self, names: dict[str, list[str]], regions: dict[str, str]) -> tuple[Any, ...]:
        return dict(names), dict(regions)

    def publish(self, want: tuple[Any, ...]) -> dict[str, str | None]:
        self.published.append(want)  # type: ignore[arg-type]
        return {}

    def snapshot_text(self) -> None:
        return None

    def in_step(self) -> int:
        return self.steps


def test_self_hosted_the_zone_gets_every_published_name_and_the_regions_no_region_record(leader: Any) -> None:
    controller, host, clock = leader
    _two_names(controller, host)
    assert region_records(host) == {"fsn.lb.dev.example.com": ["192.0.2.10"]}
    controller.zone = zone = FakeZone()
    controller.targets = {HOST: tf.Target(HOST), "n.dev.example.com": tf.Target("n.dev.example.com")}
    host.endpoints["gone.dev.example.com"] = {"metadata": {"name": "gone.dev.example.com", "resourceVersion": "1",
                                                           "labels": {}}, "spec": {"endpoints": []}}
    for i in range(3):
        host.vantage(f"v{i}", f"z-{i}", {tf.obs_key(h, "fsn"): [0, 6, ""] for h in controller.targets})
    assert controller.decide_all()["pending"] == 0
    assert zone.published == [({HOST: ["192.0.2.10"], KEEP: ["192.0.2.10"], "n.dev.example.com": ["192.0.2.10"]},
                               {"fsn": "192.0.2.10"})], "a DNSEndpoint without addresses puts nothing in the zone"
    assert region_records(host) == {}, "the drill record is in the zone, not a DNSEndpoint"
    controller.list_seq += 3
    clock["wall"] += 120
    zone.published.clear()
    zone.steps = 0
    note = controller.decide_all()
    assert zone.published == [({HOST: ["192.0.2.10"], "n.dev.example.com": ["192.0.2.10"]}, {"fsn": "192.0.2.10"})]
    assert KEEP not in host.endpoints, "a name deleted this pass is not in the zone"
    assert note["pending"] == 1, "decided, but on no nameserver yet: not ready"


def test_a_region_missing_from_a_list_is_kept_for_three_lists_and_six_periods() -> None:
    controller = tf.Controller(settings(), None, None)  # type: ignore[arg-type]
    assert tf.REGION_GRACE_PERIODS == 6
    controller.regions = controller.merge_regions({"fsn": "192.0.2.10", "hel": "192.0.2.20"}, 0.0)
    assert controller.regions == {"fsn": "192.0.2.10", "hel": "192.0.2.20"}
    assert controller.merge_regions({}, 100.0) == controller.regions and controller.region_absent == {
        "fsn": (1, 100.0), "hel": (1, 100.0)}, "an empty list changes nothing"
    controller.region_absent.clear()
    for now in (10.0, 20.0):
        controller.regions = controller.merge_regions({"fsn": "192.0.2.10"}, now)
    assert controller.regions == {"fsn": "192.0.2.10", "hel": "192.0.2.20"}
    assert controller.region_absent == {"hel": (2, 10.0)}
    assert controller.merge_regions({"fsn": "192.0.2.10"}, 39.9) == {"fsn": "192.0.2.10", "hel": "192.0.2.20"}, \
        "three lists but not six periods (30 s)"
    controller.region_absent["hel"] = (2, 10.0)
    assert controller.merge_regions({"fsn": "192.0.2.10"}, 40.0) == {"fsn": "192.0.2.10"}
    assert controller.region_absent == {}
    controller.regions = {"fsn": "192.0.2.10", "hel": "192.0.2.20"}
    controller.region_absent = {"hel": (7, 0.0)}
    assert controller.merge_regions({"fsn": "192.0.2.11", "hel": "192.0.2.21"}, 50.0) == {
        "fsn": "192.0.2.11", "hel": "192.0.2.21"}
    assert controller.region_absent == {}, "listed again: the count starts over"


def test_the_leader_reads_only_its_own_a_record_and_survives_a_bad_annotation(leader: Any) -> None:
    controller, host, _ = leader
    controller.targets, controller.names_known = {HOST: tf.Target(HOST)}, True
    controller.regions = {"fsn": "192.0.2.10", "hel": "192.0.2.20"}
    host.endpoints[HOST] = {"metadata": {"name": HOST, "resourceVersion": "7",
                                         "annotations": {tf.WITHDRAWN_ANNOTATION: "{broken"}},
                            "spec": {"endpoints": [{"dnsName": HOST, "recordType": "A", "targets": ["192.0.2.10"]},
                                                   {"dnsName": "other", "recordType": "A", "targets": ["192.0.2.99"]},
                                                   {"dnsName": HOST, "recordType": "TXT", "targets": ["x"]}]}}
    _vote_all(host, "a", fsn=(0, 9), hel=(0, 9))
    controller.decide_all()
    ep = host.endpoints[HOST]
    assert ep["spec"]["endpoints"] == [{"dnsName": HOST, "recordType": "A", "recordTTL": 60,
                                        "targets": ["192.0.2.10", "192.0.2.20"]}]
    assert json.loads(ep["metadata"]["annotations"][tf.WITHDRAWN_ANNOTATION]) == {}
