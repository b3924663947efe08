"""The dev stack on the real binaries: what must hold once the hub and both members run for real.

One fleet per module (`tests/support/realfleet`): the hub's control plane as rendered (etcd x3 through its prepare
step, karmada-apiserver x3, every component x2 with leader election), a real kube-apiserver standing in for k3s,
two kwok members joined as rendered (dev-fsn1-a Push, dev-hel1-a Pull). Needs root and `make upstream`; skips with
one reason otherwise (a failure where KARMADA_HUB_REQUIRE_TOOLS=1). The last test holds the fleet until five
minutes after bring-up and checks nothing restarted meanwhile.
"""

from __future__ import annotations

import base64
import copy
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import NameOID

from tests.support.kubelet.api import Api, ApiError, wait_for
from tests.support.kubelet.workloads import wait_ready
from tests.support.realfleet.fleet import SKIPPED, RealFleet
from tests.support.tools import require_upstream
from upstream.build import all_binary_names

PUSH, PULL = "dev-fsn1-a", "dev-hel1-a"
QUIET_SECONDS = 300


@pytest.fixture(scope="module")
def fleet() -> Iterator[RealFleet]:
    require_upstream(*all_binary_names())
    with RealFleet() as real:
        real.up()
        real.settled = time.monotonic()  # type: ignore[attr-defined]
        real.restarts_at_settle = real.restarts()  # type: ignore[attr-defined]
        yield real


def _deployment(name: str, namespace: str, replicas: int, cpu: str = "100m") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "docker.io/library/nginx:1.27",
                                         "resources": {"requests": {"cpu": cpu, "memory": "64Mi"},
                                                       "limits": {"cpu": cpu, "memory": "64Mi"}}}]}}}}


def _ready(obj: dict[str, Any] | None, replicas: int) -> bool:
    return bool(obj) and (obj.get("status") or {}).get("readyReplicas") == replicas  # type: ignore[union-attr]


def _conditions(obj: dict[str, Any] | None) -> dict[str, str]:
    return {c["type"]: c["status"] for c in ((obj or {}).get("status") or {}).get("conditions") or []}


def test_every_component_is_ready_and_every_api_served(fleet: RealFleet) -> None:
    assert fleet.rendered is not None
    host_workloads = [o for _, o in fleet.rendered.objects("host") if o["kind"] in ("Deployment", "StatefulSet")]
    for obj in host_workloads:
        key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
        if key in SKIPPED:
            continue
        workload = fleet.workload("host", *key)
        assert len(workload.pods) == obj["spec"]["replicas"], key
        for pod in workload.pods:
            wait_ready(pod, 120)
    for crd in fleet.karmada.list("apiextensions.k8s.io/v1", "CustomResourceDefinition"):
        assert _conditions(crd).get("Established") == "True", crd["metadata"]["name"]
    services = fleet.karmada.list("apiregistration.k8s.io/v1", "APIService")
    assert any(s["metadata"]["name"] == "v1alpha1.cluster.karmada.io" for s in services)
    for service in services:
        assert _conditions(service).get("Available") == "True", service["metadata"]["name"]


def test_both_members_are_ready_clusters_and_the_pull_agent_is_its_own(fleet: RealFleet) -> None:
    def clusters() -> dict[str, dict[str, Any]] | None:
        found = {c["metadata"]["name"]: c for c in fleet.karmada.list("cluster.karmada.io/v1alpha1", "Cluster")}
        return found if all(_conditions(found.get(m)).get("Ready") == "True" for m in (PUSH, PULL)) else None

    found = wait_for("both Clusters Ready", clusters, 180, 2)
    assert found[PUSH]["spec"]["syncMode"] == "Push" and found[PULL]["spec"]["syncMode"] == "Pull"
    secret = fleet.member_api(PULL).get("v1", "Secret", "karmada-kubeconfig", "karmada-system")
    assert secret is not None
    config = yaml.safe_load(base64.b64decode(next(iter(secret["data"].values()))))
    cert = x509.load_pem_x509_certificate(base64.b64decode(config["users"][0]["user"]["client-certificate-data"]))
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == f"system:karmada:agent:{PULL}"
    assert [a.value for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)] == [
        "system:karmada:agents"]


