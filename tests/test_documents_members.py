"""Tests for the member join documents (Push and Pull), the kubeconfig renderer and the Cluster validator.

Member- and host-side objects are checked with kubernetes-validate (strict) for Kubernetes 1.34, hub-side
`Cluster` objects with the schema written from the Karmada v1.18.2 Go types.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.config import MemberConfig
from components.fleet import member_docs as m
from components.karmada import flags
from tests.support.schemas import SchemaError, validate_any, validate_cluster, validate_kubernetes
from tests.support.tools import load_stack

REPO = Path(__file__).resolve().parents[1]
DEV_STACK = REPO / "stacks" / "Pulumi.dev.yaml"
MINOR = "1.34"
VERSION = "v1.18.2"
CA = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"




def member(sync_mode: str = "Push", **extra: Any) -> MemberConfig:
    fields: dict[str, Any] = {
        "name": "fsn1-a",
        "region": "eu-fsn",
        "zones": ["fsn1"],
        "sync_mode": sync_mode,
        "kubernetes_version": "v1.33.4",
        "api_endpoint": "https://fsn1-a.k8s.example.com:6443",
        "credentials": {"source": "capi", "cluster": "fsn1-a"},
        "labels": {"tier": "standard"},
    }
    return MemberConfig(**{**fields, **extra})


def by_kind(objs: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(o["kind"], o["metadata"]["name"]): o for o in objs}


def decode(secret: dict[str, Any], key: str) -> str:
    return base64.b64decode(secret["data"][key]).decode()


# ------------------------------------------------------------------------------------------ Push


def test_push_member_objects_validate_and_match_karmadactl_join() -> None:
    objs = m.push_member_objects("fsn1-a")
    for obj in objs:
        validate_kubernetes(obj, MINOR)
    named = by_kind(objs)
    assert set(named) == {
        ("Namespace", "karmada-cluster"),
        ("ServiceAccount", "karmada-impersonator"),
        ("Secret", "karmada-impersonator"),
        ("ServiceAccount", "karmada-fsn1-a"),
        ("Secret", "karmada-fsn1-a"),
        ("ClusterRole", "karmada-controller-manager:karmada-fsn1-a"),
        ("ClusterRoleBinding", "karmada-controller-manager:karmada-fsn1-a"),
    }
    assert objs[0]["kind"] == "Namespace"
    for (kind, _name), obj in named.items():
        if kind in ("ServiceAccount", "Secret"):
            assert obj["metadata"]["namespace"] == "karmada-cluster"
        assert obj["metadata"]["labels"]["karmada.io/system"] == "true"


def test_push_token_secrets_are_long_lived_sa_tokens() -> None:
    named = by_kind(m.push_member_objects("fsn1-a"))
    for sa in ("karmada-impersonator", "karmada-fsn1-a"):
        secret = named[("Secret", sa)]
        assert secret["type"] == "kubernetes.io/service-account-token"
        assert secret["metadata"]["annotations"] == {"kubernetes.io/service-account.name": sa}
        assert "data" not in secret and "stringData" not in secret  # the token controller fills them


def test_push_rbac_binds_the_cluster_sa_to_full_access() -> None:
    named = by_kind(m.push_member_objects("fsn1-a"))
    role = named[("ClusterRole", "karmada-controller-manager:karmada-fsn1-a")]
    assert {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]} in role["rules"]
    assert {"nonResourceURLs": ["*"], "verbs": ["get"]} in role["rules"]
    binding = named[("ClusterRoleBinding", "karmada-controller-manager:karmada-fsn1-a")]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "karmada-fsn1-a", "namespace": "karmada-cluster"}]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]


def test_hub_credential_secrets_carry_the_passed_values() -> None:
    secret = m.cluster_secret("fsn1-a", "tok-123", CA)
    impersonator = m.impersonator_secret("fsn1-a", "imp-456")
    for obj in (secret, impersonator):
        validate_kubernetes(obj, MINOR)
        assert obj["metadata"]["namespace"] == "karmada-cluster"
        assert "stringData" not in obj
    assert secret["metadata"]["name"] == "fsn1-a"
    assert decode(secret, "token") == "tok-123"
    assert decode(secret, "caBundle") == CA
    assert impersonator["metadata"]["name"] == "fsn1-a-impersonator"
    assert set(impersonator["data"]) == {"token"}
    assert decode(impersonator, "token") == "imp-456"


def test_push_cluster_object() -> None:
    cluster = m.cluster_object(member("Push"), cluster_id="0b7c2f8e-uid")
    validate_cluster(cluster)
    assert cluster["metadata"]["name"] == "fsn1-a"
    assert cluster["spec"] == {
        "syncMode": "Push",
        "apiEndpoint": "https://fsn1-a.k8s.example.com:6443",
        "id": "0b7c2f8e-uid",
        "secretRef": {"namespace": "karmada-cluster", "name": "fsn1-a"},
        "impersonatorSecretRef": {"namespace": "karmada-cluster", "name": "fsn1-a-impersonator"},
        "provider": "hetzner",
        "region": "eu-fsn",
        "zones": ["fsn1"],
    }
    assert cluster["metadata"]["labels"] == {
        "tier": "standard",
        "topology.kubernetes.io/region": "eu-fsn",
        "fleet.karmada-hub.io/provider": "hetzner",
        "fleet.karmada-hub.io/sync-mode": "push",
    }


def test_secret_refs_point_at_the_rendered_secrets() -> None:
    cluster = m.cluster_object(member("Push"))
    secret, impersonator = m.cluster_secret("fsn1-a", "t", CA), m.impersonator_secret("fsn1-a", "t")
    for ref, obj in ((cluster["spec"]["secretRef"], secret), (cluster["spec"]["impersonatorSecretRef"], impersonator)):
        assert ref == {"namespace": obj["metadata"]["namespace"], "name": obj["metadata"]["name"]}


def test_cluster_labels_cannot_be_overridden_by_member_labels() -> None:
    cluster = m.cluster_object(member("Push", labels={"topology.kubernetes.io/region": "elsewhere"}))
    assert cluster["metadata"]["labels"]["topology.kubernetes.io/region"] == "eu-fsn"


def test_cluster_without_zones_omits_them() -> None:
    cluster = m.cluster_object(member("Push", zones=[]))
    validate_cluster(cluster)
    assert "zones" not in cluster["spec"]


def test_a_pull_cluster_is_exactly_what_its_agent_derives() -> None:
    """The hub makes a Pull member's Cluster (so the agent needs no create or update): its spec must be what the
    agent's registration derives from its flags (karmada v1.18.2 cmd/agent/app/agent.go
    generateClusterInControllerPlane), else CreateOrUpdateClusterObject would try to update it and, refused, exit;
    and its id the member's kube-system UID (pkg/util/cluster.go Validate)."""
    from components.karmada import flags

    uid = "0d92e743-09b2-41fb-9061-9068cc804212"
    pull = member("Pull", labels={}, cluster_id=uid)
    obj = m.cluster_object(pull)
    args = dict(a.removeprefix("--").split("=", 1) for a in flags.agent_args(
        pull.name, pull.api_endpoint.rstrip("/"), region=pull.region, zones=pull.zones) if "=" in a)
    assert obj["spec"] == {"syncMode": "Pull", "apiEndpoint": args["cluster-api-endpoint"], "id": uid,
                           "provider": args["cluster-provider"], "region": args["cluster-region"],
                           "zones": args["cluster-zones"].split(",")}
    assert args["report-secrets"] == "None"  # so the agent sets no secretRef/impersonatorSecretRef either
    assert "proxy-server-address" not in args  # proxyURL "" (omitted), insecureSkipTLSVerification false (omitted)
    with pytest.raises(ValueError, match="needs its kube-system UID"):
        m.cluster_object(member("Pull", labels={}))
    push = m.cluster_object(member("Push"))["spec"]
    assert push["secretRef"] == {"namespace": "karmada-cluster", "name": "fsn1-a"} and "id" not in push


