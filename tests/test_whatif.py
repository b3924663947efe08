"""The what-if model: upstream's scheduler rules on rendered policies, #7455 placements caught before they ship."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from components.config import ConfigError, FleetConfig, MemberConfig, TenantConfig
from components.fleet import policy_docs as fleet
from components.fleet import whatif
from components.operations import preflight
from tests.support.tools import load_stack, stack_values


def cluster(name: str, region: str) -> whatif.Cluster:
    return whatif.Cluster(name, region)


def region_term(name: str, *regions: str) -> dict[str, Any]:
    return {"affinityName": name,
            "fieldSelector": {"matchExpressions": [{"key": "region", "operator": "In", "values": list(regions)}]}}


def policy(terms: list[dict[str, Any]], scheduling: dict[str, Any] | None = None,
           spread: list[dict[str, Any]] | None = None, annotations: dict[str, str] | None = None,
           tolerations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    placement: dict[str, Any] = {"clusterAffinities": terms,
                                 "replicaScheduling": scheduling or {"replicaSchedulingType": "Duplicated"}}
    if spread:
        placement["spreadConstraints"] = spread
    if tolerations:
        placement["clusterTolerations"] = tolerations
    return {"apiVersion": fleet.POLICY_API, "kind": "PropagationPolicy",
            "metadata": {"name": "t", "namespace": "t", "labels": {fleet.TENANT_LABEL: "t"},
                         "annotations": annotations or {}},
            "spec": {"placement": placement, "failover": {"cluster": {"purgeMode": "Gracefully"}}}}


def rows(p: dict[str, Any], clusters: list[whatif.Cluster]) -> dict[tuple[str, str], whatif.Row]:
    report = whatif.tenant_report(whatif.model_policy(p, clusters), clusters)
    return {(r.workload, r.scenario): r for r in (*report.initial, *report.rows)}


TWO_REGIONS = [cluster("cluster-a", "us-east"), cluster("cluster-b", "us-west")]


# ------------------------------------------------------------------------------------------ #7455


def test_issue_7455_as_reported_is_flagged_deleted() -> None:
    """#7455's reproduction: one affinity (region us-east), its only member tainted: the scheduler finds no
    cluster (FitError), writes an empty spec.clusters, and graceful eviction purges the old copy."""
    found = rows(policy([region_term("only", "us-east")]), TWO_REGIONS)
    assert found[("workloads", "initial")].clusters == ("cluster-a",)
    lost = found[("workloads", "lose cluster-a (= region us-east)")]
    assert lost.outcome == "DELETED" and lost.clusters == ()
    assert "#7455" in lost.note and "group only has no feasible member" in lost.note
    assert found[("workloads", "lose cluster-b (= region us-west)")].outcome == "UNCHANGED"


def test_a_fallback_group_turns_it_into_a_one_way_move() -> None:
    found = rows(policy([region_term("preferred", "us-east"), region_term("fleet-fallback", "us-east", "us-west")]),
                 TWO_REGIONS)
    lost = found[("workloads", "lose cluster-a (= region us-east)")]
    assert lost.outcome == "MOVES" and lost.clusters == ("cluster-b",) and lost.group == "fleet-fallback"
    assert "one-way: stays on fleet-fallback after recovery" in lost.note


def test_only_the_first_error_decides_deleted_or_degraded() -> None:
    """First term FitError + fallback failing on spread = deleted; first term failing on spread = survivors kept."""
    spread = [{"spreadByField": "region", "minGroups": 2, "maxGroups": 2},
              {"spreadByField": "cluster", "minGroups": 2, "maxGroups": 2}]
    fallback = region_term("fleet-fallback", "us-east", "us-west")
    both = rows(policy([region_term("preferred", "us-east", "us-west"), fallback], spread=spread), TWO_REGIONS)
    assert both[("workloads", "initial")].clusters == ("cluster-a", "cluster-b")
    degraded = both[("workloads", "lose cluster-a (= region us-east)")]
    assert degraded.outcome == "DEGRADED" and degraded.clusters == ("cluster-b",)
    # The same loss, but the first group tried has no member left at all: now it is #7455.
    three = [*TWO_REGIONS, cluster("cluster-c", "us-east")]
    fit_first = rows(policy([region_term("preferred", "us-east"), fallback], spread=[
        {"spreadByField": "region", "minGroups": 1, "maxGroups": 2},
        {"spreadByField": "cluster", "minGroups": 2, "maxGroups": 3}]), three)
    assert fit_first[("workloads", "initial")].clusters == ("cluster-a", "cluster-c")
    assert fit_first[("workloads", "lose region us-east")].outcome == "DELETED"


def test_anti_affinity_group_as_large_as_the_fleet_is_deleted_on_a_loss() -> None:
    annotations = {fleet.GROUPS_ANNOTATION: json.dumps({"antiAffinity": {"chain": 2}})}
    spread = [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 1}]
    terms = [region_term("fleet-fallback", "us-east", "us-west")]
    found = rows(policy(terms, spread=spread, annotations=annotations), TWO_REGIONS)
    assert found[("chain#1", "initial")].clusters == ("cluster-a",)
    assert found[("chain#2", "initial")].clusters == ("cluster-b",)  # anti-affinity pushed it off cluster-a
    lost = found[("chain#1", "lose cluster-a (= region us-east)")]
    assert lost.outcome == "DELETED"
    # one more member: the evicted one takes it
    three = [*TWO_REGIONS, cluster("cluster-c", "us-west")]
    ok = rows(policy(terms, spread=spread, annotations=annotations), three)
    assert ok[("chain#1", "lose cluster-a (= region us-east)")].clusters == ("cluster-c",)
    assert ok[("chain#2", "lose cluster-a (= region us-east)")].outcome == "UNCHANGED"


def test_anti_affinity_group_larger_than_the_fleet_is_unplaceable() -> None:
    annotations = {fleet.GROUPS_ANNOTATION: json.dumps({"antiAffinity": {"chain": 3}})}
    found = rows(policy([region_term("all", "us-east", "us-west")], annotations=annotations,
                        spread=[{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 1}]), TWO_REGIONS)
    assert found[("chain#3", "initial")].outcome == "UNPLACEABLE"


def test_affinity_group_on_one_member_is_deleted_by_eviction_order() -> None:
    """The first member evicted still sees its peer on the dead member: no cluster passes the affinity filter."""
    annotations = {fleet.GROUPS_ANNOTATION: json.dumps({"affinity": {"infer": 2}})}
    single = [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 1}]
    terms = [region_term("fleet-fallback", "us-east", "us-west")]
    found = rows(policy(terms, spread=single, annotations=annotations), TWO_REGIONS)
    assert found[("infer#1", "initial")].clusters == found[("infer#2", "initial")].clusters == ("cluster-a",)
    assert found[("infer#1", "lose cluster-a (= region us-east)")].outcome == "DELETED"
    assert found[("infer#2", "lose cluster-a (= region us-east)")].clusters == ("cluster-b",)
    # spread over both members (Duplicated, no cap): a shared survivor keeps both
    spanning = rows(policy(terms, annotations=annotations), TWO_REGIONS)
    assert spanning[("infer#1", "lose cluster-a (= region us-east)")].outcome == "TRAFFIC MOVES"


def test_preflight_refuses_a_7455_placement_with_one_line() -> None:
    raw, secrets = stack_values("prod-fsn1")
    raw["members"] = [m for m in raw["members"] if m["name"] != "prod-fsn1-c"]
    config = FleetConfig.from_mapping(raw, "stacks/Pulumi.prod-fsn1.yaml", secrets)
    with pytest.raises(ConfigError) as info:
        preflight.check_whatif(config, "stacks/Pulumi.prod-fsn1.yaml")
    assert str(info.value) == (
        "stacks/Pulumi.prod-fsn1.yaml: karmada-hub:tenants[1].placement: losing prod-fsn1-a deletes payments/card#1 "
        "(#7455: group preferred has no feasible member; group fleet-fallback has no feasible member; spec.clusters "
        "becomes empty and the old copy is purged); give its groups a member that survives this loss, shrink the "
        "workload group, or set failover: manual")
    raw["tenants"][1]["failover"] = "manual"
    preflight.check_whatif(FleetConfig.from_mapping(raw, "stacks/Pulumi.prod-fsn1.yaml", secrets),
                           "stacks/Pulumi.prod-fsn1.yaml")


# ------------------------------------------------------------------------------------------ scheduler rules

# spreadconstraint TestSelectGroups at v1.18.2 (select_groups_test.go): (groups (name, clusters, score),
# minGroups, maxGroups, target clusters, expected regions).
SELECT_GROUPS = [
    ([], 2, 3, 1, []),
    ([("R1", 1, 80)], 2, 3, 1, []),
    ([("R1", 1, 80), ("R2", 2, 30)], 2, 3, 4, []),
    ([("R1", 1, 80)], 1, 3, 1, ["R1"]),
    ([("R1", 1, 80), ("R3", 1, 80), ("R2", 1, 60), ("R5", 2, 60), ("R4", 5, 50), ("R6", 3, 50)], 1, 3, 10,
     ["R5", "R4", "R6"]),
    ([("R1", 1, 80), ("R2", 4, 40), ("R3", 1, 30), ("R4", 3, 30), ("R5", 3, 20), ("R6", 5, 10)], 2, 6, 5, ["R1", "R2"]),
    ([("R1", 1, 60), ("R2", 1, 50), ("R3", 1, 40), ("R4", 3, 30), ("R5", 3, 20), ("R6", 3, 10)], 1, 3, 6,
     ["R1", "R4", "R5"]),
    ([("R1", 1, 60), ("R2", 2, 50), ("R3", 3, 40), ("R4", 4, 30)], 1, 2, 5, ["R1", "R4"]),
    ([("R4", 1, 60), ("R3", 3, 50), ("R1", 3, 40), ("R2", 4, 30)], 1, 2, 5, ["R3", "R1"]),
]


@pytest.mark.parametrize(("groups", "lo", "hi", "target", "expected"), SELECT_GROUPS)
def test_region_search_matches_upstream_cases(groups: list[Any], lo: int, hi: int, target: int,
                                              expected: list[str]) -> None:
    assert whatif._select_groups(list(groups), lo, hi, target) == expected


def test_region_spread_with_min_one_uses_exactly_one_region() -> None:
    """What the old dev `shop` rendered: region 1..2 and cluster 1..2 stop at the first single region."""
    clusters = [cluster("dev-fsn1-a", "eu-fsn"), cluster("dev-hel1-a", "eu-hel")]
    spread = [{"spreadByField": "region", "minGroups": 1, "maxGroups": 2},
              {"spreadByField": "cluster", "minGroups": 1, "maxGroups": 2}]
    found = rows(policy([region_term("preferred", "eu-fsn", "eu-hel")], spread=spread), clusters)
    assert found[("workloads", "initial")].clusters == ("dev-fsn1-a",)
    two = [{"spreadByField": "region", "minGroups": 2, "maxGroups": 2},
           {"spreadByField": "cluster", "minGroups": 2, "maxGroups": 2}]
    found = rows(policy([region_term("preferred", "eu-fsn", "eu-hel")], spread=two), clusters)
    assert found[("workloads", "initial")].clusters == ("dev-fsn1-a", "dev-hel1-a")


def test_region_with_more_members_wins_for_duplicated() -> None:
    clusters = [cluster("a-1", "r-big"), cluster("a-2", "r-big"), cluster("b-1", "r-small")]
    spread = [{"spreadByField": "region", "minGroups": 1, "maxGroups": 2},
              {"spreadByField": "cluster", "minGroups": 1, "maxGroups": 3}]
    found = rows(policy([region_term("all", "r-big", "r-small")], spread=spread), clusters)
    assert found[("workloads", "initial")].clusters == ("a-1", "a-2")


def test_locality_keeps_a_survivor_and_sticks_after_recovery_modelled_as_one_way() -> None:
    clusters = [cluster("a", "r1"), cluster("b", "r1"), cluster("c", "r2")]
    spread = [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 2}]
    found = rows(policy([region_term("all", "r1", "r2")], spread=spread), clusters)
    assert found[("workloads", "initial")].clusters == ("a", "b")
    assert found[("workloads", "lose a")].clusters == ("b", "c")  # b kept (score 100), c added by name


def test_overflow_tiers_fill_the_primary_first_and_spill_on_loss_without_switching_terms() -> None:
    clusters = [cluster("f-1", "eu-fsn"), cluster("h-1", "eu-hel")]
    term = {**region_term("preferred", "eu-fsn"), "overflowAffinities": [region_term("spill-hel", "eu-hel")]}
    dynamic = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
               "weightPreference": {"dynamicWeight": "AvailableReplicas"}}
    found = rows(policy([term, region_term("fleet-fallback", "eu-fsn", "eu-hel")], scheduling=dynamic), clusters)
    initial = found[("workloads", "initial")]
    assert initial.clusters == ("f-1",) and "spills into spill-hel when full" in initial.note
    lost = found[("workloads", "lose f-1 (= region eu-fsn)")]
    assert lost.clusters == ("h-1",) and lost.group == "preferred (spill-hel)" and "one-way" not in lost.note


def test_static_weights_outside_the_group_are_unused() -> None:
    """What the old dev `search` rendered: weights {fsn:2, hel:1} inside a preferred group of eu-fsn only."""
    clusters = [cluster("dev-fsn1-a", "eu-fsn"), cluster("dev-hel1-a", "eu-hel")]
    static = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted", "weightPreference": {
        "staticWeightList": [{"targetCluster": {"clusterNames": ["dev-fsn1-a"]}, "weight": 2},
                             {"targetCluster": {"clusterNames": ["dev-hel1-a"]}, "weight": 1}]}}
    found = rows(policy([region_term("preferred", "eu-fsn"), region_term("fleet-fallback", "eu-fsn", "eu-hel")],
                        scheduling=static), clusters)
    assert found[("workloads", "initial")].clusters == ("dev-fsn1-a",)
    assert found[("workloads", "lose dev-fsn1-a (= region eu-fsn)")].group == "fleet-fallback"


def test_indefinite_toleration_waits_and_a_timed_one_moves() -> None:
    forever = [{"key": fleet.FAILOVER_TAINT_KEY, "operator": "Exists", "effect": "NoExecute"}]
    timed = [{**forever[0], "tolerationSeconds": 30}]
    terms = [region_term("fleet-fallback", "us-east", "us-west")]
    spread = [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 1}]
    waits = rows(policy(terms, spread=spread, tolerations=forever), TWO_REGIONS)
    assert waits[("workloads", "lose cluster-a (= region us-east)")].outcome == "WAITS"
    moves = rows(policy(terms, spread=spread, tolerations=timed), TWO_REGIONS)
    assert moves[("workloads", "lose cluster-a (= region us-east)")].outcome == "MOVES"
    other_key = [{**forever[0], "key": "something/else"}]
    assert rows(policy(terms, spread=spread, tolerations=other_key), TWO_REGIONS)[
        ("workloads", "lose cluster-a (= region us-east)")].outcome == "MOVES"


def test_matches_follows_cluster_affinity_semantics() -> None:
    c = whatif.Cluster("m1", "eu-fsn", ("fsn1",), "hetzner", {"tier": "gold"})
    assert whatif.matches({"clusterNames": ["m1"]}, c)
    assert not whatif.matches({"clusterNames": ["m1"], "exclude": ["m1"]}, c)
    assert not whatif.matches({"clusterNames": ["m2"]}, c)
    assert whatif.matches({"labelSelector": {"matchLabels": {"tier": "gold"}}}, c)
    assert not whatif.matches({"labelSelector": {"matchExpressions": [{"key": "tier", "operator": "NotIn",
                                                                         "values": ["gold"]}]}}, c)
    assert whatif.matches({"fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "In",
                                                                   "values": ["fsn1"]}]}}, c)
    assert not whatif.matches({"fieldSelector": {"matchExpressions": [{"key": "provider", "operator": "NotIn",
                                                                       "values": ["hetzner"]}]}}, c)
    # every selector must match (AND), as util.ClusterMatches
    assert not whatif.matches({"clusterNames": ["m1"], "fieldSelector": {"matchExpressions": [
        {"key": "region", "operator": "In", "values": ["eu-hel"]}]}}, c)


# ------------------------------------------------------------------------------------------ the stacks


def test_dev_what_if_says_what_a_loss_does_to_each_tenant() -> None:
    report = whatif.fleet_whatif(load_stack("dev"))
    effects = {t.tenant: t.effect for t in report.tenants}
    assert effects == {
        "shop": "traffic moves: a copy runs on every member of its group",
        "search": "replicas rescheduled onto surviving members",
        "ledger": "rescheduled, then waits for a restore from VeleroSchedule/ledger-hourly",
        "archive": "waits for the member to return (no automatic failover)",
    }
    by = {(r.tenant, r.scenario): r for t in report.tenants for r in (*t.initial, *t.rows)}
    assert by[("shop", "initial")].clusters == ("dev-fsn1-a", "dev-hel1-a")
    assert by[("search", "lose dev-fsn1-a (= region eu-fsn)")].group == "preferred (spill-hel)"
    ledger = by[("ledger", "lose dev-hel1-a (= region eu-hel)")]
    assert ledger.outcome == "RESTORE" and "state labels injected" in ledger.note
    assert by[("archive", "lose dev-fsn1-a (= region eu-fsn)")].outcome == "WAITS"
    assert not report.refused()


def test_prod_fsn1_anti_affinity_survives_every_member_loss() -> None:
    report = whatif.fleet_whatif(load_stack("prod-fsn1"))
    payments = next(t for t in report.tenants if t.tenant == "payments")
    placed = {r.workload: r.clusters for r in payments.initial}
    assert placed == {"card#1": ("prod-fsn1-a",), "card#2": ("prod-fsn1-b",)}
    for r in payments.rows:
        if r.scenario.startswith("lose prod"):
            assert r.outcome in ("UNCHANGED", "MOVES"), r
            others = [o for o in payments.rows if o.scenario == r.scenario and o.workload != r.workload]
            assert not set(r.clusters) & {c for o in others for c in o.clusters}, "anti-affinity broken"
        else:
            assert r.outcome == "DOWN"  # the whole region: nowhere in this stack's fleet to go
    assert not report.refused()


@pytest.mark.parametrize("stack", ["dev", "prod-fsn1", "prod-hel1", "prod-ash"])
def test_example_stacks_have_no_refused_placement(stack: str) -> None:
    config = load_stack(stack)
    preflight.check_whatif(config, f"stacks/Pulumi.{stack}.yaml")
    data = whatif.fleet_whatif(config).as_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["limits"] == list(whatif.LIMITS)
    assert {t["tenant"] for t in data["tenants"]} == {t.name for t in config.tenants}


def test_the_model_reads_the_rendered_policy_not_the_config() -> None:
    """A mutated rendered policy changes the answer: the table is derived from what ships."""
    config = load_stack("dev")
    members: list[MemberConfig] = list(config.members)
    shop: TenantConfig = config.tenants[0]
    rendered = fleet.propagation_policy(shop, list(config.regions), members, config.failover)
    clusters = whatif.clusters_of(members)
    before = whatif.tenant_report(whatif.model_policy(rendered, clusters), clusters)
    assert before.initial[0].clusters == ("dev-fsn1-a", "dev-hel1-a")
    mutated = copy.deepcopy(rendered)
    mutated["spec"]["placement"]["spreadConstraints"] = [{"spreadByField": "cluster", "minGroups": 1,
                                                           "maxGroups": 1}]
    after = whatif.tenant_report(whatif.model_policy(mutated, clusters), clusters)
    assert after.initial[0].clusters == ("dev-fsn1-a",)


def test_format_names_every_tenant_and_states_the_limits() -> None:
    text = whatif.format_whatif(whatif.fleet_whatif(load_stack("dev")))
    for name in ("shop", "search", "ledger", "archive", "limits of this model", "capacity is not modelled"):
        assert name in text
    assert whatif.format_whatif(whatif.Report(())) == "what-if: no tenants or no members in this stack"


def test_rows_say_where_replicas_go_within_the_quota() -> None:
    report = whatif.fleet_whatif(load_stack("dev"))
    shop = next(t for t in report.tenants if t.tenant == "shop")
    lost = next(r for r in shop.rows if r.scenario.startswith("lose dev-fsn1-a"))
    assert lost.note.endswith("quota: dev-hel1-a cpu=20 memory=40Gi (overall cpu=40 memory=80Gi)")
    assert all("quota" not in r.note for t in report.tenants if t.tenant != "shop" for r in t.rows)
    # Duplicated moving onto more members: the copies must fit the fleet-wide overall
    frq = {"spec": {"overall": {"cpu": "8"}, "staticAssignments": [{"clusterName": "cluster-b",
                                                                     "hard": {"cpu": "4"}}]}}
    three = [*TWO_REGIONS, cluster("cluster-c", "us-west")]
    model = whatif.model_policy(policy([region_term("preferred", "us-east"),
                                        region_term("fleet-fallback", "us-east", "us-west")]), three, frq)
    found = {r.scenario: r for r in whatif.tenant_report(model, three).rows}
    note = found["lose cluster-a (= region us-east)"].note
    assert "quota: cluster-b cpu=4, cluster-c no ResourceQuota (overall cpu=8)" in note
    assert "2 copies instead of 1 must fit overall" in note


def test_example_stacks_show_overflow_and_workload_anti_affinity() -> None:
    dev, fsn = load_stack("dev"), load_stack("prod-fsn1")
    assert any(t.placement.overflow for t in dev.tenants)
    assert any(t.placement.workload_affinity and t.placement.workload_affinity.anti_affinity_label
               for t in fsn.tenants)


def test_the_table_is_computed_once_per_config() -> None:
    """preflight (twice in `hubctl plan`) and the report share one table per config; another config gets its own."""
    dev = load_stack("dev")
    assert whatif.fleet_whatif(dev) is whatif.fleet_whatif(load_stack("dev"))
    fewer = dev.model_copy(update={"tenants": dev.tenants[:1]})
    assert [t.tenant for t in whatif.fleet_whatif(fewer).tenants] == [dev.tenants[0].name]
    assert len(whatif.fleet_whatif(dev).tenants) == len(dev.tenants)
