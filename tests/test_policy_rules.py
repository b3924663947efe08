"""The policy rules: each with a passing and a failing case, offline (plan.json) and through the real analyzer.

The CrossGuard tests drive pulumi_policy's own analyzer servicer with protobuf requests shaped like the
engine's (secrets wrapped with the secret signature, unknowns as sentinels), without starting its server.
"""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest

from hubctl.policy_check import Violation, check_plan, format_violations, main_policy
from policy import rules

NS = "karmada-system"
URN = "urn:pulumi:dev::karmada-hub::{type}::{name}"


def urn(rtype: str, name: str) -> str:
    return URN.format(type=rtype, name=name)


def pod_labels(component: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": component, "app.kubernetes.io/part-of": "karmada"}


def deployment(component: str, replicas: int = 2, args: list[str] | None = None, image: str | None = None) -> dict:
    labels = pod_labels(component)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": component, "namespace": NS, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": component, "image": image or f"docker.io/karmada/{component}:v1.18.2",
                                         "command": [f"/bin/{component}"], "args": args or []}]},
            },
        },
    }


def pdb(component: str, **spec: Any) -> dict:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": component, "namespace": NS},
        "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": component}}, **(spec or {"maxUnavailable": 1})},
    }


def etcd(replicas: int = 3, topology: str = "kubernetes.io/hostname", selector: dict | None = None) -> dict:
    labels = {"app.kubernetes.io/name": "etcd", "app.kubernetes.io/part-of": "karmada"}
    term = {"topologyKey": topology, "labelSelector": selector if selector is not None else {"matchLabels": labels}}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "etcd", "namespace": NS},
        "spec": {
            "replicas": replicas,
            "serviceName": "etcd",
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
                    "containers": [{"name": "etcd", "image": "registry.k8s.io/etcd:3.6.6-0"}],
                },
            },
        },
    }


CM_ARGS = ["--feature-gates=Failover=true,GracefulEviction=true", "--enable-no-execute-taint-eviction=true",
           "--no-execute-taint-eviction-purge-mode=Gracefully"]
WEBHOOK_ARGS = ["--allow-no-execute-taint-policy=true"]


def taint_policy(effect: str = "NoExecute", conditions: bool = True) -> dict:
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "ClusterTaintPolicy",
        "metadata": {"name": "cluster-not-ready"},
        "spec": {
            "targetClusters": {},
            "addOnConditions": [{"conditionType": "Ready", "operator": "NotIn", "statusValues": ["True"]}]
            if conditions else [],
            "removeOnConditions": [{"conditionType": "Ready", "operator": "In", "statusValues": ["True"]}],
            "taints": [{"key": "cluster.karmada.io/not-ready", "effect": effect}],
        },
    }


def res(rtype: str, name: str, inputs: dict) -> dict:
    return {"urn": urn(rtype, name), "type": rtype, "name": name, "parent": "", "provider": "", "dependencies": [],
            "inputs": inputs, "options": {}}


DEPLOY = "kubernetes:apps/v1:Deployment"
PDB = "kubernetes:policy/v1:PodDisruptionBudget"
STS = "kubernetes:apps/v1:StatefulSet"
CTP = "kubernetes:policy.karmada.io/v1alpha1:ClusterTaintPolicy"
FIREWALL = "hcloud:index/firewall:Firewall"
LB_SERVICE = "hcloud:index/loadBalancerService:LoadBalancerService"
SECRET_TYPE = "kubernetes:core/v1:Secret"


def good_plan() -> dict:
    """A hub plan that satisfies every rule."""
    resources = [res(STS, "etcd", etcd()), res(CTP, "failover", taint_policy())]
    for component in rules.CONTROL_PLANE:
        args = CM_ARGS if component == "karmada-controller-manager" else WEBHOOK_ARGS if component == (
            "karmada-webhook") else []
        resources.append(res(DEPLOY, component, deployment(component, args=args)))
        resources.append(res(PDB, f"{component}-pdb", pdb(component)))
    resources.append(res(FIREWALL, "hub-fw", {"rules": [
        {"direction": "in", "protocol": "tcp", "port": "22", "sourceIps": ["198.51.100.0/24"], "description": "ssh"},
        {"direction": "in", "protocol": "tcp", "port": "443", "sourceIps": ["0.0.0.0/0", "::/0"], "description": "web"},
        {"direction": "in", "protocol": "icmp", "sourceIps": ["0.0.0.0/0"]},
    ]}))
    resources.append(res(SECRET_TYPE, "etcd-client", {"apiVersion": "v1", "kind": "Secret", "data": "[secret]"}))
    resources.append(res(DEPLOY, "external-dns", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "external-dns", "namespace": "dns"},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [{
            "name": "external-dns", "image": "registry.k8s.io/external-dns/external-dns:v0.22.0",
            "args": ["--provider=webhook", "--min-ttl=30s"]}]}}},
    }))
    return {"project": "karmada-hub", "stack": "dev", "resources": sorted(resources, key=lambda r: r["urn"]),
            "outputs": {}}