# ------------------------------------------------------------------------------------------ Pull


def test_pull_hub_rbac_names_follow_karmadactl_register_narrowed() -> None:
    objs = m.pull_hub_objects("hel1-a")
    for obj in objs:
        validate_kubernetes(obj, MINOR)
    got = [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objs]
    assert got == [
        ("ClusterRole", None, "system:karmada:hel1-a:agent"),
        ("ClusterRoleBinding", None, "system:karmada:hel1-a:agent"),
        ("Role", "karmada-cluster", "system:karmada:hel1-a:agent-lease"),
        ("RoleBinding", "karmada-cluster", "system:karmada:hel1-a:agent-lease"),
        ("Role", "karmada-system", "system:karmada:hel1-a:agent-leader"),
        ("RoleBinding", "karmada-system", "system:karmada:hel1-a:agent-leader"),
        ("Namespace", None, "karmada-es-hel1-a"),
        ("Role", "karmada-es-hel1-a", "system:karmada:hel1-a:agent-work"),
        ("RoleBinding", "karmada-es-hel1-a", "system:karmada:hel1-a:agent-work"),
    ]
    for obj in objs:
        if obj["kind"].endswith("Binding"):
            assert obj["subjects"] == [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:karmada:agent:hel1-a"}
            ]
            assert obj["roleRef"]["name"] == obj["metadata"]["name"]


