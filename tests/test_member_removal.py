"""Removing a member from the stack removes everything the program made for it, on every API server,
and nothing of anyone else: its Cluster, its credentials in the karmada-apiserver, the join objects in
the member, its scheduler-estimator and NetworkPolicy on the host, its LB target and its share of the status
override, for Push and Pull members alike (the hub owns every Cluster; docs/runbooks/members.md)."""

from __future__ import annotations

from typing import Any

from hubctl.plan import Plan, run_program
from tests.support.tools import REPO, edited_stack


def _without(member: str) -> Plan:
    left: set[str] = set()

    def members(value: list[dict[str, Any]]) -> None:
        value[:] = [m for m in value if m["name"] != member]
        left.update(m["region"] for m in value)

    def tenants(value: list[dict[str, Any]]) -> None:
        for tenant in value:
            tenant["placement"].get("weights", {}).pop(member, None)
            # a region left without members cannot be placed on (placement names members), so the operator drops it
            if "preferredRegions" in tenant["placement"]:
                tenant["placement"]["preferredRegions"] = [r for r in tenant["placement"]["preferredRegions"]
                                                           if r in left]
            quota = tenant.get("quota")
            if quota:
                quota["staticAssignments"] = [a for a in quota["staticAssignments"] if a["cluster"] != member]
            # an overflow group left without members is refused, so the operator drops it with the member
            groups = [g for g in tenant["placement"].get("overflow", [])
                      if member not in g.get("clusters", []) and (not g.get("regions") or set(g["regions"]) & left)]
            if "overflow" in tenant["placement"]:
                # overflow spills from the preferred group: without one left, there is nothing to spill from
                tenant["placement"]["overflow"] = groups if tenant["placement"].get("preferredRegions") else []

    return run_program(REPO, edited_stack("dev", {"members": members, "tenants": tenants}))


def _by_urn(plan: Plan) -> dict[str, Any]:
    return {r.urn: r for r in plan.records}


def test_removing_a_push_member_removes_its_objects_and_credentials(rendered_dev: Plan) -> None:
    before, after = _by_urn(rendered_dev), _by_urn(_without("dev-fsn1-a"))
    removed = {before[u].name for u in set(before) - set(after)}
    assert not set(after) - set(before), "removing a member must not add anything"
    expected = {
        "karmada-cluster-dev-fsn1-a",                                  # the Cluster object (the hub's half)
        "karmada-secret-karmada-cluster-dev-fsn1-a",                   # its token + CA in the hub
        "karmada-secret-karmada-cluster-dev-fsn1-a-impersonator",      # its impersonator token
        "member-dev-fsn1-a-serviceaccount-karmada-cluster-karmada-dev-fsn1-a",  # the member-side SA
        "k8s-member-dev-fsn1-a",                                       # its provider
        "host-deployment-karmada-system-karmada-scheduler-estimator-dev-fsn1-a",
        "host-secret-karmada-system-karmada-scheduler-estimator-dev-fsn1-a-member-token",      # region-written
        "host-configmap-karmada-system-karmada-scheduler-estimator-dev-fsn1-a-member-kubeconfig",  # hub-written
        "host-networkpolicy-karmada-system-karmada-scheduler-estimator-dev-fsn1-a-ingress",
        "member-dev-fsn1-a-estimator-serviceaccount-karmada-cluster-karmada-scheduler-estimator",  # its reader
        "traffic-eu-fsn-lb-dev-fsn1-a",                                # its LB target
    }
    assert expected <= removed, sorted(expected - removed)
    assert not [n for n in removed if "hel1" in n], "nothing of the other member may go"


