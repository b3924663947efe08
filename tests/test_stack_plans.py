"""Every example stack plans offline, passes the policy rules, and has the wiring its role promises.

prod-hub runs the hub, the control plane and the fleet's one external-dns (with the status refresher);
each prod-<region> stack joins its members and puts up its regional LB against prod-hub's plan outputs
(the offline stand-in for the StackReference), and runs no external-dns of its own.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.traffic import docs as traffic
from components.traffic import failover_docs, nameserver_docs
from components.traffic import refresher_docs as status_refresher
from hubctl.commands import load_config
from hubctl.mocks import unwrap
from hubctl.plan import Plan, render_files, run_program
from hubctl.policy_check import check_plan
from tests.support.rendered import objects
from tests.support.tools import REPO, edited_stack

REGIONS = {"prod-fsn1": "eu-fsn", "prod-hel1": "eu-hel", "prod-ash": "us-ash"}


@pytest.fixture(scope="module")
def prod_plans(rendered_prod: dict[str, Plan]) -> dict[str, Plan]:
    """prod-hub, then each region stack with the hub plan's outputs as its StackReference."""
    return rendered_prod


def _records(plan: Plan, typ: str) -> list[Any]:
    return [r for r in plan.records if r.type == typ]


@pytest.mark.parametrize("stack", ["prod-hub", *REGIONS])
def test_stack_plans_and_passes_policy(prod_plans: dict[str, Plan], stack: str) -> None:
    files = render_files(prod_plans[stack])  # also refuses to render a plan that would leak a secret
    violations = check_plan(json.loads(files["plan.json"]))
    assert not violations, violations


def _deployments(plan: Plan, target: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for t, o in objects(plan) if t == target and o["kind"] == "Deployment"}


def test_prod_hub_owns_the_fleet_names(prod_plans: dict[str, Plan]) -> None:
    hub = prod_plans["prod-hub"]
    deployments = _deployments(hub, "host")
    # dns.mode self-hosted: no external-dns; the controller writes the zone to the hub's own nameservers
    assert traffic.EXTERNAL_DNS_NAME not in deployments
    args = deployments[failover_docs.NAME]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--dns-mode=self-hosted" in args and "--ttl=15" in args
    assert [a for a in args if a.startswith("--nameserver=")] == [
        "--nameserver=10.0.1.11:53", "--nameserver=10.0.1.12:53", "--nameserver=10.0.1.13:53"]
    assert status_refresher.NAME in deployments
    assert deployments[failover_docs.NAME]["spec"]["replicas"] == 3, "the failover controller: one per hub server"
    (knot,) = [o for t, o in objects(hub) if t == "host" and o["kind"] == "DaemonSet"]
    assert knot["metadata"]["namespace"] == nameserver_docs.NAMESPACE
    namespaces = {o["metadata"]["name"] for t, o in objects(hub) if t == "karmada" and o["kind"] == "Namespace"}
    assert traffic.INGRESS_NAMESPACE in namespaces  # the fleet's, so no region stack owns it
    # its records at Hetzner are the delegation: the NS set of prod.example.com and the nameservers' addresses
    # in example.com; the API name lies in the delegated zone, so the nameservers serve it (a static record)
    records = sorted((r["zone"], r["name"], r["type"]) for r in (unwrap(x.inputs) for x in _records(
        hub, "hcloud:index/zoneRrset:ZoneRrset")))
    assert records == [("example.com", "ns0-prod", "A"), ("example.com", "ns1-prod", "A"),
                       ("example.com", "ns2-prod", "A"), ("example.com", "prod", "NS")]
    zone = json.loads(next(o for t, o in objects(hub) if t == "host" and o["kind"] == "ConfigMap"
                           and o["metadata"]["name"] == nameserver_docs.CONFIGMAP)["data"]["zone.json"])
    assert [r["name"] for r in zone["static"]] == ["api.hub.prod.example.com."]


