"""Review M6: every namespace the program creates for its own pods enforces Pod Security `restricted`, and every pod
it renders there meets that profile (so the label is honest: nothing of ours would be refused by it).

The profile is Kubernetes' Pod Security Standards "restricted" (k8s.io/pod-security-admission policy checks at
v1.35): no host namespaces or ports, no hostPath, only the listed volume types, not privileged, no privilege
escalation, ALL capabilities dropped (NET_BIND_SERVICE the only one added back), non-root, a seccomp profile.
Exceptions are named with their reason.
"""

from __future__ import annotations

from typing import Any

import pytest

from components.kube.pod_security import RESTRICTED
from tests.support.rendered import objects

EXCEPTIONS = {
    ("host", "system-upgrade"): "privileged: the k3s upgrade Job replaces the k3s binary on the node "
                                "(system-upgrade-controller; docs/security.md)",
}
TEMPLATES = ("ingress-nginx",)
"""karmada-apiserver namespaces that are templates Karmada propagates to members (the fleet's ingress controller,
which binds ports; tenants' own namespaces): their Pod Security is the members' workloads' business."""
ALLOWED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected",
                   "secret"}
WORKLOADS = {"Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob"}


def restricted_problems(pod: dict[str, Any]) -> list[str]:
    spec = pod.get("spec") or {}
    out = [f"{k} is set" for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k)]
    for v in spec.get("volumes") or []:
        kinds = set(v) - {"name"}
        if not kinds <= ALLOWED_VOLUMES:
            out.append(f"volume {v['name']} is {sorted(kinds)}")
    pod_sc = spec.get("securityContext") or {}
    for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        sc = c.get("securityContext") or {}
        name = c["name"]
        if sc.get("privileged"):
            out.append(f"{name}: privileged")
        if sc.get("allowPrivilegeEscalation") is not False:
            out.append(f"{name}: allowPrivilegeEscalation is not false")
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []) or not set(caps.get("add") or []) <= {"NET_BIND_SERVICE"}:
            out.append(f"{name}: capabilities are not drop ALL")
        if sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")) is not True or sc.get(
                "runAsUser", pod_sc.get("runAsUser")) == 0:
            out.append(f"{name}: may run as root")
        seccomp = (sc.get("seccompProfile") or pod_sc.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            out.append(f"{name}: no seccomp profile")
        if any(p.get("hostPort") for p in c.get("ports") or []):
            out.append(f"{name}: hostPort")
    return out


def _pod(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj["spec"]
    if obj["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    return spec["template"]


@pytest.fixture(params=["dev", "prod-hub", "prod-fsn1"])
def plan(request: pytest.FixtureRequest, rendered_dev: Any, rendered_prod: dict[str, Any]) -> Any:
    return rendered_dev if request.param == "dev" else rendered_prod[request.param]


def test_every_namespace_of_ours_enforces_restricted(plan: Any) -> None:
    tenants = {o["metadata"]["name"] for t, o in objects(plan) if o["kind"] == "Namespace"
               and t == "karmada" and "fleet.karmada-hub.io/tenant" in str(o["metadata"])}
    wrong = []
    for target, obj in objects(plan):
        if obj["kind"] != "Namespace":
            continue
        name = obj["metadata"]["name"]
        if (target, name) in EXCEPTIONS or (target == "karmada" and (name in TEMPLATES or name in tenants)):
            continue
        labels = obj["metadata"].get("labels") or {}
        if {k: labels.get(k) for k in RESTRICTED} != RESTRICTED:
            wrong.append(f"{target} {name}")
    assert wrong == []


def test_every_pod_of_ours_meets_restricted(plan: Any) -> None:
    wrong = []
    for target, obj in objects(plan):
        if obj["kind"] in WORKLOADS and (target, obj["metadata"].get("namespace")) not in EXCEPTIONS:
            wrong += [f"{target} {obj['kind']} {obj['metadata']['name']}: {p}" for p in restricted_problems(_pod(obj))]
    assert wrong == []


def test_the_profile_check_can_fail() -> None:
    pod = {"spec": {"hostNetwork": True, "volumes": [{"name": "h", "hostPath": {"path": "/"}}],
                    "containers": [{"name": "c", "securityContext": {"privileged": True,
                                                                     "capabilities": {"add": ["SYS_ADMIN"]}},
                                    "ports": [{"containerPort": 80, "hostPort": 80}]}]}}
    assert restricted_problems(pod) == [
        "hostNetwork is set", "volume h is ['hostPath']", "c: privileged", "c: allowPrivilegeEscalation is not false",
        "c: capabilities are not drop ALL", "c: may run as root", "c: no seccomp profile", "c: hostPort"]