def find(plan: dict, name: str) -> dict:
    return next(r for r in plan["resources"] if r["name"] == name)


def policies_of(violations: list[Violation]) -> set[str]:
    return {v.policy for v in violations}


# ------------------------------------------------------------------------------------- the good plan


def test_good_plan_has_no_violations() -> None:
    assert check_plan(good_plan()) == []
    assert format_violations([], "dev") == "policy: ok in dev (14 rules, 0 violations)"


# ------------------------------------------------------------------------------------------- etcd


@pytest.mark.parametrize("replicas", [3, 5])
def test_etcd_quorum_accepts_odd(replicas: int) -> None:
    assert rules.etcd_quorum(STS, etcd(replicas)) == []


@pytest.mark.parametrize("replicas", [1, 2, 4])
def test_etcd_quorum_rejects_even_or_small(replicas: int) -> None:
    assert any("odd number >= 3" in m for m in rules.etcd_quorum(STS, etcd(replicas)))


def test_etcd_anti_affinity_must_be_on_hostname_and_select_etcd() -> None:
    assert any("podAntiAffinity" in m for m in rules.etcd_quorum(STS, etcd(topology="topology.kubernetes.io/zone")))
    wrong = {"matchLabels": {"app.kubernetes.io/name": "something-else"}}
    assert any("podAntiAffinity" in m for m in rules.etcd_quorum(STS, etcd(selector=wrong)))
    no_affinity = etcd()
    del no_affinity["spec"]["template"]["spec"]["affinity"]
    assert rules.etcd_quorum(STS, no_affinity)
    expr = {"matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "In", "values": ["etcd"]}]}
    assert rules.etcd_quorum(STS, etcd(selector=expr)) == []


def test_etcd_rule_ignores_other_statefulsets_and_unknown_replicas() -> None:
    other = etcd(1)
    other["metadata"]["name"] = "redis"
    other["spec"]["template"]["metadata"]["labels"] = {"app": "redis"}
    assert rules.etcd_quorum(STS, other) == []
    assert rules.etcd_quorum(STS, etcd(replicas=rules.COMPUTED)) == []  # type: ignore[arg-type]


# -------------------------------------------------------------------------------- control plane HA


def test_control_plane_replicas() -> None:
    assert rules.control_plane_replicas(DEPLOY, deployment("karmada-scheduler", 2)) == []
    assert rules.control_plane_replicas(DEPLOY, deployment("karmada-scheduler", 1)) != []
    missing = deployment("karmada-apiserver")
    del missing["spec"]["replicas"]
    assert "default (1)" in rules.control_plane_replicas(DEPLOY, missing)[0]
    assert rules.control_plane_replicas(DEPLOY, deployment("external-dns", 1)) == []


def test_pdb_missing_for_one_component() -> None:
    plan = good_plan()
    plan["resources"] = [r for r in plan["resources"] if r["name"] != "karmada-webhook-pdb"]
    found = check_plan(plan)
    assert [(v.policy, v.urn) for v in found] == [("control-plane-pdb", urn(DEPLOY, "karmada-webhook"))]
    assert "no PodDisruptionBudget" in found[0].message


def test_pdb_in_other_namespace_or_selecting_other_pods_does_not_count() -> None:
    plan = good_plan()
    find(plan, "karmada-scheduler-pdb")["inputs"]["metadata"]["namespace"] = "default"
    find(plan, "karmada-webhook-pdb")["inputs"]["spec"]["selector"] = {"matchLabels": {"app": "nope"}}
    assert {v.urn for v in check_plan(plan)} == {urn(DEPLOY, "karmada-scheduler"), urn(DEPLOY, "karmada-webhook")}


def test_pdb_that_blocks_every_drain_is_a_violation() -> None:
    plan = good_plan()
    find(plan, "karmada-scheduler-pdb")["inputs"]["spec"] = {
        "selector": {"matchLabels": pod_labels("karmada-scheduler")}, "maxUnavailable": 0}
    find(plan, "karmada-webhook-pdb")["inputs"]["spec"] = {
        "selector": {"matchLabels": pod_labels("karmada-webhook")}, "minAvailable": 2}
    messages = [v.message for v in check_plan(plan)]
    assert len(messages) == 2 and all("blocks every drain" in m for m in messages)
    find(plan, "karmada-webhook-pdb")["inputs"]["spec"]["minAvailable"] = 1
    find(plan, "karmada-scheduler-pdb")["inputs"]["spec"]["maxUnavailable"] = "50%"
    assert check_plan(plan) == []


# ------------------------------------------------------------------------------------------ firewall


def fw(port: Any, *sources: str, protocol: str = "tcp", direction: str = "in") -> dict:
    rule = {"direction": direction, "protocol": protocol, "sourceIps": list(sources), "description": "x"}
    if port is not None:
        rule["port"] = port
    return {"rules": [rule]}


@pytest.mark.parametrize("port", ["22", "6443", "2379", "2000-3000", "1-65535", "any", None, 22])
@pytest.mark.parametrize("world", ["0.0.0.0/0", "::/0", "0.0.0.0/0 "])
def test_firewall_world_open_admin_ports(port: Any, world: str) -> None:
    assert rules.firewall_admin_ports(FIREWALL, fw(port, "198.51.100.0/24", world))


@pytest.mark.parametrize(
    ("port", "sources", "protocol", "direction"),
    [
        ("22", ["198.51.100.0/24"], "tcp", "in"),
        ("6443", ["203.0.113.0/24", "2001:db8::/32"], "tcp", "in"),
        ("443", ["0.0.0.0/0", "::/0"], "tcp", "in"),
        ("2380-2400", ["0.0.0.0/0"], "tcp", "in"),
        ("22", ["0.0.0.0/0"], "udp", "in"),
        (None, ["0.0.0.0/0"], "icmp", "in"),
        ("22", ["0.0.0.0/0"], "tcp", "out"),
    ],
)
def test_firewall_allows_the_rest(port: Any, sources: list[str], protocol: str, direction: str) -> None:
    assert rules.firewall_admin_ports(FIREWALL, fw(port, *sources, protocol=protocol, direction=direction)) == []


def test_load_balancer_never_fronts_ssh_or_etcd() -> None:
    api = {"protocol": "tcp", "listenPort": 6443, "destinationPort": 6443}
    assert rules.firewall_admin_ports(LB_SERVICE, api) == []
    assert rules.firewall_admin_ports(LB_SERVICE, {"protocol": "tcp", "listenPort": 2222, "destinationPort": 22})
    assert rules.firewall_admin_ports(LB_SERVICE, {"protocol": "tcp", "listenPort": 2379.0})


# ----------------------------------------------------------------------------------------------- DNS


@pytest.mark.parametrize(("value", "seconds"), [(30, 30), ("30", 30), ("30s", 30), ("1m", 60), ("1m30s", 90),
                                                ("1h", 3600), ("500ms", 0.5)])
def test_parse_ttl(value: Any, seconds: float) -> None:
    assert rules.parse_ttl(value) == seconds


def test_parse_ttl_rejects_garbage() -> None:
    assert rules.parse_ttl("soon") is None and rules.parse_ttl("30x") is None and rules.parse_ttl(True) is None


def service(ttl: str) -> dict:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "ingress", "annotations": {rules.TTL_ANNOTATION: ttl}}}


