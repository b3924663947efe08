"""`hubctl diff` for what a reviewer wants (review-newcomer.md §1 #9, #17): the what-if changes in "At a glance",
a reordered list as one reorder, a warning for plans of two stacks, and plans of two days named as such with the
command that renders them as of one day (the epoch is recorded in report.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hubctl.diff import diff_plans, iter_changes
from hubctl.diff_render import markdown
from tests.support.plans import K8S_PROVIDER, PlanDir


def policy(groups: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": "search", "namespace": "search"},
            "spec": {"placement": {"clusterAffinities": groups}}}


def group(name: str, regions: list[str]) -> dict[str, Any]:
    return {"affinityName": name, "labelAffinity": {"matchExpressions": [
        {"key": "topology.kubernetes.io/region", "operator": "In", "values": regions}]}}


def plan_with(obj: dict[str, Any], sections: dict[str, Any] | None = None) -> PlanDir:
    p = PlanDir()
    policies = p.component("FleetPolicies", "policies")
    provider = p.add(K8S_PROVIDER, "k8s-karmada", {}, policies)
    p.k8s(obj, policies, f"{provider}::id")
    p.sections = sections
    return p


def diff(tmp_path: Path, old: PlanDir, new: PlanDir, stacks: tuple[str, str] = ("dev", "dev"),
         epochs: tuple[str, str] | None = None) -> tuple[Any, str]:
    dirs = old.write(tmp_path / "old"), new.write(tmp_path / "new")
    plans = []
    for d, stack, day in zip(dirs, stacks, epochs or (None, None), strict=True):
        plan = json.loads((d / "plan.json").read_text())
        plan["stack"] = stack
        plans.append(plan)
        if day is not None:
            report = json.loads((d / "report.json").read_text())
            (d / "report.json").write_text(json.dumps({**report, "planEpoch": day}))
    result = diff_plans(plans[0], plans[1], *dirs)
    return result, markdown(result)


def test_a_reordered_value_list_is_one_reorder(tmp_path: Path) -> None:
    old = plan_with(policy([group("preferred", ["eu-fsn", "eu-hel"])]))
    new = plan_with(policy([group("preferred", ["eu-hel", "eu-fsn"])]))
    result, text = diff(tmp_path, old, new)
    (change,) = [c for r in iter_changes(result) for c in r.changes]
    assert change.path.endswith("matchExpressions[key=topology.kubernetes.io/region].values")
    assert (change.before, change.after) == (["eu-fsn", "eu-hel"], ["eu-hel", "eu-fsn"])
    assert "(reordered)" in text and "(absent)" not in text


def test_groups_tried_in_another_order_are_a_reorder_not_nothing(tmp_path: Path) -> None:
    """clusterAffinities are matched by affinityName; the order is which group is tried first, so it must show."""
    a, b = group("preferred", ["eu-fsn"]), group("overflow", ["eu-hel"])
    result, text = diff(tmp_path, plan_with(policy([a, b])), plan_with(policy([b, a])))
    (change,) = [c for r in iter_changes(result) for c in r.changes]
    assert change.path == "spec.placement.clusterAffinities"
    assert (change.before, change.after) == (["preferred", "overflow"], ["overflow", "preferred"])
    assert "(reordered)" in text


def whatif(initial: list[str], lose_first: tuple[str, list[str]]) -> dict[str, Any]:
    rows = {"initial": [{"tenant": "search", "workload": "workloads", "scenario": "initial", "outcome": "PLACED",
                         "clusters": initial, "group": "preferred"}],
            "losses": [{"tenant": "search", "workload": "workloads", "scenario": "lose dev-hel1-a",
                        "outcome": lose_first[0], "clusters": lose_first[1], "group": "fleet-fallback"}]}
    return {"whatif": {"title": "what-if", "metrics": {}, "data": {"tenants": [{"tenant": "search", **rows}]}}}


def test_a_placement_change_shows_its_what_if_at_a_glance(tmp_path: Path) -> None:
    old = plan_with(policy([group("preferred", ["eu-fsn"])]), whatif(["dev-fsn1-a"], ("UNCHANGED", ["dev-fsn1-a"])))
    new = plan_with(policy([group("preferred", ["eu-hel"])]), whatif(["dev-hel1-a"], ("MOVES", ["dev-fsn1-a"])))
    result, text = diff(tmp_path, old, new)
    assert result.whatif == ["search/workloads, initial: PLACED dev-fsn1-a → PLACED dev-hel1-a",
                             "search/workloads, lose dev-hel1-a: UNCHANGED dev-fsn1-a → MOVES dev-fsn1-a"]
    glance = text.split("#### At a glance", 1)[1].split("####", 1)[0]
    assert "**what-if: 2 placements or loss outcomes change**" in glance
    assert "`search/workloads, lose dev-hel1-a: UNCHANGED dev-fsn1-a → MOVES dev-fsn1-a`" in glance


def test_plans_of_two_stacks_are_flagged(tmp_path: Path) -> None:
    same = plan_with(policy([group("preferred", ["eu-fsn"])]))
    result, text = diff(tmp_path, same, same.copy(), stacks=("dev", "prod-hub"))
    assert result.notes[0].startswith("⚠ these are plans of two different stacks (dev → prod-hub)")
    assert text.index("two different stacks") < text.index("No changes.")


def test_plans_of_two_days_name_the_command_that_aligns_them(tmp_path: Path) -> None:
    sections = whatif(["dev-fsn1-a"], ("UNCHANGED", ["dev-fsn1-a"]))
    same = plan_with(policy([group("preferred", ["eu-fsn"])]), sections)
    result, text = diff(tmp_path, same, same.copy(), epochs=("2026-11-30", "2026-12-01"))
    assert "Re-render the head as of the base's day" in text
    assert result.notes[0] == (
        "⚠ the plans were made for different days (base 2026-11-30, head 2026-12-01): offline certificates start on "
        "their plan's day, so every certificate, and whatever embeds one, shows as changed. Re-render the head as "
        "of the base's day: `hubctl plan dev --epoch 2026-11-30 --out <dir>`")
    assert not diff(tmp_path / "same-day", same, same.copy(), epochs=("2026-11-30", "2026-11-30"))[0].notes


def test_the_plan_records_its_epoch_and_refuses_a_bad_one(monkeypatch: Any) -> None:
    import io

    from hubctl.__main__ import main
    from hubctl.mocks import EPOCH_ENV, plan_epoch
    from hubctl.plan import Plan
    from hubctl.report import document

    monkeypatch.setenv(EPOCH_ENV, "2026-11-30")
    doc = document(Plan(project="karmada-hub", stack="dev", records=[], outputs={}), [], [])
    assert doc["planEpoch"] == "2026-11-30" and plan_epoch().isoformat() == "2026-11-30T00:00:00+00:00"
    err = io.StringIO()
    assert main(["plan", "dev", "--epoch", "30.11.2026"], stdout=io.StringIO(), stderr=err) == 2
    assert err.getvalue() == "error: --epoch: '30.11.2026' is not a date like 2026-11-30 (YYYY-MM-DD)\n"
    monkeypatch.setenv(EPOCH_ENV, "tomorrow")
    err = io.StringIO()
    assert main(["plan", "dev"], stdout=io.StringIO(), stderr=err) == 2
    assert err.getvalue() == "error: HUBCTL_PLAN_EPOCH: 'tomorrow' is not a date like 2026-11-30 (YYYY-MM-DD)\n"