def test_removing_a_pull_member_removes_its_agent_and_hub_rbac(rendered_dev: Plan) -> None:
    """Its Cluster is the hub's and goes with it; so do the agent and the hub RBAC that admits it."""
    before, after = _by_urn(rendered_dev), _by_urn(_without("dev-hel1-a"))
    removed = {before[u].name for u in set(before) - set(after)}
    expected = {
        "karmada-cluster-dev-hel1-a",                                         # the Cluster (the hub's)
        "k8s-member-dev-hel1-a",
        "member-dev-hel1-a-join",                                            # PullJoin: deletes the token
        "member-dev-hel1-a-job-karmada-system-karmada-agent-join",
        "member-dev-hel1-a-deployment-karmada-system-karmada-agent",
        "member-dev-hel1-a-cronjob-karmada-system-karmada-agent-restart",
        "karmada-clusterrole-system-karmada-dev-hel1-a-agent",               # the hub RBAC that admits it
        "karmada-clusterrolebinding-system-karmada-dev-hel1-a-agent",
        "karmada-role-karmada-system-system-karmada-dev-hel1-a-agent-leader",
        "karmada-rolebinding-karmada-es-dev-hel1-a-system-karmada-dev-hel1-a-agent-work",
    }
    assert expected <= removed, sorted(expected - removed)
    assert not [n for n in removed if "fsn1" in n], "nothing of the other member may go"


def test_push_join_takes_the_token_from_the_created_secret_not_a_read(rendered_dev: Plan) -> None:
    """The Cluster's credentials come from the member's token Secret as created (the provider waits for the
    token controller); no `.get` of it runs, which in a first preview would read a Secret that does not exist."""
    import base64

    from hubctl.mocks import unwrap

    reads = [r.name for r in rendered_dev.records if r.options.get("read") and r.type == "kubernetes:core/v1:Secret"]
    assert reads == ["member-dev-fsn1-a-capi-kubeconfig", "member-dev-hel1-a-capi-kubeconfig"]
    token_secret = next(r for r in rendered_dev.records
                        if r.name == "member-dev-fsn1-a-secret-karmada-cluster-karmada-dev-fsn1-a")
    member_token = base64.b64decode(unwrap(token_secret.outputs)["data"]["token"]).decode()
    hub_secret = next(r for r in rendered_dev.records if r.name == "karmada-secret-karmada-cluster-dev-fsn1-a")
    assert base64.b64decode(unwrap(hub_secret.inputs)["data"]["token"]).decode() == member_token


def test_objects_the_hub_took_over_keep_their_identity_in_an_all_in_one_stack(rendered_dev: Plan) -> None:
    """Tenant namespaces, Push Clusters, the Pull agent's RBAC and the estimators moved from MemberCluster and
    FleetPolicies to MemberRegistry. Without an alias an existing stack would create each anew and then delete
    the old resource, and with it the object of the same name (a Cluster: the member's workloads)."""
    urns = {r.urn for r in rendered_dev.records}
    moved = {r.name: r.options.get("aliasParents") for r in rendered_dev.records
             if r.parent.endswith("karmada-hub:index:MemberRegistry::registry")}
    expected = {
        "karmada-namespace-shop": "karmada-hub:index:FleetPolicies::policies",
        "karmada-cluster-dev-fsn1-a": "karmada-hub:index:MemberCluster::member-dev-fsn1-a",
        "karmada-clusterrole-system-karmada-dev-hel1-a-agent": "karmada-hub:index:MemberCluster::member-dev-hel1-a",
        "host-deployment-karmada-system-karmada-scheduler-estimator-dev-fsn1-a":
            "karmada-hub:index:MemberCluster::member-dev-fsn1-a",
        "scheduler-estimator-dev-fsn1-a-key": "karmada-hub:index:MemberCluster::member-dev-fsn1-a",
    }
    for name, old_parent in expected.items():
        (alias,) = moved[name]
        assert alias.endswith(f"::{old_parent}") and alias in urns, (name, alias)


def test_a_tenant_group_without_members_is_one_line_naming_the_tenant_key() -> None:
    """Placement names members; a preferred or overflow group whose regions have none is refused by preflight with
    the tenant's key (and the same group with one member left passes)."""
    import pytest

    from components.config import ConfigError
    from components.operations import preflight
    from tests.support.tools import load_stack

    config = load_stack("dev")
    preflight.check_tenant_groups(config, "stacks/Pulumi.dev.yaml")
    hel = [m.name for m in config.members if m.region == "eu-hel"]
    without_hel = config.model_copy(update={"members": [m for m in config.members if m.region != "eu-hel"]})
    with pytest.raises(ConfigError, match=r"^stacks/Pulumi.dev.yaml: karmada-hub:tenants\[1\].placement."
                                          r"overflow\[0\].regions: no member in eu-hel \(tenant search\)"):
        preflight.check_tenant_groups(without_hel, "stacks/Pulumi.dev.yaml")
    assert hel