def test_dns_ttl_annotations() -> None:
    assert rules.dns_short_ttl("kubernetes:core/v1:Service", service("60")) == []
    assert rules.dns_short_ttl("kubernetes:core/v1:Service", service("2m"))
    assert rules.dns_short_ttl("kubernetes:core/v1:Service", service("soon"))
    assert rules.dns_short_ttl("kubernetes:core/v1:Service", service(rules.SECRET)) == []


def test_dns_min_ttl_flag_and_other_ttl_inputs() -> None:
    plan = good_plan()
    assert check_plan(plan) == []
    find(plan, "external-dns")["inputs"]["spec"]["template"]["spec"]["containers"][0]["args"][1] = "--min-ttl=5m"
    assert policies_of(check_plan(plan)) == {"dns-short-ttl"}
    endpoint = {"kind": "DNSEndpoint", "spec": {"endpoints": [{"dnsName": "a.example.com", "recordTTL": 300}]}}
    assert rules.dns_short_ttl("kubernetes:externaldns.k8s.io/v1alpha1:DNSEndpoint", endpoint)
    assert rules.dns_short_ttl("hcloud:index/zoneRrset:ZoneRrset", {"ttl": 3600})
    assert rules.dns_short_ttl("hcloud:index/zoneRrset:ZoneRrset", {"ttl": 60}) == []
    # a delegation's NS set and nameserver addresses may keep a long TTL; a labelled failover-ish record may not
    delegation = {"labels": {"karmada-hub.io/dns-role": "delegation"}, "ttl": 3600}
    assert rules.dns_short_ttl("hcloud:index/zoneRrset:ZoneRrset", {**delegation, "type": "NS"}) == []
    assert rules.dns_short_ttl("hcloud:index/zoneRrset:ZoneRrset", {**delegation, "type": "A"}) == []
    assert rules.dns_short_ttl("hcloud:index/zoneRrset:ZoneRrset", {**delegation, "type": "CNAME"})
    assert rules.dns_short_ttl("hcloud:index/server:Server", {"ttl": 3600}) == []


