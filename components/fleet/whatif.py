"""The what-if table: what losing one member or one region does to every tenant, from the rendered policies.

A pure model of karmada-scheduler v1.18.2 for the rendered PropagationPolicies (`policy_docs`), one binding per
workload (or per declared workload-group member), run first on an empty fleet (the initial placement) and then
for every single-member and single-region loss. The rules it follows, each as upstream implements them:

- `clusterAffinities` terms are tried one at a time, starting at the term the binding was last scheduled with,
  and only forwards (pkg/scheduler/scheduler.go scheduleResourceBinding, `status.schedulerObservingAffinityName`):
  a binding that moved to a later group never returns by itself;
- inside a term, overflow groups are tiers: a cluster belongs to the first group that matches it, and replicas
  go to earlier tiers first (core/common.go, spreadconstraint getClusterOverflowOrder);
- filters: the lost clusters (NoSchedule/NoExecute taints, eviction tasks) are out; workload anti-affinity removes
  clusters another member of the group targets, affinity keeps only clusters every placed member targets; both
  never remove a cluster the binding already targets (workloadaffinity, workloadantiaffinity plugins);
- selection: no spread constraint (or Divided static weights, `shouldIgnoreSpreadConstraint`) takes every
  feasible cluster; a cluster constraint takes the first `maxGroups` by (tier, locality score 100/0, available
  replicas, name); a region constraint runs upstream's region DFS (select_groups.go) and then fills up to the
  cluster maxGroups from the chosen regions;
- all terms failing: if the first term tried had no feasible cluster at all (a FitError), the scheduler writes an
  empty `spec.clusters` and graceful eviction purges the old copy — upstream #7455, flagged DELETED and refused by
  preflight; any other first error (spread, capacity) leaves the survivors running (DEGRADED);
- a tenant that tolerates the failover taint forever (failover: manual) is never evicted (WAITS);
- a loss that leaves no member of the stack's fleet at all is DOWN: no placement could have helped.

The model's limits are stated with the table (`LIMITS`): no live capacity, declared order for group members and
evictions, cluster failover only, initial placement derived from an empty fleet.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from components.config import FleetConfig, MemberConfig, TenantConfig
from components.fleet import policy_docs as fleet

Outcome = Literal["PLACED", "UNCHANGED", "MOVES", "TRAFFIC MOVES", "RESTORE", "WAITS", "DEGRADED", "DELETED", "DOWN",
                  "UNPLACEABLE"]
REFUSED: frozenset[str] = frozenset({"DELETED", "UNPLACEABLE"})
"""Outcomes preflight refuses: a placement rule, not the loss itself, takes the workload away."""

LIMITS = (
    "capacity is not modelled: Divided dynamic/aggregated and overflow assume the chosen members have room "
    "(when they do not, replicas spill to the next overflow group or stay Pending until the descheduler's "
    "threshold); ties between members break by name, as upstream does with equal available replicas",
    "workload-group members are scheduled and evicted in declared order; upstream's order is the bindings' queue "
    "order (creation, eviction rate)",
    "cluster failover only (the NoExecute failover taint); application failover and timings are not modelled "
    "(see the failover budget)",
    "the initial placement is derived on an empty fleet; bindings placed before the fleet changed stay where they "
    "are (locality score)",
    "after recovery nothing moves back by itself: a later clusterAffinities group is kept for good, Divided "
    "replicas return only on a scale event, a policy change or a WorkloadRebalancer (overflow groups only), "
    "and the descheduler never fails back",
)


@dataclass(frozen=True)
class Cluster:
    name: str
    region: str
    zones: tuple[str, ...] = ()
    provider: str = "hetzner"
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Tier:
    group: str
    clusters: frozenset[str]


@dataclass(frozen=True)
class Term:
    name: str
    tiers: tuple[Tier, ...]

    @property
    def clusters(self) -> frozenset[str]:
        return frozenset().union(*(t.clusters for t in self.tiers)) if self.tiers else frozenset()

    def tier_of(self, cluster: str) -> int:
        for i, tier in enumerate(self.tiers):
            if cluster in tier.clusters:
                return i
        return 1000  # upstream: unmatched clusters sort last (never happens after the affinity filter)


@dataclass(frozen=True)
class Binding:
    label: str
    anti_group: str | None = None
    affinity_group: str | None = None


@dataclass(frozen=True)
class TenantModel:
    """One rendered policy, reduced to what the scheduler reads."""

    tenant: str
    policy: str
    duplicated: bool
    division: Literal["static", "dynamic", "aggregated"] | None
    weights: Mapping[str, int]
    terms: tuple[Term, ...]
    region_spread: tuple[int, int] | None
    cluster_spread: tuple[int, int] | None
    evicts: bool
    purge_mode: str
    state_preserved: bool
    stateful: bool
    restore_from: str | None
    bindings: tuple[Binding, ...]
    quota_hard: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """FederatedResourceQuota staticAssignments: member -> the ResourceQuota it gets there."""
    quota_overall: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Placement:
    clusters: frozenset[str]
    term: int


@dataclass(frozen=True)
class Row:
    tenant: str
    workload: str
    scenario: str
    outcome: Outcome
    clusters: tuple[str, ...]
    group: str
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"tenant": self.tenant, "workload": self.workload, "scenario": self.scenario,
                "outcome": self.outcome, "clusters": list(self.clusters), "group": self.group, "note": self.note}


@dataclass(frozen=True)
class TenantReport:
    tenant: str
    effect: str
    """What a member loss does to the tenant, in one phrase."""
    initial: tuple[Row, ...]
    rows: tuple[Row, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"tenant": self.tenant, "effect": self.effect, "initial": [r.as_dict() for r in self.initial],
                "losses": [r.as_dict() for r in self.rows]}


@dataclass(frozen=True)
class Report:
    tenants: tuple[TenantReport, ...]
    limits: tuple[str, ...] = LIMITS

    def refused(self) -> list[Row]:
        return [r for t in self.tenants for r in (*t.initial, *t.rows) if r.outcome in REFUSED]

    def as_dict(self) -> dict[str, Any]:
        return {"tenants": [t.as_dict() for t in self.tenants], "limits": list(self.limits)}


# ------------------------------------------------------------------------------------------ policy -> model


def clusters_of(members: Iterable[MemberConfig]) -> list[Cluster]:
    """The Clusters the hub knows for these members, with the fields placement matches on (member_docs)."""
    return [Cluster(m.name, m.region, tuple(m.zones), "hetzner", dict(m.labels)) for m in members]


def _expr_matches(expr: Mapping[str, Any], values: Sequence[str]) -> bool:
    op, wanted = expr.get("operator"), set(expr.get("values") or [])
    present = bool(set(values) & wanted)
    return present if op == "In" else not present if op == "NotIn" else False


def _labels_match(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, vals = expr["key"], expr["operator"], set(expr.get("values") or [])
        if op == "In" and labels.get(key) not in vals:
            return False
        if op == "NotIn" and key in labels and labels[key] in vals:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def matches(affinity: Mapping[str, Any], cluster: Cluster) -> bool:
    """`util.ClusterMatches`: every set selector must match and the cluster must not be excluded."""
    if cluster.name in (affinity.get("exclude") or []):
        return False
    names = affinity.get("clusterNames")
    if names and cluster.name not in names:
        return False
    if affinity.get("labelSelector") is not None and not _labels_match(affinity["labelSelector"], cluster.labels):
        return False
    fields = {"region": [cluster.region], "zone": list(cluster.zones), "provider": [cluster.provider]}
    return all(_expr_matches(e, fields.get(e["key"], [])) for e in fleet._field_expressions(affinity))


def model_policy(policy: Mapping[str, Any], clusters: Sequence[Cluster],
                 quota: Mapping[str, Any] | None = None) -> TenantModel:
    """Read a rendered tenant PropagationPolicy the way the scheduler and the taint manager do (and the tenant's
    rendered FederatedResourceQuota, if any, for the quota each member gives it)."""
    spec = policy["spec"]
    placement = spec["placement"]
    meta = policy["metadata"]
    annotations = meta.get("annotations") or {}
    terms: list[Term] = []
    raw_terms = placement.get("clusterAffinities")
    if raw_terms is None:  # one implicit term: clusterAffinity, or every cluster when neither is set
        raw_terms = [{"affinityName": "clusterAffinity", **(placement.get("clusterAffinity") or {})}]
    for raw in raw_terms:
        taken: set[str] = set()
        tiers: list[Tier] = []
        for group in [raw, *(raw.get("overflowAffinities") or [])]:
            names = frozenset(c.name for c in clusters if matches(group, c) and c.name not in taken)
            taken |= names
            tiers.append(Tier(group["affinityName"], names))
        terms.append(Term(raw["affinityName"], tuple(tiers)))
    scheduling = placement.get("replicaScheduling") or {}
    duplicated = scheduling.get("replicaSchedulingType", "Duplicated") == "Duplicated"
    division: Literal["static", "dynamic", "aggregated"] | None = None
    weights: dict[str, int] = {}
    if not duplicated:
        if scheduling.get("replicaDivisionPreference") == "Aggregated":
            division = "aggregated"
        elif (scheduling.get("weightPreference") or {}).get("dynamicWeight"):
            division = "dynamic"
        else:
            division = "static"
            for entry in (scheduling.get("weightPreference") or {}).get("staticWeightList") or []:
                for c in clusters:
                    if matches(entry["targetCluster"], c):
                        weights[c.name] = max(weights.get(c.name, 0), int(entry["weight"]))
    spread = {c.get("spreadByField"): (c.get("minGroups", 1), c.get("maxGroups", 0))
              for c in placement.get("spreadConstraints") or []}
    if division == "static":
        spread = {}  # shouldIgnoreSpreadConstraint
    tolerated_forever = any(
        t.get("key") == fleet.FAILOVER_TAINT_KEY and t.get("effect") in ("NoExecute", None, "")
        and t.get("operator") == "Exists" and t.get("tolerationSeconds") is None
        for t in placement.get("clusterTolerations") or []
    )
    cluster_failover = (spec.get("failover") or {}).get("cluster") or {}
    groups = json.loads(annotations.get(fleet.GROUPS_ANNOTATION, "{}"))
    bindings: list[Binding] = []
    for value, size in sorted((groups.get("antiAffinity") or {}).items()):
        bindings += [Binding(f"{value}#{i + 1}", anti_group=value) for i in range(int(size))]
    for value, size in sorted((groups.get("affinity") or {}).items()):
        bindings += [Binding(f"{value}#{i + 1}", affinity_group=value) for i in range(int(size))]
    if not bindings:
        bindings = [Binding("workloads")]
    return TenantModel(
        tenant=meta.get("labels", {}).get(fleet.TENANT_LABEL, meta["name"]), policy=meta["name"],
        duplicated=duplicated, division=division, weights=weights, terms=tuple(terms),
        region_spread=spread.get("region"), cluster_spread=spread.get("cluster"), evicts=not tolerated_forever,
        purge_mode=cluster_failover.get("purgeMode", "Gracefully"),
        state_preserved=bool((cluster_failover.get("statePreservation") or {}).get("rules")),
        stateful=annotations.get(fleet.STATEFUL_ANNOTATION) == "stateful",
        restore_from=annotations.get(fleet.RESTORE_ANNOTATION), bindings=tuple(bindings),
        quota_hard={a["clusterName"]: dict(a["hard"]) for a in (quota or {}).get("spec", {}).get(
            "staticAssignments") or []},
        quota_overall=dict((quota or {}).get("spec", {}).get("overall") or {}),
    )


def _quota_note(model: TenantModel, clusters: frozenset[str], before: frozenset[str]) -> str:
    """Where the replicas go within the tenant's quota: the ResourceQuota each target member gives it
    (staticAssignments), and for Duplicated a copy count the fleet-wide `overall` must now hold."""
    if not model.quota_overall:
        return ""
    def fmt(res: Mapping[str, str]) -> str:
        return " ".join(f"{k}={v}" for k, v in sorted(res.items()))
    parts = []
    for c in sorted(clusters):
        hard = model.quota_hard.get(c)
        parts.append(f"{c} {fmt(hard)}" if hard else f"{c} no ResourceQuota")
    note = f"quota: {', '.join(parts)} (overall {fmt(model.quota_overall)})"
    if model.duplicated and len(clusters) > len(before):
        note += f"; {len(clusters)} copies instead of {len(before)} must fit overall"
    return note


# ------------------------------------------------------------------------------------------ the scheduler


class _Fail(Exception):
    def __init__(self, kind: Literal["fit", "spread"], why: str) -> None:
        super().__init__(why)
        self.kind = kind
        self.why = why


@dataclass
class _Path:
    groups: list[tuple[str, int, int]]  # (name, value = #clusters, weight = region score)
    id: int = 0

    @property
    def weight(self) -> int:
        return sum(g[2] for g in self.groups)

    @property
    def value(self) -> int:
        return sum(g[1] for g in self.groups)


def _select_groups(groups: list[tuple[str, int, int]], lo: int, hi: int, target: int) -> list[str]:
    """spreadconstraint selectGroups/findFeasiblePaths/prioritizePaths, step for step."""
    if not groups:
        return []
    groups = sorted(groups, key=lambda g: (g[1], -g[2], g[0]))
    paths: list[_Path] = []
    stack: list[tuple[str, int, int]] = []
    counter = [0]

    def dfs(total: int, begin: int) -> None:
        if total >= target and lo <= len(stack) <= hi:
            counter[0] += 1
            chosen = sorted(stack, key=lambda g: (-g[2], g[0]))
            paths.append(_Path(list(chosen), counter[0]))
            return
        if len(stack) >= hi:
            return
        for i in range(begin, len(groups)):
            stack.append(groups[i])
            dfs(total + groups[i][1], i + 1)
            if len(groups) == lo:
                break
            stack.pop()

    dfs(0, 0)
    if not paths:
        return []
    if len(paths) == 1:
        return [g[0] for g in paths[0].groups]
    paths.sort(key=lambda p: (-p.weight, -p.value, p.id))
    final = paths[0]
    for other in paths[1:]:
        if len(other.groups) < len(final.groups) and all(
                final.groups[i][0] == g[0] for i, g in enumerate(other.groups)):
            final = other
    return [g[0] for g in final.groups]


def _order(model: TenantModel, term: Term, names: Iterable[str], current: frozenset[str]) -> list[str]:
    """Upstream sortClusters: overflow tier, locality score (100 if already targeted), available (equal), name."""
    return sorted(names, key=lambda c: (term.tier_of(c), 0 if c in current else 1, c))


def _region_score(model: TenantModel, ordered: list[str], current: frozenset[str], min_groups: int) -> int:
    scores = [100 if c in current else 0 for c in ordered]
    if model.duplicated:  # calcGroupScoreForDuplicate, every cluster assumed to have room for a full copy
        return len(scores) * 1000 + sum(scores) // len(scores)
    cluster_min = max(model.cluster_spread[0] if model.cluster_spread else 0, min_groups)
    used = scores[:max(cluster_min, 1)]
    target = math.ceil(1 / max(min_groups, 1))  # replicas unknown: equal for every region, so only scores differ
    return target * 1000 + sum(used) // len(used)


def _select(model: TenantModel, term: Term, feasible: set[str], current: frozenset[str],
            region_of: Mapping[str, str]) -> list[str]:
    ordered = _order(model, term, feasible, current)
    if model.region_spread is None and model.cluster_spread is None:
        return ordered
    if model.region_spread is None:
        assert model.cluster_spread is not None
        lo, hi = model.cluster_spread
        if len(ordered) < lo:
            raise _Fail("spread", f"{len(ordered)} feasible member(s), the cluster constraint needs {lo}")
        return ordered[:min(len(ordered), hi)]
    r_lo, r_hi = model.region_spread
    c_lo, c_hi = model.cluster_spread or (1, 0)
    regions: dict[str, list[str]] = {}
    for c in ordered:
        regions.setdefault(region_of[c], []).append(c)
    if len(regions) < r_lo:
        raise _Fail("spread", f"{len(regions)} feasible region(s), the region constraint needs {r_lo}")
    groups = [(r, len(cs), _region_score(model, cs, current, r_lo)) for r, cs in regions.items()]
    chosen = _select_groups(groups, r_lo, r_hi, c_lo)
    if not chosen:
        raise _Fail("spread", f"no combination of regions reaches {c_lo} member(s)")
    selected = [regions[r][0] for r in chosen]
    rest = _order(model, term, [c for r in chosen for c in regions[r][1:]], current)
    need = min(len(selected) + len(rest), c_hi)
    return selected + rest[:max(0, need - len(selected))]


def _assign(model: TenantModel, term: Term, selected: list[str], current: frozenset[str]) -> tuple[list[str], str]:
    """Which selected members end up with replicas, and a note on how they are split."""
    if model.duplicated:
        return selected, ""
    if model.division == "static":
        weighted = [c for c in selected if model.weights.get(c, 0) > 0]
        if not weighted:
            return selected, "equal weights (no weight matches these members)"
        shares = ", ".join(f"{c}:{model.weights[c]}" for c in weighted)
        return weighted, f"weights {shares}"
    # dynamic/aggregated: replicas already on survivors stay (Steady mode); the rest go by available replicas,
    # earlier overflow tiers first. Without capacity, that is the earliest tier with a feasible member.
    first_tier = min(term.tier_of(c) for c in selected)
    tier_members = [c for c in selected if term.tier_of(c) == first_tier]
    keep = [c for c in selected if c in current]
    if model.division == "aggregated":
        chosen = keep or tier_members[:1]
    else:
        chosen = sorted(set(keep) | set(tier_members), key=selected.index)
    later = [term.tiers[i].group for i in range(first_tier + 1, len(term.tiers)) if term.tiers[i].clusters]
    note = f"spills into {', '.join(later)} when full" if later else ""
    return chosen, note


def _schedule(model: TenantModel, binding: Binding, start: int, current: frozenset[str], down: frozenset[str],
              peers: Mapping[str, frozenset[str]], region_of: Mapping[str, str]
              ) -> tuple[Placement | None, str, list[_Fail]]:
    errors: list[_Fail] = []
    for index in range(start, len(model.terms)):
        term = model.terms[index]
        feasible = {c for c in term.clusters if c not in down}
        feasible |= {c for c in current if c in term.clusters and c not in down}
        if binding.anti_group is not None:
            taken = {c for label, cs in peers.items() for c in cs if _group_of(model, label, "anti") ==
                     binding.anti_group and label != binding.label}
            feasible = {c for c in feasible if c in current or c not in taken}
        if binding.affinity_group is not None:
            placed = [cs for label, cs in peers.items() if cs and label != binding.label
                      and _group_of(model, label, "affinity") == binding.affinity_group]
            for cs in placed:
                feasible = {c for c in feasible if c in current or c in cs}
        if not feasible:
            errors.append(_Fail("fit", f"group {term.name} has no feasible member"))
            continue
        try:
            selected = _select(model, term, feasible, current, region_of)
        except _Fail as fail:
            errors.append(_Fail(fail.kind, f"group {term.name}: {fail.why}"))
            continue
        chosen, note = _assign(model, term, selected, current)
        return Placement(frozenset(chosen), index), note, errors
    return None, "", errors


def _group_of(model: TenantModel, label: str, kind: str) -> str | None:
    for b in model.bindings:
        if b.label == label:
            return b.anti_group if kind == "anti" else b.affinity_group
    return None


def _group_name(model: TenantModel, placement: Placement) -> str:
    term = model.terms[placement.term]
    tiers = sorted({term.tiers[term.tier_of(c)].group for c in placement.clusters if term.tier_of(c) < 1000},
                   key=lambda g: [t.group for t in term.tiers].index(g))
    return term.name if tiers == [term.name] or not tiers else f"{term.name} ({', '.join(tiers)})"


def initial_placement(model: TenantModel, clusters: Sequence[Cluster]) -> tuple[dict[str, Placement], list[Row]]:
    region_of = {c.name: c.region for c in clusters}
    placements: dict[str, Placement] = {}
    rows: list[Row] = []
    for binding in model.bindings:
        peers = {label: p.clusters for label, p in placements.items()}
        placement, note, errors = _schedule(model, binding, 0, frozenset(), frozenset(), peers, region_of)
        if placement is None:
            why = "; ".join(e.why for e in errors)
            rows.append(Row(model.tenant, binding.label, "initial", "UNPLACEABLE", (), "-", why))
            placements[binding.label] = Placement(frozenset(), 0)
            continue
        placements[binding.label] = placement
        rows.append(Row(model.tenant, binding.label, "initial", "PLACED", tuple(sorted(placement.clusters)),
                        _group_name(model, placement), note))
    return placements, rows


def loss(model: TenantModel, clusters: Sequence[Cluster], start: Mapping[str, Placement], lost: frozenset[str],
         scenario: str) -> list[Row]:
    """Every binding of the tenant after `lost` members fail, evicted in declared order."""
    region_of = {c.name: c.region for c in clusters}
    fleet_survives = bool({c.name for c in clusters} - lost)
    placements = dict(start)
    rows: list[Row] = []
    for binding in model.bindings:
        before = placements[binding.label]
        hit = before.clusters & lost
        if not before.clusters:
            continue  # never placed (UNPLACEABLE, reported with the initial placement)
        if not hit:
            rows.append(Row(model.tenant, binding.label, scenario, "UNCHANGED", tuple(sorted(before.clusters)),
                            model.terms[before.term].name))
            continue
        if not model.evicts:
            what = "no automatic failover (failover: manual)"
            if model.stateful:
                what = "stateful without a state story: no automatic failover"
            rows.append(Row(model.tenant, binding.label, scenario, "WAITS", tuple(sorted(before.clusters)),
                            model.terms[before.term].name, f"{what}; waits for {', '.join(sorted(hit))}"))
            continue
        survivors = before.clusters - lost
        peers = {label: p.clusters for label, p in placements.items()}
        peers[binding.label] = survivors
        placement, note, errors = _schedule(model, binding, before.term, survivors, lost, peers, region_of)
        if placement is None:
            first = errors[0] if errors else _Fail("fit", "no group")
            why = "; ".join(e.why for e in errors)
            if first.kind == "fit" and not fleet_survives:
                rows.append(Row(model.tenant, binding.label, scenario, "DOWN", (), "-",
                                "no member of this stack's fleet survives"))
                placements[binding.label] = Placement(frozenset(), before.term)
            elif first.kind == "fit":
                rows.append(Row(model.tenant, binding.label, scenario, "DELETED", (), "-",
                                f"#7455: {why}; spec.clusters becomes empty and the old copy is purged"))
                placements[binding.label] = Placement(frozenset(), before.term)
            else:
                rows.append(Row(model.tenant, binding.label, scenario, "DEGRADED", tuple(sorted(survivors)),
                                model.terms[before.term].name, f"lost replicas not replaced: {why}"))
                placements[binding.label] = Placement(survivors, before.term)
            continue
        placements[binding.label] = placement
        notes = [note] if note else []
        if placement.term > before.term:
            notes.append(f"one-way: stays on {model.terms[placement.term].name} after recovery")
        outcome: Outcome = "MOVES"
        if model.duplicated and survivors and placement.clusters <= before.clusters:
            outcome = "TRAFFIC MOVES"
            notes.insert(0, "copies already run there")
        if model.stateful:
            outcome = "RESTORE"
            single = len(placement.clusters) == 1
            injected = single and model.state_preserved and model.purge_mode == "Directly"
            notes.insert(0, f"waits for a restore from {model.restore_from or '?'}"
                         + ("; state labels injected" if injected else "; state labels NOT injected"))
        if not model.duplicated:
            notes.append("Divided: replicas do not return after recovery without a WorkloadRebalancer or scale")
        quota_note = _quota_note(model, placement.clusters, before.clusters)
        if quota_note:
            notes.append(quota_note)
        rows.append(Row(model.tenant, binding.label, scenario, outcome, tuple(sorted(placement.clusters)),
                        _group_name(model, placement), "; ".join(notes)))
    return rows


def tenant_effect(model: TenantModel) -> str:
    """What a member loss does to this tenant, in the words of the issue: traffic moves, replicas are
    rescheduled, or the tenant waits (for a restore, or for the member)."""
    if not model.evicts:
        return "waits for the member to return (no automatic failover)"
    if model.stateful:
        return f"rescheduled, then waits for a restore from {model.restore_from}"
    if model.duplicated and model.region_spread is None and model.cluster_spread is None:
        return "traffic moves: a copy runs on every member of its group"
    return "replicas rescheduled onto surviving members"


def tenant_report(model: TenantModel, clusters: Sequence[Cluster]) -> TenantReport:
    placements, initial = initial_placement(model, clusters)
    rows: list[Row] = []
    by_region: dict[str, list[str]] = {}
    for c in sorted(clusters, key=lambda c: c.name):
        by_region.setdefault(c.region, []).append(c.name)
    for c in sorted(clusters, key=lambda c: c.name):
        alone = by_region[c.region] == [c.name]
        scenario = f"lose {c.name}" + (f" (= region {c.region})" if alone else "")
        rows += loss(model, clusters, placements, frozenset({c.name}), scenario)
    for region, names in sorted(by_region.items()):
        if len(names) > 1:  # a one-member region's loss is that member's loss, already listed
            rows += loss(model, clusters, placements, frozenset(names), f"lose region {region}")
    return TenantReport(model.tenant, tenant_effect(model), tuple(initial), tuple(rows))


def tenant_policies(config: FleetConfig) -> list[tuple[int, TenantConfig, dict[str, Any]]]:
    """(index, tenant, rendered policy) for every tenant policy that places workloads, in config order."""
    regions, members = list(config.regions), list(config.members)
    out: list[tuple[int, TenantConfig, dict[str, Any]]] = []
    for i, tenant in enumerate(config.tenants):
        out.append((i, tenant, fleet.propagation_policy(tenant, regions, members, config.failover)))
    return out


def _quota(tenant: TenantConfig) -> dict[str, Any] | None:
    return fleet.federated_resource_quota(tenant) if tenant.quota is not None else None


_TABLES: dict[str, Report] = {}
"""The last tables computed, by config: preflight (twice in `hubctl plan`: before the program and in it) and the
plan's report read the same one, which at 300 members and 4 tenants is 1,200 scheduling runs over 300 clusters."""