@pytest.mark.parametrize(("stack", "region"), REGIONS.items())
def test_region_stack_joins_its_members_behind_one_private_lb(prod_plans: dict[str, Plan], stack: str,
                                                             region: str) -> None:
    plan = prod_plans[stack]
    _, config = load_config(REPO, stack)
    # The hub owns every member's Cluster object (a region may not write a secretRef, a Pull agent may not create
    # or change a Cluster). The region writes the Push credentials and runs the Pull agents.
    assert not [o for t, o in objects(plan) if t == "karmada" and o["kind"] in ("Cluster", "Namespace")]
    hub_clusters = {o["metadata"]["name"] for t, o in objects(prod_plans["prod-hub"])
                    if t == "karmada" and o["kind"] == "Cluster"}
    assert {m.name for m in config.members} <= hub_clusters
    for m in config.members:
        if m.sync_mode == "Pull":
            assert "karmada-agent" in _deployments(plan, f"member-{m.name}")
    (lb,) = [unwrap(r.inputs) for r in _records(plan, "hcloud:index/loadBalancer:LoadBalancer")]
    assert lb["location"] == config.regions[region].location
    (attachment,) = _records(plan, "hcloud:index/loadBalancerNetwork:LoadBalancerNetwork")
    assert unwrap(attachment.inputs)["networkId"] == config.regions[region].network_id
    targets = _records(plan, "hcloud:index/loadBalancerTarget:LoadBalancerTarget")
    assert len(targets) == len(config.members)
    for target in targets:
        assert unwrap(target.inputs)["usePrivateIp"] is True
        assert attachment.urn in target.dependencies  # targets on private IPs need the attachment first
    # review H5: no DNS token, no record; the drill record <region>.lb.<domain> is served from the region ConfigMap
    assert _records(plan, "hcloud:index/zoneRrset:ZoneRrset") == []
    (override,) = [o for t, o in objects(plan) if t == "karmada" and o["kind"] == "OverridePolicy"
                   and o["metadata"]["namespace"] == traffic.INGRESS_NAMESPACE]
    assert override["metadata"]["name"] == f"{traffic.INGRESS_CONTROLLER}-publish-status-{region}"
    assert sorted(r["targetCluster"]["clusterNames"][0] for r in override["spec"]["overrideRules"]) == sorted(
        m.name for m in config.members)
    # no second owner of the fleet's names: external-dns and the refresher run only in prod-hub
    names = {o["metadata"]["name"] for _, o in objects(plan)}
    assert traffic.EXTERNAL_DNS_NAME not in names and status_refresher.NAME not in names
    assert failover_docs.NAME not in names
    # the region publishes its LB to the hub's failover controller, on the hub's host cluster
    (cm,) = [o for t, o in objects(plan) if t == "host" and o["kind"] == "ConfigMap"]
    assert cm["metadata"] == {**cm["metadata"], "name": f"traffic-region-{region}",
                              "namespace": failover_docs.NAMESPACE}
    assert cm["metadata"]["annotations"][failover_docs.MEMBERS_ANNOTATION] == ",".join(
        sorted(m.name for m in config.members))


def test_without_a_network_id_the_lb_uses_public_ips() -> None:
    def no_network(regions: dict[str, Any]) -> None:
        for region in regions.values():
            region.pop("networkId")

    plan = run_program(REPO, edited_stack("dev", {"regions": no_network}))
    attachments = _records(plan, "hcloud:index/loadBalancerNetwork:LoadBalancerNetwork")
    assert all("HubCluster" in r.urn for r in attachments)  # only the hub's own API LB joins a network
    targets = [r for r in _records(plan, "hcloud:index/loadBalancerTarget:LoadBalancerTarget")
               if "RegionalTraffic" in r.urn]
    assert len(targets) == 2 and all(unwrap(t.inputs)["usePrivateIp"] is False for t in targets)


@pytest.mark.parametrize("stack", ["prod-hub", *REGIONS])
def test_no_resource_needs_a_disabled_default_provider(prod_plans: dict[str, Plan], stack: str) -> None:
    """`pulumi up` refuses a resource whose package's default provider the stack disables; the mock
    runtime does not, so it is checked here: those packages must only be used with explicit providers."""
    _assert_explicit_providers(stack, prod_plans[stack])


def test_dev_needs_no_disabled_default_provider(rendered_dev: Plan) -> None:
    _assert_explicit_providers("dev", rendered_dev)