# -------------------------------------------------------------------------------------------- images


@pytest.mark.parametrize("image", ["docker.io/karmada/karmada-webhook:v1.18.2", "registry:5000/etcd:3.6.6-0",
                                   "nginx@sha256:" + "a" * 64, "foo:latest@sha256:" + "b" * 64])
def test_pinned_images_pass(image: str) -> None:
    assert rules.image_problem(image) is None
    assert rules.images_pinned(DEPLOY, deployment("karmada-webhook", image=image)) == []


@pytest.mark.parametrize("image", ["nginx", "nginx:latest", "registry:5000/etcd", "docker.io/karmada/x:latest"])
def test_floating_images_fail(image: str) -> None:
    assert rules.image_problem(image) is not None
    assert rules.images_pinned(DEPLOY, deployment("karmada-webhook", image=image))


def test_init_containers_and_cronjobs_are_checked() -> None:
    cron = {"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": {"spec": {
        "initContainers": [{"name": "wait", "image": "busybox"}],
        "containers": [{"name": "snap", "image": "registry.k8s.io/etcd:3.6.6-0"}]}}}}}}
    assert rules.images_pinned("kubernetes:batch/v1:CronJob", cron) == [
        "container wait: image busybox has no tag (means latest); pin a version tag or digest"]
    assert rules.images_pinned("hcloud:index/server:Server", {"image": "ubuntu-24.04"}) == []


# ------------------------------------------------------------------------------------------- secrets

PEM = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIB\n-----END EC PRIVATE KEY-----\n"
KUBECONFIG = ("apiVersion: v1\nusers:\n- name: admin\n  user:\n    client-certificate-data: Zm9v\n"
              "    client-key-data: {key}\n")
K3S = "K10" + "c0ffee" * 8 + "::server:" + "f" * 32


@pytest.mark.parametrize(
    ("rtype", "inputs", "kind"),
    [
        ("tls:index/selfSignedCert:SelfSignedCert", {"privateKeyPem": PEM}, "PEM private key"),
        ("kubernetes:core/v1:ConfigMap", {"data": {"kubeconfig": KUBECONFIG.format(key="c2VjcmV0")}},
         "client-key-data"),
        ("pulumi:providers:kubernetes", {"kubeconfig": "users:\n- user:\n    token: abc.def.ghi\n"}, "token:"),
        ("hcloud:index/server:Server", {"userData": f"#cloud-config\nwrite_files:\n- content: {K3S}\n"}, "k3s join"),
        ("pulumi:providers:hcloud", {"token": "hcloud-api-token-plain"}, "plaintext token"),
        (SECRET_TYPE, {"kind": "Secret", "stringData": {"password": "hunter2", "user": "[secret]"}}, "password"),
        (SECRET_TYPE, {"kind": "Secret", "data": {"tls.key": "c2VjcmV0"}}, "tls.key"),
        # a placeholder that is not one (wrong length, base64 of something else) is a plaintext value
        (SECRET_TYPE, {"kind": "Secret", "stringData": {"password": "[secret hunter2]"}}, "password"),
        (SECRET_TYPE, {"kind": "Secret", "data": {"tls.key": "c2VjcmV0c2VjcmV0c2VjcmV0c2Vj"}}, "tls.key"),
    ],
)
def test_plaintext_secrets_are_found_without_echoing_them(rtype: str, inputs: dict, kind: str) -> None:
    messages = rules.no_plaintext_secrets(rtype, inputs)
    assert messages and any(kind in m for m in messages), messages
    for leaked in ("MHcCAQEEIB", "c2VjcmV0", "abc.def.ghi", "c0ffee", "hcloud-api-token-plain", "hunter2"):
        assert all(leaked not in m for m in messages)