def _verbs(rules: list[dict[str, Any]], resource: str, name: str | None = None) -> set[str]:
    return {v for r in rules if resource in r["resources"] and (name is None or name in r.get("resourceNames", [name]))
            and (name is not None or "resourceNames" not in r) for v in r["verbs"]}


def test_pull_hub_rbac_is_scoped_to_the_one_cluster() -> None:
    named = by_kind(m.pull_hub_objects("hel1-a"))
    rules = named[("ClusterRole", "system:karmada:hel1-a:agent")]["rules"]
    assert _verbs(rules, "clusters", "hel1-a") == {"get", "list", "watch"}  # the hub made it; nothing to write
    assert _verbs(rules, "clusters") == {"list", "watch"}  # no create: a plain create cannot be limited by name
    status = next(r for r in rules if r["resources"] == ["clusters/status"])
    assert status["resourceNames"] == ["hel1-a"] and status["verbs"] == ["update"]
    own = next(r for r in rules if r["resources"] == ["clusters"] and r.get("resourceNames"))
    assert own == {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters"], "resourceNames": ["hel1-a"],
                   "verbs": ["get"]}
    assert not any("leases" in r["resources"] for r in rules), "no cluster-wide lease rights (leader locks)"
    assert not any("secrets" in r["resources"] for r in rules)  # --report-secrets=None
    csr = next(r for r in rules if "certificates.k8s.io" in r.get("apiGroups", []))
    assert csr["verbs"] == ["get", "create"]  # certRotation renews through the CSR API
    lease = named[("Role", "system:karmada:hel1-a:agent-lease")]["rules"]
    assert _verbs(lease, "leases", "hel1-a") == {"get", "update", "create"} and lease[0]["resourceNames"] == ["hel1-a"]
    leader = named[("Role", "system:karmada:hel1-a:agent-leader")]["rules"]
    assert leader[0]["resourceNames"] == ["karmada-agent-hel1-a"] == [m.agent_leader_lease("hel1-a")]
    work = named[("Role", "system:karmada:hel1-a:agent-work")]["rules"]
    assert work[0]["apiGroups"] == ["work.karmada.io"] and "delete" in work[0]["verbs"]


