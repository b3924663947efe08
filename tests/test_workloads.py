"""components/karmada/workloads: the control plane's and the estimators' pods, decided once.

What KarmadaControlPlane and MemberCluster apply is exactly what these functions return (the capacity check
counts the same objects), and `karmada.estimator` sizes every member's scheduler-estimator.
"""

from __future__ import annotations

import copy
from typing import Any

from components.karmada import manifests, workloads
from components.kube import rollouts as secret_checksums
from hubctl.plan import manifests as plan_manifests
from hubctl.plan import run_program
from tests.support.tools import REPO, edited_stack, load_stack


def _host_objects(plan: Any) -> dict[tuple[str, str], dict[str, Any]]:
    """The host's objects, without the checksum of their Secrets on the pod template (added when applied,
    kube/rollouts.py; the rest is exactly the document)."""
    out = {}
    for obj in plan_manifests(plan)["host"]:
        template = secret_checksums.pod_template(obj)
        annotations = (template or {}).get("metadata", {}).get("annotations")
        if annotations is not None:
            annotations.pop(secret_checksums.SECRETS_ANNOTATION, None)
            annotations.pop(secret_checksums.CHECKSUM_ANNOTATION, None)
            if not annotations:
                del template["metadata"]["annotations"]
        out[(obj["kind"], obj["metadata"]["name"])] = obj
    return out


def test_the_plan_applies_exactly_the_control_plane_workloads(rendered_dev: Any) -> None:
    config = load_stack("dev")
    host = _host_objects(rendered_dev)
    for workload in workloads.deployments(config):
        applied = host[("Deployment", workload.name)]
        assert applied == manifests.deployment(workload), workload.name
    etcd = workloads.etcd(config, "token")
    applied = host[("StatefulSet", etcd["metadata"]["name"])]
    assert applied["spec"]["replicas"] == etcd["spec"]["replicas"]
    assert applied["spec"]["template"]["spec"]["containers"][0]["resources"] == \
        etcd["spec"]["template"]["spec"]["containers"][0]["resources"]


def test_estimator_pods_follow_karmada_estimator() -> None:
    def shrink(karmada: dict[str, Any]) -> None:
        karmada["estimator"] = {"replicas": 1, "cpu": "25m", "memory": "64Mi"}

    plan = run_program(REPO, edited_stack("dev", {"karmada": shrink}))
    estimators = [o for (kind, name), o in _host_objects(plan).items()
                  if kind == "Deployment" and name.startswith("karmada-scheduler-estimator-")]
    assert estimators
    for obj in estimators:
        assert obj["spec"]["replicas"] == 1
        assert obj["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] == {
            "cpu": "25m", "memory": "64Mi"}


def test_estimator_defaults_are_two_pods_of_100m_and_128mi(rendered_dev: Any) -> None:
    config = load_stack("dev")
    member = next(m for m in config.members if m.scheduler_estimator)
    expected = manifests.deployment(workloads.estimator(config, member.name))
    assert expected["spec"]["replicas"] == 2
    # the hub owns it and does not await it: its pods start once the region wrote the member credential; its
    # template carries the checksum of its serving certificate and names the member kubeconfig as the region's
    expected["metadata"]["annotations"] = {"pulumi.com/skipAwait": "true"}
    rendered = copy.deepcopy(_host_objects(rendered_dev)[("Deployment", expected["metadata"]["name"])])
    annotations = rendered["spec"]["template"]["metadata"].pop("annotations")
    assert set(annotations) == {secret_checksums.ELSEWHERE_ANNOTATION}  # the checksum ones: _host_objects drops
    assert rendered == expected