@pytest.mark.parametrize(
    ("rtype", "inputs"),
    [
        ("tls:index/selfSignedCert:SelfSignedCert", {"privateKeyPem": "[secret]", "certPem": "-----BEGIN CERT"}),
        ("kubernetes:core/v1:ConfigMap", {"data": {"kubeconfig": KUBECONFIG.format(key="[secret]")}}),
        ("pulumi:providers:kubernetes", {"kubeconfig": "[secret]"}),
        ("pulumi:providers:hcloud", {"token": "[secret]"}),
        ("karmada-hub:index:HubCluster", {"tokenConfigKey": "hetznerDnsToken", "note": "token: "}),
        (SECRET_TYPE, {"kind": "Secret", "data": "[secret]"}),
        (SECRET_TYPE, {"kind": "Secret", "stringData": {"a": "[secret]", "b": "[computed]"}}),
        # the offline plan's per-key placeholders (hubctl/plan.py redacted_value)
        (SECRET_TYPE, {"kind": "Secret", "stringData": {"a": "[secret 0123456789ab]"},
                       "data": {"b": "W3NlY3JldCAwMTIzNDU2Nzg5YWJd"}}),
    ],
)
def test_secret_inputs_pass(rtype: str, inputs: dict) -> None:
    assert rules.no_plaintext_secrets(rtype, inputs) == []


# ------------------------------------------------------------------------------------------ failover


def test_failover_good_and_not_applicable_to_region_stacks() -> None:
    plan = good_plan()
    assert rules.failover_enabled([(r["type"], r["inputs"], r["urn"]) for r in plan["resources"]]) == []
    region = [(FIREWALL, {"rules": []}, "u1"), ("hcloud:index/loadBalancer:LoadBalancer", {}, "u2")]
    assert rules.failover_enabled(region) == []


@pytest.mark.parametrize(
    ("component", "args", "expected"),
    [
        ("karmada-controller-manager", ["--enable-no-execute-taint-eviction=true"], "Failover=true"),
        ("karmada-controller-manager", ["--feature-gates=Failover=true,Failover=false",
                                        "--enable-no-execute-taint-eviction=true"], "Failover=true"),
        ("karmada-controller-manager", ["--feature-gates=Failover=true"], "--enable-no-execute-taint-eviction"),
        ("karmada-controller-manager", ["--feature-gates=Failover=true", "--enable-no-execute-taint-eviction=false"],
         "--enable-no-execute-taint-eviction"),
        ("karmada-webhook", [], "--allow-no-execute-taint-policy"),
    ],
)
def test_failover_switches(component: str, args: list[str], expected: str) -> None:
    plan = good_plan()
    find(plan, component)["inputs"]["spec"]["template"]["spec"]["containers"][0]["args"] = args
    found = check_plan(plan)
    assert policies_of(found) == {"failover-enabled"} and expected in found[0].message
    assert found[0].urn == urn(DEPLOY, component)


def test_failover_bare_boolean_flags_count() -> None:
    argv = ["--feature-gates=Failover=true", "--enable-no-execute-taint-eviction"]
    assert rules.flag_value(argv, "--enable-no-execute-taint-eviction") == "true"
    plan = good_plan()
    find(plan, "karmada-controller-manager")["inputs"]["spec"]["template"]["spec"]["containers"][0]["args"] = argv
    assert check_plan(plan) == []


@pytest.mark.parametrize("policy", [taint_policy("NoSchedule"), taint_policy(conditions=False), None])
def test_failover_needs_an_effective_no_execute_taint_policy(policy: dict | None) -> None:
    plan = good_plan()
    if policy is None:
        plan["resources"] = [r for r in plan["resources"] if r["type"] != CTP]
    else:
        find(plan, "failover")["inputs"] = policy
    found = check_plan(plan)
    assert [v.policy for v in found] == ["failover-enabled"] and found[0].urn is None
    assert "NoExecute" in found[0].message


# --------------------------------------------------------------------------------------- offline CLI


def test_main_policy_exit_codes_and_report(tmp_path: Any) -> None:
    good = tmp_path / "good"
    good.mkdir()
    (good / "plan.json").write_text(json.dumps(good_plan()))
    out = io.StringIO()
    assert main_policy(good, out) == 0
    assert out.getvalue().startswith("policy: ok in dev")

    bad_plan = good_plan()
    find(bad_plan, "etcd")["inputs"]["spec"]["replicas"] = 2
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "plan.json").write_text(json.dumps(bad_plan))
    out = io.StringIO()
    assert main_policy(bad, out) == 1
    report = out.getvalue()
    assert "etcd-quorum:" in report and "kubernetes:apps/v1:StatefulSet etcd" in report
    assert report.rstrip().endswith("policy: FAILED in dev: 1 mandatory violation (14 rules)")

    out = io.StringIO()
    assert main_policy(tmp_path / "missing", out) == 1
    assert out.getvalue().startswith("policy: cannot read")