def test_bootstrap_rbac_is_only_the_node_bootstrapper_binding() -> None:
    """A token may create and read CSRs and nothing else: no `clusteragent` right (the approver that read it is off;
    the hub's own decides), no rbac-generator, no anonymous cluster-info."""
    objs = m.bootstrap_rbac()
    for obj in objs:
        validate_kubernetes(obj, MINOR)
    assert [(o["kind"], o["metadata"]["name"]) for o in objs] == [("ClusterRoleBinding",
                                                                   "system:karmada:agent-bootstrap")]
    assert not any("rbac-generator" in str(o) or "system:anonymous" in str(o) or "clusteragent" in str(o)
                   for o in objs)
    assert objs[0]["roleRef"]["name"] == "system:node-bootstrapper"
    assert objs[0]["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                    "name": m.BOOTSTRAP_GROUP}]


def test_bootstrap_token_secret_is_authentication_only_and_short_lived() -> None:
    secret = m.bootstrap_token_secret("abc123", "0123456789abcdef", "2026-12-01T10:00:00Z")
    validate_kubernetes(secret, MINOR)
    assert secret["type"] == "bootstrap.kubernetes.io/token"
    assert secret["metadata"] == {**secret["metadata"], "name": "bootstrap-token-abc123", "namespace": "kube-system"}
    data = {k: decode(secret, k) for k in secret["data"]}
    assert data["usage-bootstrap-authentication"] == "true" and "usage-bootstrap-signing" not in data
    assert data["auth-extra-groups"] == m.BOOTSTRAP_GROUP and data["expiration"] == "2026-12-01T10:00:00Z"
    with pytest.raises(ValueError):
        m.bootstrap_token_secret("ABC123", "0123456789abcdef", "x")
    assert re.fullmatch(r"[0-9a-f]{6}", m.token_id("hel1-a")) and m.token_id("hel1-a") != m.token_id("hel1-b")


def test_pull_member_objects_validate() -> None:
    source = (REPO / "agents" / "pull_join.py").read_text()
    objs = m.pull_member_objects("hel1-a", VERSION, ["--cluster-name=hel1-a"], source, generation=3)
    for obj in objs:
        validate_kubernetes(obj, MINOR)
    named = by_kind(objs)
    assert objs[0] == m.namespace("karmada-system")
    assert not [o for o in objs if o["kind"] == "Secret"], "no credential is rendered: the join makes it"
    assert ("ServiceAccount", "karmada-agent-sa") in named
    assert named[("ClusterRoleBinding", "karmada-agent")]["subjects"] == [
        {"kind": "ServiceAccount", "name": "karmada-agent-sa", "namespace": "karmada-system"}
    ]
    assert ("PodDisruptionBudget", "karmada-agent") in named
    kinds = [o["kind"] for o in objs]
    assert kinds.index("Job") < kinds.index("Deployment") < kinds.index("CronJob")
    job = named[("Job", m.JOIN_NAME)]
    pod = job["spec"]["template"]
    assert pod["metadata"]["annotations"][m.GENERATION_ANNOTATION] == "3"
    (container,) = pod["spec"]["containers"]
    assert container["args"] == m.join_args("hel1-a") and pod["spec"]["serviceAccountName"] == m.JOIN_NAME
    assert named[("ConfigMap", m.JOIN_NAME)]["data"][m.JOIN_SCRIPT] == source
    join_rules = named[("Role", m.JOIN_NAME)]["rules"]
    assert {(tuple(r.get("resourceNames", ())), tuple(r["verbs"])) for r in join_rules} == {
        ((m.AGENT_KUBECONFIG_SECRET, m.AGENT_BOOTSTRAP_SECRET), ("get",)), ((m.AGENT_KUBECONFIG_SECRET,), ("update",)),
        ((m.AGENT_BOOTSTRAP_SECRET,), ("delete",)), ((), ("create",))}
    assert all(r["resources"] == ["secrets"] for r in join_rules)
    restart = named[("Role", m.RESTART_NAME)]["rules"]
    assert {(r["resources"][0], tuple(r.get("resourceNames", ()))) for r in restart} == {
        ("secrets", (m.AGENT_KUBECONFIG_SECRET,)), ("pods", ()), ("deployments", (m.AGENT_NAME,))}
    cron = named[("CronJob", m.RESTART_NAME)]
    assert cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"] == m.restart_args()


def test_estimator_reader_reads_exactly_what_the_estimator_lists() -> None:
    objs = m.estimator_reader_objects()
    for obj in objs:
        validate_kubernetes(obj, MINOR)
    named = by_kind(objs)
    rules = named[("ClusterRole", m.ESTIMATOR_READER_ROLE)]["rules"]
    assert [(r["apiGroups"], r["resources"]) for r in rules] == [([""], ["nodes", "pods"]),
                                                                 (["apps"], ["deployments", "replicasets"])]
    assert all(r["verbs"] == ["get", "list", "watch"] for r in rules)
    with_quota = m.estimator_reader_rules(resource_quota_estimate=True)
    assert with_quota[0]["resources"] == ["nodes", "pods", "resourcequotas"]
    token = named[("Secret", m.ESTIMATOR_READER)]
    assert token["type"] == "kubernetes.io/service-account-token"


def test_agent_deployment() -> None:
    args = ["--karmada-kubeconfig=" + m.AGENT_KUBECONFIG_PATH, "--cluster-name=hel1-a"]
    deploy = m.agent_deployment("hel1-a", VERSION, args)
    validate_kubernetes(deploy, MINOR)
    spec = deploy["spec"]
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    assert spec["replicas"] == 2
    assert container["image"] == "docker.io/karmada/karmada-agent:v1.18.2"
    assert container["args"] == args and container["args"] is not args
    assert pod["serviceAccountName"] == "karmada-agent-sa"
    security = container["securityContext"]
    assert security["runAsNonRoot"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"]["port"] == 10357
        assert container[probe]["httpGet"]["path"] == "/healthz"
    assert set(container["resources"]["requests"]) == {"cpu", "memory"}
    real = m.agent_deployment("hel1-a", VERSION, flags.agent_args("hel1-a", "https://hel1-a.example:6443",
                                                                  region="eu-hel"))
    (agent,) = real["spec"]["template"]["spec"]["containers"]
    assert flags.env_refs(agent["args"]) == {"POD_IP"} <= {e["name"] for e in agent["env"]}
    mount = next(v for v in container["volumeMounts"] if v["name"] == "kubeconfig")
    volume = next(v for v in pod["volumes"] if v["name"] == "kubeconfig")
    assert volume["secret"]["secretName"] == "karmada-kubeconfig"
    assert f"{mount['mountPath']}/karmada-kubeconfig" == m.AGENT_KUBECONFIG_PATH
    assert spec["selector"]["matchLabels"] == spec["template"]["metadata"]["labels"]
    anti = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert anti[0]["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"


# ------------------------------------------------------------------------------------ kubeconfig


def test_kubeconfig_with_client_certificate() -> None:
    text = m.kubeconfig("https://hub.example.com:5443", CA, "CERT-PEM", "KEY-PEM", name="hub")
    doc = yaml.safe_load(text)
    assert doc["current-context"] == "hub"
    assert doc["clusters"] == [{"name": "hub", "cluster": {
        "server": "https://hub.example.com:5443",
        "certificate-authority-data": base64.b64encode(CA.encode()).decode()}}]
    user = doc["users"][0]["user"]
    assert base64.b64decode(user["client-certificate-data"]).decode() == "CERT-PEM"
    assert base64.b64decode(user["client-key-data"]).decode() == "KEY-PEM"
    (context,) = doc["contexts"]
    assert context["name"] == "hub" and context["context"]["cluster"] == "hub"
    assert context["context"]["user"] == doc["users"][0]["name"]


def test_kubeconfig_with_token() -> None:
    doc = yaml.safe_load(m.kubeconfig("https://member.example.com:6443", CA, token="abc.def"))
    assert [u["user"] for u in doc["users"]] == [{"token": "abc.def"}]
    assert doc["current-context"] == "karmada"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "either"),
        ({"client_cert_pem": "C", "client_key_pem": "K", "token": "t"}, "either"),
        ({"client_cert_pem": "C"}, "go together"),
        ({"token": "t", "server": "http://hub:5443"}, "https"),
    ],
)
def test_kubeconfig_refuses_ambiguous_credentials(kwargs: dict[str, Any], message: str) -> None:
    args = {"server": "https://hub.example.com:5443", "ca_pem": CA, **kwargs}
    with pytest.raises(ValueError, match=message):
        m.kubeconfig(**args)


