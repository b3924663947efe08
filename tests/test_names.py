"""Every derived name within its limit before anything runs (components/operations/names.py).

The longest allowed value of a key is computed from the derived forms, not written down: a member one
character longer is refused with one line, and a member at the limit plans and renders only valid names.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.config import ConfigError, FleetConfig
from components.kube import names as rules
from components.operations import names
from hubctl.mocks import unwrap
from hubctl.plan import manifests, run_program
from tests.support.tools import REPO, copy_program, edited_stack, load_stack, program_env


def _members(**changes: dict[str, Any]) -> list[dict[str, Any]]:
    """dev's members, member `i` changed by `changes['m<i>']` (a new name also renames its CAPI cluster)."""
    out = []
    for i, member in enumerate(load_stack("dev").members):
        doc = member.model_dump(by_alias=True, mode="json")
        change = changes.get(f"m{i}", {})
        if "name" in change:
            doc["credentials"] = {**doc["credentials"], "cluster": change["name"]}
        out.append({**doc, **change})
    return out


ESTIMATORS_OFF = {"schedulerEstimator": False}
"""With karmada.schedulerEstimators off no member runs an estimator; then a Pull member's agent CN binds."""


def _config(estimators: bool = True, **changes: dict[str, Any]) -> FleetConfig:
    if not estimators:
        changes = {f"m{i}": {**ESTIMATORS_OFF, **changes.get(f"m{i}", {})} for i in range(2)}
    members = _members(**changes)
    names_ = [m["name"] for m in members]
    tenants = [t.model_dump(by_alias=True, mode="json") for t in load_stack("dev").tenants]
    for t in tenants:  # the tenants name dev's members in weights and quotas: follow the renames
        text = yaml.safe_dump(t)
        for old, new in zip(("dev-fsn1-a", "dev-hel1-a"), names_, strict=True):
            text = text.replace(old, new)
        t.clear()
        t.update(yaml.safe_load(text))
    karmada = load_stack("dev").karmada.model_dump(by_alias=True, mode="json")
    if not estimators:  # dev's tenants need gates that act through the estimators: leave them out
        karmada.update(schedulerEstimators=False, featureGates=[])
        tenants = []
    return load_stack("dev", members=members, tenants=tenants, karmada=karmada)


def _limit(member: int, estimators: bool = True) -> int:
    """The longest name member `member` may have, read off the refusal of a 48-character one."""
    with pytest.raises(ConfigError) as err:
        names.check(_config(estimators, **{f"m{member}": {"name": "a" * 48}}), "stacks/Pulumi.dev.yaml")
    return int(re.search(r"use at most (\d+) characters", str(err.value)).group(1))


def test_the_limits_come_from_the_derived_forms() -> None:
    # dev: member 0 is Push, member 1 Pull; with estimators on every member runs one on the hub.
    pull, estimator = _limit(1, estimators=False), _limit(0)
    assert (pull, estimator) == (43, 35), "system:karmada:agent:<m> <= 64 bytes; karmada-scheduler-estimator-<m> <= 63"
    assert _limit(1) == estimator, "the tightest limit wins: a Pull member with an estimator is bound by it"
    for member, limit, estimators in ((1, pull, False), (0, estimator, True), (1, estimator, True)):
        names.check(_config(estimators, **{f"m{member}": {"name": "a" * limit}}), "stacks/Pulumi.dev.yaml")
        with pytest.raises(ConfigError, match=rf"members\[{member}\]\.name: .*use at most {limit} characters"):
            names.check(_config(estimators, **{f"m{member}": {"name": "a" * (limit + 1)}}),
                        "stacks/Pulumi.dev.yaml")


def test_a_44_character_pull_member_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    repo = copy_program(tmp_path / "repo")
    stack = repo / "stacks" / "Pulumi.dev.yaml"
    doc = yaml.safe_load(stack.read_text())
    name = "dev-hel1-" + "x" * 35
    assert len(name) == 44
    doc["config"]["karmada-hub:members"][1]["name"] = name
    doc["config"]["karmada-hub:members"][1]["credentials"]["cluster"] = name
    # Without estimators (and so without the tenants whose gates act through them) the agent's CN binds.
    doc["config"]["karmada-hub:karmada"].update(schedulerEstimators=False, featureGates=[])
    for member in doc["config"]["karmada-hub:members"]:
        member["schedulerEstimator"] = False
    doc["config"]["karmada-hub:tenants"] = []
    stack.write_text(yaml.safe_dump(doc, sort_keys=False).replace("dev-hel1-a", name))
    out = tmp_path / "plans"
    result = subprocess.run([sys.executable, "-m", "hubctl", "plan", "dev", "--out", str(out)], cwd=repo,
                            capture_output=True, text=True, timeout=300, env=program_env())
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"error: stacks/Pulumi.dev.yaml: karmada-hub:members[1].name: '{name}' makes the "
                                    f"Pull agent certificate CN 'system:karmada:agent:{name}' 65 bytes, over the 64")
    assert result.stderr.rstrip().endswith("use at most 43 characters")
    assert not out.exists()