# ------------------------------------------------------------------------------ CrossGuard (analyzer)

pulumi_policy = pytest.importorskip("pulumi_policy")


def _servicer() -> Any:
    from pulumi_policy.policy import EnforcementLevel, _PolicyAnalyzerServicer

    return _PolicyAnalyzerServicer("karmada-hub", "0.1.0", rules.crossguard_policies(), EnforcementLevel.MANDATORY)


def _wire(value: Any, secret_paths: tuple[tuple[str, ...], ...] = ()) -> dict:
    """Props as the engine marshals them (KeepSecrets: true): secrets wrapped with the secret signature."""
    value = copy.deepcopy(value)
    for path in secret_paths:
        parent = value
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = {rules._SIG_KEY: rules._SECRET_SIG, "value": parent[path[-1]]}
    return value


def _analyze(rtype: str, props: dict) -> list[Any]:
    from google.protobuf import struct_pb2
    from pulumi.runtime import proto

    struct = struct_pb2.Struct()
    struct.update(props)
    request = proto.AnalyzeRequest(type=rtype, urn=urn(rtype, "r"), name="r", properties=struct)
    return list(_servicer().Analyze(request, None).diagnostics)


def _analyze_stack(plan: dict, secret_paths: dict[str, tuple[tuple[str, ...], ...]] | None = None) -> list[Any]:
    from google.protobuf import struct_pb2
    from pulumi.runtime import proto

    resources = []
    for r in plan["resources"]:
        struct = struct_pb2.Struct()
        struct.update(_wire(r["inputs"], (secret_paths or {}).get(r["name"], ())))
        resources.append(proto.AnalyzerResource(type=r["type"], urn=r["urn"], name=r["name"], properties=struct))
    return list(_servicer().AnalyzeStack(proto.AnalyzeStackRequest(resources=resources), None).diagnostics)


def test_pack_has_every_rule_and_all_but_the_naming_ones_are_mandatory() -> None:
    from pulumi_policy import EnforcementLevel

    policies = rules.crossguard_policies()
    assert [p.name for p in policies] == [r.name for r in rules.RESOURCE_RULES] + [r.name for r in rules.STACK_RULES]
    advisory = {r.name for r in rules.STACK_RULES if r.advisory}
    assert advisory == {"api-lb-world-reachable"}
    assert {p.enforcement_level for p in policies if p.name not in advisory} == {EnforcementLevel.MANDATORY}
    assert {p.enforcement_level for p in policies if p.name in advisory} == {EnforcementLevel.ADVISORY}


def test_analyzer_reports_a_violation_as_mandatory() -> None:
    diags = _analyze(STS, etcd(2))
    assert [d.policyName for d in diags] == ["etcd-quorum"]
    assert diags[0].enforcementLevel == pulumi_policy.policy.proto.MANDATORY
    assert _analyze(STS, etcd(3)) == []


@pytest.fixture
def redaction() -> Any:
    """policy/__main__.py's patch, undone afterwards so every test starts from pulumi_policy as shipped."""
    import pulumi_policy.policy as analyzer

    shipped = analyzer.deserialize_properties
    rules.install_secret_redaction()
    rules.install_secret_redaction()  # idempotent: wraps once
    assert analyzer.deserialize_properties is not shipped
    yield
    analyzer.deserialize_properties = shipped


KUBECONFIG_CM = {"data": {"kubeconfig": KUBECONFIG.format(key="c2VjcmV0")}}
SECRET_CM = _wire(KUBECONFIG_CM, (("data", "kubeconfig"),))


def test_analyzer_as_shipped_sees_secrets_in_plaintext() -> None:
    """Why the redaction exists: without it a properly secret kubeconfig is reported as plaintext."""
    assert [d.policyName for d in _analyze("kubernetes:core/v1:ConfigMap", SECRET_CM)] == ["no-plaintext-secrets"]


def test_analyzer_with_redaction_passes_secrets_and_still_flags_plain(redaction: None) -> None:
    assert _analyze("kubernetes:core/v1:ConfigMap", SECRET_CM) == []
    assert [d.policyName for d in _analyze("kubernetes:core/v1:ConfigMap", KUBECONFIG_CM)] == ["no-plaintext-secrets"]
    secret = {"kind": "Secret", "data": {"tls.key": "c2VjcmV0"}}
    assert _analyze(SECRET_TYPE, _wire(secret, (("data",),))) == []
    assert _analyze(SECRET_TYPE, _wire(secret, (("data", "tls.key"),))) == []
    assert [d.policyName for d in _analyze(SECRET_TYPE, secret)] == ["no-plaintext-secrets"]