# ------------------------------------------------------------------------------------ dev stack


def test_dev_stack_renders_one_push_and_one_pull_member() -> None:
    config = load_stack()
    modes = {mem.sync_mode for mem in config.members}
    assert modes == {"Push", "Pull"}
    source = (REPO / "agents" / "pull_join.py").read_text()
    rendered: dict[str, list[dict[str, Any]]] = {}
    for mem in config.members:
        objs: list[dict[str, Any]] = []
        if mem.sync_mode == "Push":
            objs += [m.cluster_object(mem), *m.push_member_objects(mem.name)]
            objs += [m.cluster_secret(mem.name, "token", CA), m.impersonator_secret(mem.name, "token")]
        else:
            objs += m.pull_hub_objects(mem.name)
            objs += m.pull_member_objects(mem.name, config.karmada.version, [f"--cluster-name={mem.name}"], source)
        for obj in objs:
            validate_any(obj, MINOR)
        rendered[mem.sync_mode] = objs
    push_cluster = rendered["Push"][0]
    assert push_cluster["spec"]["syncMode"] == "Push" and "secretRef" in push_cluster["spec"]
    assert not any(o["kind"] == "Cluster" for o in rendered["Pull"])  # the agent creates its own, with spec.id
    assert any(o["kind"] == "Deployment" for o in rendered["Pull"])
    assert not any(o["kind"] == "Deployment" for o in rendered["Push"])


# ------------------------------------------------------------------------ the Cluster validator