@pytest.fixture(scope="module", params=["estimators", "no-estimators"])
def longest_plan(request: pytest.FixtureRequest) -> Any:
    """dev with each member at its longest allowed name and the hub name at its own limit: with estimators
    (every member at 35 characters) and without (the Pull member at 43, the Push member at Karmada's 48)."""
    estimators = request.param == "estimators"
    push, pull = ("e" * 35, "p" * 35) if estimators else ("e" * 48, "p" * 43)

    def rename(members: list[dict[str, Any]]) -> None:
        for member, name in zip(members, (push, pull), strict=True):
            member["name"] = name
            member["credentials"]["cluster"] = name
            member["schedulerEstimator"] = estimators

    def tenants(ts: list[dict[str, Any]]) -> None:
        for t in ts:
            for a in (t.get("quota") or {}).get("staticAssignments", []):
                a["cluster"] = {"dev-fsn1-a": push, "dev-hel1-a": pull}[a["cluster"]]
        if not estimators:  # dev's tenants need gates that act through the estimators
            ts.clear()

    def karmada(k: dict[str, Any]) -> None:
        k["schedulerEstimators"] = estimators
        if not estimators:
            k["featureGates"] = []

    def hub(h: dict[str, Any]) -> None:
        h["name"] = "h" * 58

    stack = edited_stack("dev", {"members": rename, "tenants": tenants, "karmada": karmada, "hub": hub})
    raw, secrets = stack.project_values()
    return run_program(REPO, stack), FleetConfig.from_mapping(raw, "stacks/Pulumi.dev.yaml", secrets)


def test_names_at_the_limits_plan_and_are_all_valid(longest_plan: Any) -> None:
    plan, config = longest_plan
    names.check(config, "stacks/Pulumi.dev.yaml")
    objects = [o for objs in manifests(plan).values() for o in objs]
    bad = [(o["kind"], what, value, why) for o in objects for what, value, why in rules.object_violations(o)]
    assert bad == []
    servers = [unwrap(r.inputs["name"]) for r in plan.by_type("hcloud:index/server:Server")]
    assert servers and all(rules.violation(names.HETZNER_SERVER_NAME, s) is None for s in servers)
    assert max(len(s) for s in servers) == 63
    from cryptography import x509

    for record in plan.by_type("tls:index/locallySignedCert:LocallySignedCert"):
        cert = x509.load_pem_x509_certificate(unwrap(record.outputs["certPem"]).encode())
        cn = cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value
        assert len(cn.encode()) <= 64


def test_every_member_derived_name_the_plan_renders_is_checked(longest_plan: Any) -> None:
    """Completeness: a name (or label) in the plan made from a member's name is one names.py knows."""
    plan, config = longest_plan
    known = {(d.what, d.value) for d in names.derived_names(config)}
    members = [m.name for m in config.members]
    objects = [o for objs in manifests(plan).values() for o in objs]
    rendered = {(what, value) for o in objects for what, value, _ in rules.object_names(o)}
    made_from_members = {(w, v) for w, v in rendered if any(m in v for m in members)}
    assert len(made_from_members) >= 10 and made_from_members <= known, sorted(made_from_members - known)[:5]


def test_a_hub_name_one_over_is_refused_at_its_server_names() -> None:
    hub = load_stack("dev").hub.model_dump(by_alias=True, mode="json")
    with pytest.raises(ConfigError, match=r"karmada-hub:hub.name: 'h{59}' makes the hub server name .* use at most 58"):
        names.check(load_stack("dev", hub={**hub, "name": "h" * 59}), "stacks/Pulumi.dev.yaml")


def test_a_member_label_breaking_kubernetes_rules_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"karmada-hub:members\[0\]\.labels\.tier: 'x{64}' makes the Cluster label "
                                          r"value .* 64 characters, over the 63 of a label value"):
        names.check(_config(m0={"labels": {"tier": "x" * 64}}), "stacks/Pulumi.dev.yaml")
    with pytest.raises(ConfigError, match=r"karmada-hub:members\[0\]\.labels: 'bad key!'"):
        names.check(_config(m0={"labels": {"bad key!": "x"}}), "stacks/Pulumi.dev.yaml")


@pytest.mark.parametrize(("rule", "ok", "bad"), [
    (rules.DNS_LABEL, "a" * 63, "a" * 64),
    (rules.DNS_LABEL, "a-b", "-ab"),
    (rules.SERVICE_NAME, "a1", "1a"),
    (rules.LABEL_VALUE, "", "a" * 64),
    (rules.LABEL_VALUE, "A.b_c-1", "a b"),
    (rules.COMMON_NAME, "ü" * 32, "ü" * 33),  # bytes, as cryptography counts them
    (rules.DNS_NAME, ".".join(["a" * 63] * 3), "a" * 64 + ".example.com"),
    (rules.PATH_SEGMENT, "system:karmada:x", "a/b"),
])
def test_rules_at_their_edges(rule: rules.Rule, ok: str, bad: str) -> None:
    assert rules.violation(rule, ok) is None
    assert rules.violation(rule, bad) is not None


def test_label_keys() -> None:
    assert rules.label_key_violation("app.kubernetes.io/name") is None
    assert rules.label_key_violation("a" * 64) is not None
    assert rules.label_key_violation("Bad_Prefix/x") is not None