def test_analyzer_skips_unknowns_instead_of_aborting() -> None:
    from pulumi_policy.proxy import UNKNOWN_NUMBER_VALUE, UNKNOWN_STRING_VALUE

    unknown_replicas = etcd()
    unknown_replicas["spec"]["replicas"] = UNKNOWN_NUMBER_VALUE
    assert _analyze(STS, unknown_replicas) == []  # no "can't run policy during preview" advisory either
    unknown_image_but_bad_affinity = etcd(topology="zone")
    unknown_image_but_bad_affinity["spec"]["template"]["spec"]["containers"][0]["image"] = UNKNOWN_STRING_VALUE
    assert [d.policyName for d in _analyze(STS, unknown_image_but_bad_affinity)] == ["etcd-quorum"]


def test_analyzer_stack_rules(redaction: None) -> None:
    plan = good_plan()
    find(plan, "etcd-client")["inputs"]["data"] = {"tls.key": "c2VjcmV0"}
    assert _analyze_stack(plan, {"etcd-client": (("data",),)}) == []
    plan["resources"] = [r for r in plan["resources"] if r["type"] != CTP]
    diags = _analyze_stack(plan)
    assert [d.policyName for d in diags] == ["failover-enabled"] and diags[0].urn == ""


def test_pack_entry_point_builds_a_mandatory_pack_with_redaction(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs policy/__main__.py the way the engine does (runpy on the directory) with PolicyPack stubbed out,
    since the real constructor starts the analyzer server and never returns."""
    import runpy
    import sys

    import pulumi_policy.policy as analyzer

    built: list[dict[str, Any]] = []
    monkeypatch.setattr(pulumi_policy, "PolicyPack", lambda **kwargs: built.append(kwargs))
    monkeypatch.setattr(analyzer, "deserialize_properties", analyzer.deserialize_properties)  # restored after
    monkeypatch.delitem(sys.modules, "rules", raising=False)
    runpy.run_path(str(Path(rules.__file__).parents[1]), run_name="__main__")
    sys.modules.pop("rules", None)
    (pack,) = built
    assert pack["name"] == "karmada-hub"
    assert pack["enforcement_level"] == pulumi_policy.EnforcementLevel.MANDATORY
    assert [p.name for p in pack["policies"]] == [r.name for r in (*rules.RESOURCE_RULES, *rules.STACK_RULES)]
    assert getattr(analyzer.deserialize_properties, "redacts_secrets", False)


# --------------------------------------------------------------------------------- world-reachable LBs

LB = "hcloud:index/loadBalancer:LoadBalancer"
LB_NET = "hcloud:index/loadBalancerNetwork:LoadBalancerNetwork"
HUB = "karmada-hub:index:HubCluster"


def _hub_res(rtype: str, name: str, inputs: dict) -> dict:
    r = res(rtype, name, inputs)
    r["urn"] = f"urn:pulumi:dev::karmada-hub::{HUB}${rtype}::{name}"
    return r


def _api_lb(public: bool | None, label: bool = False, ports: tuple[int, ...] = (6443, 5443)) -> list[dict]:
    labels = {"karmada-hub/cluster": "hub", **({rules.WORLD_REACHABLE_LABEL: "true"} if label else {})}
    out = [_hub_res(LB, "hub-api-lb", {"labels": labels})]
    out += [_hub_res(LB_SERVICE, f"hub-api-lb-{p}", {"listenPort": p, "destinationPort": p}) for p in ports]
    if public is not None:
        out.append(_hub_res(LB_NET, "hub-api-lb-network", {"enablePublicInterface": public, "ip": "10.0.1.254"}))
    return out


def _with(*extra: dict) -> dict:
    plan = good_plan()
    plan["resources"] = sorted([*plan["resources"], *extra], key=lambda r: r["urn"])
    return plan


def test_a_private_api_lb_passes() -> None:
    assert check_plan(_with(*_api_lb(public=False))) == []


@pytest.mark.parametrize("public", [True, None], ids=["public-interface", "no-network-at-all"])
def test_a_public_api_lb_without_the_opt_in_fails(public: bool | None) -> None:
    found = check_plan(_with(*_api_lb(public=public)))
    assert [(v.policy, v.advisory) for v in found] == [("api-lb-private", False)]
    assert "tcp 5443, 6443 on its public interface" in found[0].message
    assert found[0].urn.endswith("::hub-api-lb")


def test_an_opted_in_api_lb_is_named_world_reachable_and_passes() -> None:
    found = check_plan(_with(*_api_lb(public=True, label=True)))
    assert [(v.policy, v.advisory) for v in found] == [("api-lb-world-reachable", True)]
    report = format_violations(found, "dev")
    assert report.splitlines()[0] == "advisory:"
    assert "WORLD-REACHABLE: tcp 5443, 6443 from any address on the internet" in report
    assert report.endswith("policy: ok in dev (14 rules, 0 violations)")
    out = io.StringIO()
    plan_path = Path(__import__("tempfile").mkdtemp()) / "plan.json"
    plan_path.write_text(json.dumps(_with(*_api_lb(public=True, label=True))))
    assert main_policy(plan_path, out) == 0 and "WORLD-REACHABLE" in out.getvalue()


def test_a_public_lb_serving_only_web_ports_is_none_of_the_rules_business() -> None:
    regional = [_hub_res(LB, "traffic-eu-lb", {"labels": {}}),
                _hub_res(LB_SERVICE, "traffic-eu-lb-443", {"listenPort": 443}),
                _hub_res(LB_NET, "traffic-eu-lb-network", {})]
    assert check_plan(_with(*regional)) == []
    # a service of another LB (another name prefix) is not this LB's
    assert check_plan(_with(*regional, *_api_lb(public=False))) == []


# ------------------------------------------------------------------------------ region-identity-subject


def _region_signer(attrs: list[Any], user: str | None = None, key: Any = None) -> tuple[str, dict]:
    import hashlib

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = key or ec.generate_private_key(ec.SECP256R1())
    csr = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(attrs)).sign(key, hashes.SHA256())
    der = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return "pulumi-python:dynamic:Resource", {
        "kind": "RegionCertificate", "region": "eu-fsn",
        "csrPem": csr.public_bytes(serialization.Encoding.PEM).decode(),
        "user": user or f"karmada-hub:region:eu-fsn:{hashlib.sha256(der).hexdigest()[:12]}", "caKeyPem": "[secret]"}


def test_region_identity_subject_both_ways() -> None:
    """The policy's own reading of what the hub signs: the exact CSR subject and the key-bound user pass; a group
    in the CSR, another region's name or a user that is not the key's are findings (experiment 2 of the review
    passed the pack with 0 violations)."""
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    cn = x509.NameAttribute(NameOID.COMMON_NAME, "karmada-hub:region:eu-fsn")
    assert rules.region_identity_subject(*_region_signer([cn])) == []
    masters = rules.region_identity_subject(*_region_signer(
        [cn, x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:masters")]))
    assert masters == ["the CSR asks for O=system:masters,CN=karmada-hub:region:eu-fsn, not exactly "
                       "CN=karmada-hub:region:eu-fsn"]
    assert rules.region_identity_subject(*_region_signer(
        [x509.NameAttribute(NameOID.COMMON_NAME, "karmada-hub:region:eu-hel")]))
    wrong_user = rules.region_identity_subject(*_region_signer([cn], user="karmada-hub:region:eu-fsn:000000000000"))
    assert wrong_user and wrong_user[0].startswith(
        "it would sign the subject CN=karmada-hub:region:eu-fsn:000000000000")
    rtype, props = _region_signer([cn])
    assert rules.region_identity_subject(rtype, {**props, "csrPem": "[computed]"}) == []  # judged at `up`


@pytest.mark.parametrize(("subjects", "ok"), [
    ([{"kind": "User", "name": "karmada-hub:region:eu-fsn:0123456789ab", "apiGroup": "rbac.authorization.k8s.io"}],
     True),
    ([{"kind": "User", "name": "karmada-hub:region:eu-fsn"}], False),
    ([{"kind": "User", "name": "karmada-hub:region:eu-hel:0123456789ab"}], False),
    ([{"kind": "Group", "name": "karmada-hub:region:eu-fsn:0123456789ab"}], False),
    ([{"kind": "User", "name": "karmada-hub:region:eu-fsn:0123456789ab"}, {"kind": "Group", "name": "x"}], False),
])
def test_region_bindings_bind_one_key_bound_user(subjects: list, ok: bool) -> None:
    props = {"metadata": {"name": "karmada-hub:region:eu-fsn", "namespace": "shop"}, "subjects": subjects}
    found = rules.region_identity_subject("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", props)
    assert (found == []) is ok, found
    other = {"metadata": {"name": "system:karmada:x"}, "subjects": subjects}
    assert rules.region_identity_subject("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", other) == []