def fleet_whatif(config: FleetConfig) -> Report:
    """The what-if table of the stack: every tenant, every single-member and single-region loss. A pure function
    of the (frozen) config, computed once per config and process."""
    key = config.model_dump_json()
    if key not in _TABLES:
        if len(_TABLES) >= 4:
            _TABLES.pop(next(iter(_TABLES)))
        _TABLES[key] = _fleet_whatif(config)
    return _TABLES[key]


def _fleet_whatif(config: FleetConfig) -> Report:
    clusters = clusters_of(config.members)
    if not clusters:
        return Report(())
    return Report(tuple(tenant_report(model_policy(policy, clusters, _quota(tenant)), clusters)
                        for _, tenant, policy in tenant_policies(config)))


# ------------------------------------------------------------------------------------------ output


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip(),
           "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(out)


def format_whatif(report: Report) -> str:
    """The table `hubctl plan` prints: per tenant its effect line, its initial placement and every loss."""
    if not report.tenants:
        return "what-if: no tenants or no members in this stack"
    parts = []
    effect_rows = [[t.tenant, t.effect] for t in report.tenants]
    parts.append(_table(["tenant", "what a member loss does"], effect_rows))
    rows: list[list[str]] = []
    for t in report.tenants:
        for r in (*t.initial, *t.rows):
            where = ", ".join(r.clusters) or "-"
            rows.append([r.tenant, r.workload, r.scenario, r.outcome, where, r.group, r.note])
    parts.append(_table(["tenant", "workload", "scenario", "outcome", "members", "group", "note"], rows))
    parts.append("limits of this model:\n" + "\n".join(f"- {line}" for line in report.limits))
    return "\n\n".join(parts)
