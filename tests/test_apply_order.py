"""Orders the real API servers need, checked on the rendered plans (found by running them: tests/test_real_fleet.py).

Pulumi creates resources without a dependency between them concurrently, so every order a controller relies on
must be a declared dependency.
"""

from __future__ import annotations

from typing import Any

from hubctl.mocks import unwrap
from hubctl.plan import Plan


def _closure(plan: Plan, urn: str) -> set[str]:
    by_urn = {r.urn: r for r in plan.records}
    seen: set[str] = set()
    todo = [urn]
    while todo:
        for dep in by_urn[todo.pop()].dependencies:
            if dep not in seen and dep in by_urn:
                seen.add(dep)
                todo.append(dep)
    return seen


def token_secrets_without_their_account(plan: Plan) -> list[str]:
    """Every service-account-token Secret that may be created before its ServiceAccount (the token controller,
    kubernetes v1.35.4 pkg/controller/serviceaccount/tokens_controller.go syncSecret, deletes such a Secret)."""
    accounts = {}
    for r in plan.records:
        obj = unwrap(r.inputs) if r.type == "kubernetes:core/v1:ServiceAccount" else None
        if obj:
            accounts[(r.provider, obj["metadata"].get("namespace"), obj["metadata"]["name"])] = r.urn
    bad = []
    for r in plan.records:
        obj: dict[str, Any] = unwrap(r.inputs) if r.type == "kubernetes:core/v1:Secret" else {}
        if obj.get("type") != "kubernetes.io/service-account-token":
            continue
        meta = obj["metadata"]
        account = (r.provider, meta.get("namespace"), meta["annotations"]["kubernetes.io/service-account.name"])
        if account in accounts and accounts[account] not in _closure(plan, r.urn):
            bad.append(f"{meta.get('namespace')}/{meta['name']}")
    return bad


def test_token_secrets_come_after_their_service_account(rendered_dev: Plan, rendered_prod: dict[str, Plan]) -> None:
    for plan in (rendered_dev, *rendered_prod.values()):
        assert not token_secrets_without_their_account(plan), plan.stack
    assert sum(1 for r in rendered_dev.records if r.type == "kubernetes:core/v1:Secret"
               and unwrap(r.inputs).get("type") == "kubernetes.io/service-account-token") >= 4


def test_an_all_in_one_up_rolls_the_pull_agent_after_the_controllers(rendered_dev: Plan) -> None:
    """dev's karmada-agent Deployment depends, through its join, on karmada-controller-manager and karmada-scheduler:
    one `up` that changes karmada.version rolls them first, so the agent never runs newer than the control plane
    (versions.check_agent). Found by the upgrade rehearsal: before, only the apiservers and the webhook came first."""
    from hubctl.plan import k8s_target

    def find(name: str, target: str) -> Any:
        return next(r for r in rendered_dev.records if r.type == "kubernetes:apps/v1:Deployment"
                    and k8s_target(r.provider) == target and unwrap(r.inputs)["metadata"]["name"] == name)

    before = _closure(rendered_dev, find("karmada-agent", "member-dev-hel1-a").urn)
    for name in ("karmada-controller-manager", "karmada-scheduler", "karmada-webhook",
                 "karmada-aggregated-apiserver"):
        assert find(name, "host").urn in before, name
