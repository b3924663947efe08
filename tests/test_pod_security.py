"""Pod Security on the hub's host cluster and the members.

Every namespace the program creates enforces a level, and every pod it renders passes the level of its namespace
(tests/support/pod_security.py: the Pod Security Standards' checks). k3s sets no cluster-wide Pod Security default,
so a namespace without the label admits anything; the metadata guard (components/hetzner/cloud_init.py) relies on
"only namespaces labelled privileged may run hostNetwork pods".

Review M6: that level is `restricted` for every namespace the program creates for its own pods, and every pod it
renders there meets that profile (so the label is honest: nothing of ours would be refused by it). The profile is
Kubernetes' Pod Security Standards "restricted" (k8s.io/pod-security-admission policy checks at v1.35): no host
namespaces or ports, no hostPath, only the listed volume types, not privileged, no privilege escalation, ALL
capabilities dropped (NET_BIND_SERVICE the only one added back), non-root, a seccomp profile. Exceptions are named
with their reason (and carry it on the namespace, PRIVILEGED_REASON).
"""

from __future__ import annotations

from typing import Any

import pytest

from components.kube.pod_security import RESTRICTED
from components.traffic import docs as traffic_docs
from components.traffic import nameserver_docs
from tests.support import pod_security as ps
from tests.support.rendered import objects

PRIVILEGED_REASON = "karmada-hub.io/pod-security-exception"
"""On a namespace whose level is below restricted: why (one sentence); tests/test_pod_security.py requires it."""


def _namespaces(plan: Any) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for t, o in objects(plan) if t == "host" and o["kind"] == "Namespace"}


def test_every_host_namespace_enforces_a_level_and_its_pods_pass_it(rendered_dev: Any) -> None:
    namespaces = _namespaces(rendered_dev)
    levels = {}
    for name, ns in namespaces.items():
        labels = ns["metadata"].get("labels") or {}
        assert labels.get(ps.LEVEL_LABEL) in ps.LEVELS, f"namespace {name} enforces no Pod Security level"
        levels[name] = labels[ps.LEVEL_LABEL]
    checked = 0
    for target, obj in objects(rendered_dev):
        spec = ps.pod_spec(obj)
        namespace = obj["metadata"].get("namespace")
        if target != "host" or spec is None or namespace not in levels:
            continue
        checked += 1
        problems = ps.violations(spec, levels[namespace])
        assert not problems, f"{obj['kind']} {namespace}/{obj['metadata']['name']} breaks {levels[namespace]}: " \
                             f"{problems}"
    assert checked >= 10


def test_a_namespace_below_restricted_says_why(rendered_dev: Any) -> None:
    for name, ns in _namespaces(rendered_dev).items():
        meta = ns["metadata"]
        if (meta.get("labels") or {}).get(ps.LEVEL_LABEL) != "restricted":
            assert len((meta.get("annotations") or {}).get(PRIVILEGED_REASON, "")) > 20, \
                f"namespace {name} is not restricted and does not say why ({PRIVILEGED_REASON})"


def test_the_dns_namespace_is_restricted(rendered_dev: Any) -> None:
    """review-host-and-traffic F9: `external-dns` (the Hetzner DNS token, the DNSEndpoint writer, the failover
    controller) had no label, i.e. privileged, while the docs relied on "the program's namespaces enforce
    restricted, which forbids hostNetwork"."""
    ns = _namespaces(rendered_dev)[traffic_docs.EXTERNAL_DNS_NAMESPACE]
    assert (ns["metadata"].get("labels") or {}).get(ps.LEVEL_LABEL) == "restricted"


def test_the_checker_catches_what_each_level_forbids() -> None:
    """The checker itself can fail: hostNetwork breaks baseline, a root container breaks restricted only."""
    host_network = {"hostNetwork": True, "containers": [{"name": "c"}]}
    assert ps.violations(host_network, "baseline") and not ps.violations(host_network, "privileged")
    root = {"containers": [{"name": "c", "securityContext": {"runAsUser": 0}}]}
    assert not ps.violations(root, "baseline") and ps.violations(root, "restricted")


EXCEPTIONS = {
    ("host", "system-upgrade"): "privileged: the k3s upgrade Job replaces the k3s binary on the node "
                                "(system-upgrade-controller; docs/security.md)",
    ("host", nameserver_docs.NAMESPACE): "privileged: dns.mode self-hosted's nameservers answer on the servers' own "
                                         "port 53 (hostNetwork; components/traffic/nameserver_docs.py)",
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