def _cluster() -> dict[str, Any]:
    return m.cluster_object(member("Push"))


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda c: c["metadata"].__setitem__("name", "a" * 49), "longer than 48"),
        (lambda c: c["metadata"].__setitem__("name", "Fsn1.a"), "DNS-1123 label"),
        (lambda c: c["spec"].pop("syncMode"), "syncMode"),
        (lambda c: c["spec"].__setitem__("syncMode", "Both"), "Both"),
        (lambda c: c["spec"].__setitem__("apiEndpoint", "http://fsn1-a:6443"), "https"),
        (lambda c: c["spec"].__setitem__("apiEndpoint", "https://admin:pw@fsn1-a:6443"), "user information"),
        (lambda c: c["spec"].__setitem__("apiEndpoint", "https://fsn1-a:6443/?x=1"), "query"),
        (lambda c: c["spec"].__setitem__("apiEndpoint", "https://fsn1-a:6443/#frag"), "fragment"),
        (lambda c: c["spec"].__setitem__("regions", ["eu"]), "regions"),
        (lambda c: c["spec"].__setitem__("zone", "fsn1"), "co-exist"),
        (lambda c: c["spec"]["secretRef"].pop("namespace"), "namespace"),
        (lambda c: c["spec"].__setitem__("region", "eu fsn"), "label value"),
        (lambda c: c["spec"].__setitem__("proxyURL", "ftp://proxy"), "proxyURL"),
        (lambda c: c["spec"].__setitem__("taints", [{"key": "k", "effect": "Evict"}]), "Evict"),
        (lambda c: c["metadata"].__setitem__("namespace", "default"), "cluster-scoped"),
    ],
)
def test_cluster_validator_rejects(mutate: Any, message: str) -> None:
    cluster = _cluster()
    validate_cluster(cluster)
    mutate(cluster)
    with pytest.raises(SchemaError, match=message):
        validate_cluster(cluster)


def test_cluster_validator_accepts_the_full_spec() -> None:
    cluster = _cluster()
    cluster["spec"].update({
        "insecureSkipTLSVerification": False,
        "proxyURL": "socks5://proxy:1080",
        "proxyHeader": {"Proxy-Authorization": "Basic x"},
        "taints": [{"key": "fleet.karmada-hub.io/not-ready", "effect": "NoExecute",
                    "timeAdded": "2026-01-01T00:00:00Z"}],
        "resourceModels": [{"grade": 0, "ranges": [{"name": "cpu", "min": "0", "max": "1"},
                                                   {"name": "memory", "min": 0, "max": "4Gi"}]}],
    })
    validate_cluster(cluster)


def test_validate_any_dispatches_by_group() -> None:
    with pytest.raises(SchemaError, match="longer than 48"):
        validate_any({**_cluster(), "metadata": {"name": "a" * 49}})
    with pytest.raises(SchemaError, match="bogus"):
        validate_any({**m.namespace("x"), "bogus": True}, MINOR)
    with pytest.raises(SchemaError, match="no served CRD"):
        validate_any({"apiVersion": "policy.karmada.io/v9", "kind": "Nope", "metadata": {"name": "x"}})


def test_the_client_health_check_reaches_the_agent_and_the_controller_manager(rendered_dev: Any) -> None:
    from hubctl.plan import run_program
    from tests.support.rendered import find
    from tests.support.tools import REPO, edited_stack

    def env(plan: Any, target: str, kind: str, name: str) -> dict[str, str]:
        (container,) = find(plan, target, kind, name)["spec"]["template"]["spec"]["containers"]
        return {e["name"]: e.get("value", "") for e in container.get("env") or []}

    names = {"HTTP2_READ_IDLE_TIMEOUT_SECONDS", "HTTP2_PING_TIMEOUT_SECONDS"}
    for target, name in (("member-dev-hel1-a", m.AGENT_NAME), ("host", "karmada-controller-manager")):
        got = env(rendered_dev, target, "Deployment", name)  # the defaults: 10 s + 5 s
        assert got["HTTP2_READ_IDLE_TIMEOUT_SECONDS"] == "10" and got["HTTP2_PING_TIMEOUT_SECONDS"] == "5", name

    def tune(failover: dict[str, Any]) -> None:
        failover.update(clientReadIdleSeconds=20, clientPingTimeoutSeconds=7)

    def upstream(failover: dict[str, Any]) -> None:
        failover.update(clientReadIdleSeconds=None, clientPingTimeoutSeconds=None)

    tuned = run_program(REPO, edited_stack("dev", {"failover": tune}))
    unset = run_program(REPO, edited_stack("dev", {"failover": upstream}))
    for target, name in (("member-dev-hel1-a", m.AGENT_NAME), ("host", "karmada-controller-manager")):
        got = env(tuned, target, "Deployment", name)
        assert got["HTTP2_READ_IDLE_TIMEOUT_SECONDS"] == "20" and got["HTTP2_PING_TIMEOUT_SECONDS"] == "7", name
        assert not names & set(env(unset, target, "Deployment", name)), f"{name}: null keeps client-go's own"