def test_the_webhook_admitted_the_tenants_policies_and_refuses_a_bad_one(fleet: RealFleet) -> None:
    assert fleet.rendered is not None
    kinds = ("PropagationPolicy", "OverridePolicy", "FederatedResourceQuota", "ClusterTaintPolicy")
    planned = [o for _, o in fleet.rendered.objects("karmada") if o["kind"] in kinds]
    assert len(planned) >= 10
    for obj in planned:
        meta = obj["metadata"]
        live = fleet.karmada.get(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
        assert live is not None, f"{obj['kind']} {meta.get('namespace')}/{meta['name']}"
    bad = copy.deepcopy(next(o for o in planned if o["kind"] == "PropagationPolicy"
                             and o["metadata"]["name"] == "shop"))
    bad["metadata"]["name"] = "selects-another-namespace"
    bad["spec"]["resourceSelectors"] = [{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ledger"}]
    with pytest.raises(ApiError, match="namespace of resource selector must be the same as the namespace"):
        fleet.karmada.apply(bad)


def test_a_duplicated_deployment_reaches_both_members_with_the_regional_override(fleet: RealFleet) -> None:
    fleet.karmada.apply(_deployment("web", "shop", 2))
    for member, registry in ((PUSH, "registry-fsn1.dev.example.com"), (PULL, "registry-hel1.dev.example.com")):
        api = fleet.member_api(member)
        live = wait_for(f"web Ready on {member}", lambda a=api: (
            lambda o: o if _ready(o, 2) else None)(a.get("apps/v1", "Deployment", "web", "shop")), 240, 2)
        image = live["spec"]["template"]["spec"]["containers"][0]["image"]
        assert image == f"{registry}/library/nginx:1.27", image      # the region's OverridePolicy, applied
    wait_for("the hub aggregates both members' status", lambda: _ready(
        fleet.karmada.get("apps/v1", "Deployment", "web", "shop"), 4), 120, 2)


def test_the_federated_quota_refuses_a_workload_over_it(fleet: RealFleet) -> None:
    """shop's quota is 40 CPUs overall (20 per member): 6 replicas of 4 CPUs on each of two members is 48."""
    fleet.karmada.apply(_deployment("too-big", "shop", 6, cpu="4"))

    def refused() -> str | None:
        bindings = [b for b in fleet.karmada.list("work.karmada.io/v1alpha2", "ResourceBinding", "shop")
                    if b["metadata"]["name"].startswith("too-big-")]
        for binding in bindings:
            for condition in (binding.get("status") or {}).get("conditions") or []:
                if "FederatedResourceQuota" in condition.get("message", ""):
                    return str(condition["message"])
        return None

    message = wait_for("the scheduling result refused by the quota", refused, 180, 2)
    assert "exceeded" in message
    for member in (PUSH, PULL):
        assert fleet.member_api(member).get("apps/v1", "Deployment", "too-big", "shop") is None
    fleet.karmada.delete("apps/v1", "Deployment", "too-big", "shop")


def test_a_wiped_etcd_member_rejoins_through_its_prepare_step_with_every_key(fleet: RealFleet) -> None:
    before = {o["metadata"]["name"] for o in fleet.karmada.list("v1", "Namespace")}
    etcd = fleet.workload("host", "karmada-system", "etcd")
    victim = etcd.pods[1]
    replacement = fleet.clusters["host"].controllers.recreate(etcd, victim, grace=2, wipe=True)
    wait_ready(replacement, 300)
    after = {o["metadata"]["name"] for o in fleet.karmada.list("v1", "Namespace")}
    assert before <= after
    # the rejoined member serves the same data: ask its own /readyz until it is a voting member again, then
    # read through the apiserver while the other two are healthy
    wait_for("etcd-1 serving", lambda: replacement.ready, 120)
    assert fleet.karmada.get("cluster.karmada.io/v1alpha1", "Cluster", PUSH) is not None


def test_a_component_restarted_with_a_renewed_leaf_is_accepted_by_its_peers(fleet: RealFleet) -> None:
    """karmada-apiserver's serving certificate renewed (new key, same CA, same names), as `pulumi up` renews it:
    every client of the karmada-apiserver must accept it, and the fleet stays Ready."""
    fleet.renew_leaf("host", "karmada-system", "karmada-apiserver")
    wait_for("karmada-apiserver answers with the renewed certificate", lambda: fleet.karmada.healthz(), 180, 2)
    for member in (PUSH, PULL):
        wait_for(f"{member} still Ready", lambda m=member: _conditions(
            fleet.karmada.get("cluster.karmada.io/v1alpha1", "Cluster", m)).get("Ready") == "True", 180, 2)
    for pod in fleet.pods("host"):
        wait_ready(pod, 180)


def test_nothing_restarted_in_five_minutes_after_bring_up(fleet: RealFleet) -> None:
    remaining = QUIET_SECONDS - (time.monotonic() - fleet.settled)  # type: ignore[attr-defined]
    if remaining > 0:
        time.sleep(remaining)
    baseline: dict[str, int] = fleet.restarts_at_settle  # type: ignore[attr-defined]
    now = fleet.restarts()
    restarted = {pod: (baseline.get(pod, 0), count) for pod, count in now.items() if count != baseline.get(pod, 0)}
    assert not restarted, f"{restarted}\n{fleet.restart_stories(restarted)}"


_ = Api