def _assert_explicit_providers(stack: str, plan: Plan) -> None:
    import yaml

    config = yaml.safe_load((REPO / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]
    disabled = set(config.get("pulumi:disable-default-providers", []))
    assert "kubernetes" in disabled  # never the ambient kubeconfig
    offenders = [r.urn for r in plan.records if r.custom and not r.provider and not r.type.startswith("pulumi:")
                 and ("*" in disabled or r.type.split(":")[0] in disabled)]
    assert not offenders, offenders[:5]


def test_no_two_prod_stacks_manage_the_same_object(prod_plans: dict[str, Plan]) -> None:
    """prod-hub and every region stack write to the same karmada-apiserver and host cluster: an object two
    stacks both manage would flip between their versions on every `up`, and `destroy` of one would delete
    it under the other. Each (API server, kind, namespace, name) has exactly one owning stack."""
    owners: dict[tuple[str, str, str, str], list[str]] = {}
    for stack, plan in prod_plans.items():
        for target, obj in objects(plan):
            if target.startswith("member-"):
                continue  # each member belongs to exactly one region stack
            meta = obj["metadata"]
            key = (target, obj["kind"], meta.get("namespace", ""), meta["name"])
            owners.setdefault(key, []).append(stack)
    shared = {k: v for k, v in owners.items() if len(v) > 1}
    assert not shared, shared


def test_no_two_prod_stacks_claim_the_same_hetzner_name(prod_plans: dict[str, Plan]) -> None:
    """Hetzner names are unique per project (servers, LBs, networks, firewalls), and a DNS record set is one
    (zone, name, type): two stacks claiming one would fail on create or fight over it."""
    owners: dict[tuple[str, ...], list[str]] = {}
    for stack, plan in prod_plans.items():
        for r in plan.records:
            if not r.type.startswith("hcloud:") or not r.custom:
                continue
            inputs = unwrap(r.inputs)
            if r.type == "hcloud:index/zoneRrset:ZoneRrset":
                key: tuple[str, ...] = (r.type, inputs["zone"], inputs["name"], inputs["type"])
            elif "name" in inputs:
                key = (r.type, inputs["name"])
            else:
                continue
            owners.setdefault(key, []).append(stack)
    assert owners and not {k: v for k, v in owners.items() if len(v) > 1}


def test_the_delegation_waits_for_the_controller_and_the_nameservers(rendered_dev: Plan) -> None:
    """dns.mode self-hosted: the parent zone's NS records (the delegation itself) are created after the failover
    controller's Deployment (ready = every known name decided and on a nameserver) and the Knot DaemonSet, so a
    resolver never meets nameservers that do not hold the names yet; the address records need nothing."""
    urn = {(r.type, r.name): r.urn for r in rendered_dev.records}
    deployment = next(u for (t, n), u in urn.items() if t == "kubernetes:apps/v1:Deployment"
                      and n.endswith(f"-{failover_docs.NAME}"))
    daemonset = next(u for (t, n), u in urn.items() if t == "kubernetes:apps/v1:DaemonSet")
    rrsets = [r for r in rendered_dev.records if r.type == "hcloud:index/zoneRrset:ZoneRrset"]
    (ns,) = [r for r in rrsets if unwrap(r.inputs)["type"] == "NS"]
    assert {deployment, daemonset} <= set(ns.dependencies)
    assert unwrap(ns.inputs)["labels"] == {nameserver_docs.DELEGATION_LABEL: "delegation"}
    for record in rrsets:
        if record is not ns:
            assert deployment not in record.dependencies


def test_dns_mode_hetzner_still_plans_and_passes_policy(rendered_dev_hetzner: Plan) -> None:
    """No example stack runs dns.mode hetzner any more; its path stays: dev switched to it renders external-dns,
    no nameservers, a 60 s TTL, and passes the policy pack."""
    files = render_files(rendered_dev_hetzner)
    assert not check_plan(json.loads(files["plan.json"]))
    deployments = _deployments(rendered_dev_hetzner, "host")
    assert traffic.EXTERNAL_DNS_NAME in deployments
    assert not [o for t, o in objects(rendered_dev_hetzner) if o["kind"] == "DaemonSet"]
    args = deployments[failover_docs.NAME]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--ttl=60" in args and not [a for a in args if a.startswith(("--dns-mode=self", "--nameserver"))]


@pytest.mark.parametrize("stack", ["prod-fsn1", "prod-hel1", "prod-ash"])
def test_a_region_stack_has_no_dns_provider_and_writes_no_record(prod_plans: dict[str, Any], stack: str) -> None:
    """Review H5: no provider holding the zone's token, no record set; the region's address reaches DNS only
    through the hub (its ConfigMap on the host, which the hub's failover controller reads)."""
    records = prod_plans[stack].records
    assert not [r.name for r in records if r.type == "pulumi:providers:hcloud" and r.name == "hcloud-dns"]
    assert not [r.name for r in records if r.type.startswith("hcloud:index/zoneRrset")]
