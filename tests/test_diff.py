"""`hubctl diff`: golden Markdown for the changes reviewers meet, and the rules behind each verdict.

Each case builds a base plan shaped like a real one (tests/support/plans.py), changes it the way a PR would,
and compares the rendered Markdown with `tests/golden/diff/<case>.md` (HUBCTL_UPDATE_GOLDEN=1 rewrites them;
read the diff of the golden file before committing it). The assertions beside each golden say what must hold
whatever the wording: the action, the reason, what is hidden.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hubctl.diff import diff_plans, diff_values, iter_changes
from hubctl.diff_render import markdown
from hubctl.plan import redacted_value
from tests.support.plans import K8S_PROVIDER, PlanDir, budget_section, metric

GOLDEN = Path(__file__).parent / "golden" / "diff"
EPOCH = "2026-01-01"
HUB = "urn:pulumi:dev::karmada-hub::karmada-hub:index:HubCluster::hub"


@contextmanager
def epoch() -> Iterator[None]:
    old = os.environ.get("HUBCTL_PLAN_EPOCH")
    os.environ["HUBCTL_PLAN_EPOCH"] = EPOCH
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("HUBCTL_PLAN_EPOCH", None)
        else:
            os.environ["HUBCTL_PLAN_EPOCH"] = old


def ca(name: str, hours: int = 87600, cn: str | None = None) -> str:
    """A real self-signed CA certificate, as the plan's tls mock makes it (deterministic per name)."""
    from hubctl import mocks

    with epoch():
        key = mocks._private_key_outputs(name, {"algorithm": "ECDSA", "ecdsaCurve": "P256"})
        inputs = {"privateKeyPem": key["privateKeyPem"], "subject": {"commonName": cn or name},
                  "validityPeriodHours": hours, "isCaCertificate": True, "allowedUses": ["cert_signing"]}
        return str(mocks._self_signed(name, inputs)["certPem"])


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.md"
    if os.environ.get("HUBCTL_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.is_file(), f"no golden file {path}; run with HUBCTL_UPDATE_GOLDEN=1 and review it"
    assert text == path.read_text(), f"{name}: the rendered diff differs from {path} (HUBCTL_UPDATE_GOLDEN=1 rewrites)"


def render(tmp_path: Path, old: PlanDir, new: PlanDir, **kw: Any) -> tuple[Any, str]:
    a, b = old.write(tmp_path / "old"), new.write(tmp_path / "new")
    plan_a, plan_b = (json.loads((d / "plan.json").read_text()) for d in (a, b))
    result = diff_plans(plan_a, plan_b, a, b)
    return result, markdown(result, **kw)


def by_label(result: Any, label: str) -> Any:
    return next(c for c in iter_changes(result) if c.label == label)


# ------------------------------------------------------------------------------------------- a base


def base() -> PlanDir:
    p = PlanDir()
    hub = p.component("HubCluster", "hub")
    gate = p.add("pulumi-python:dynamic:Resource", "hub-api-ready",
                 {"url": "https://203.0.113.205:6443/readyz", "caPem": ca("hub-k3s-server-ca"),
                  "clientCertPem": ca("hub-admin"), "clientKeyPem": "[secret]", "kubeconfig": "[secret]",
                  "timeoutSeconds": 1200}, hub, options={"additionalSecretOutputs": ["clientKeyPem", "kubeconfig"]})
    host = p.add(K8S_PROVIDER, "k8s-host", {"enableServerSideApply": "true", "kubeconfig": "[secret]"}, hub,
                 dependencies=[gate])
    for i, loc in enumerate(("fsn1", "nbg1", "hel1")):
        p.add("hcloud:index/server:Server", f"hub-server-{i}",
              {"name": f"karmada-hub-dev-cp-{i}", "location": loc, "serverType": "cx23", "image": "ubuntu-24.04",
               "userData": "[secret]", "sshKeys": ["karmada-hub-dev-platform-oncall"]}, hub,
              options={"ignoreChanges": ["userData", "image", "sshKeys"]})
        p.cloud_init[f"karmada-hub-dev-cp-{i}"] = {
            "write_files": [
                {"path": "/etc/rancher/k3s/config.yaml", "permissions": "0600",
                 "content": f"node-name: karmada-hub-dev-cp-{i}\ncluster-init: {str(i == 0).lower()}\n"
                            "tls-san:\n- 203.0.113.205\netcd-snapshot-retention: 5\n"},
                {"path": "/var/lib/rancher/k3s/server/token", "permissions": "0600", "content": "[secret]"},
            ],
            "runcmd": [["/usr/local/sbin/install-k3s"]],
        }
    cp = p.component("KarmadaControlPlane", "karmada")
    p.k8s({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "karmada-scheduler", "namespace": "karmada-system",
                        "labels": {"app.kubernetes.io/name": "karmada-scheduler"}},
           "spec": {"replicas": 2, "selector": {"matchLabels": {"app.kubernetes.io/name": "karmada-scheduler"}},
                    "template": {"spec": {"containers": [
                        {"name": "karmada-scheduler", "image": "docker.io/karmada/karmada-scheduler:v1.18.2",
                         "args": ["--kubeconfig=/etc/karmada/config/karmada.config", "--leader-elect=true",
                                  "--enable-scheduler-estimator=true", "--v=4"]}]}}}}, cp, host)
    p.k8s({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
           "metadata": {"name": "karmada-scheduler-config", "namespace": "karmada-system"},
           "data": {"karmada.config": redacted_value("kubeconfig-v1", True)}}, cp, host)
    p.k8s({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "etcd-backup", "namespace": "karmada-system"},
           "data": {"backup.py": "import os\n\nRETAIN = 28\n\n\ndef main():\n    upload(os.environ['BUCKET'])\n"}},
          cp, host)
    dns = p.component("FleetDns", "dns")
    karmada = p.add(K8S_PROVIDER, "k8s-karmada", {"enableServerSideApply": "true", "kubeconfig": "[secret]"}, cp)
    p.k8s({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
           "metadata": {"name": "karmada-hub-external-dns-ttl"},
           "spec": {"failurePolicy": "Fail", "validations": [{
               "expression": "!has(object.metadata.annotations) || !('external-dns.kubernetes.io/ttl' in "
                             "object.metadata.annotations) || object.metadata.annotations['external-dns.kubernetes.io"
                             "/ttl'] == '30'", "reason": "Invalid"}]}}, dns, karmada)
    policies = p.component("FleetPolicies", "policies")
    p.k8s({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "FederatedResourceQuota",
           "metadata": {"name": "shop", "namespace": "shop"},
           "spec": {"overall": {"cpu": "40"}, "staticAssignments": [
               {"clusterName": f"dev-{r}-a", "hard": {"cpu": "10"}} for r in ("fsn1", "hel1", "nbg1", "ash")]}},
          policies, karmada)
    p.k8s({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
           "metadata": {"name": "shop", "namespace": "shop"},
           "spec": {"placement": {"clusterAffinities": [
               {"affinityName": "preferred", "clusterNames": ["dev-fsn1-a", "dev-hel1-a", "dev-nbg1-a", "dev-ash-a"]}]},
               "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}]}}, policies, karmada)
    for member in ("dev-fsn1-a", "dev-hel1-a"):
        m = p.component("MemberCluster", f"member-{member}")
        p.k8s({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": member},
               "spec": {"syncMode": "Push", "apiEndpoint": f"https://{member}.k8s.dev.example.com:6443"}}, m, karmada)
        p.k8s({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": member, "namespace": "karmada-cluster"},
               "data": {"caBundle": redacted_value(f"ca-{member}", True), "token": redacted_value(member, True)}},
              m, karmada)
        p.add("tls:index/privateKey:PrivateKey", f"agent-{member}-key", {"algorithm": "ECDSA", "ecdsaCurve": "P256"},
              m, options={"additionalSecretOutputs": ["privateKeyPem"]})
    p.outputs = {"hubApiEndpoint": "https://203.0.113.205:6443", "hubKubeconfig": "[secret]"}
    p.sections = {
        "components": {"title": "resources per component", "metrics": {"total": metric(len(p.resources))}},
        "failoverBudget": budget_section({"detection": 84, "eviction queue": 98, "pod start": 60, "DNS TTL": 30}),
        "versionSkew": {"title": "version skew", "metrics": {"problems": metric(0, better="lower"),
                                                              "hub k3s": metric("v1.34.1+k3s1")}},
        "certificates": {"title": "certificates", "metrics": {"shortest validity": metric(8760, "h", "higher")},
                         "data": [{"resource": "hub-admin", "subject": "CN=hub-admin", "sans": [],
                                   "validityHours": 8760, "notAfter": "2027-01-01", "fingerprint": "1111aaaa2222bbbb",
                                   "issuer": "CN=hub-k3s-client-ca"}]},
    }
    return p


def res(p: PlanDir, name: str) -> dict[str, Any]:
    return next(r for r in p.resources.values() if r["name"] == name)


# ------------------------------------------------------------------------------------------- cases


def test_no_changes(tmp_path: Path) -> None:
    result, text = render(tmp_path, base(), base())
    assert result.resources == [] and "No changes." in text
    check_golden("no-changes", text)


def test_add_a_member_is_one_entry_with_its_resources(tmp_path: Path) -> None:
    old, new = base(), base()
    m = new.component("MemberCluster", "member-dev-nbg1-a")
    karmada = urn_of(new, "k8s-karmada")
    new.k8s({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": "dev-nbg1-a"},
             "spec": {"syncMode": "Pull"}}, m, karmada)
    new.add("tls:index/privateKey:PrivateKey", "agent-dev-nbg1-a-key", {"algorithm": "ECDSA", "ecdsaCurve": "P256"}, m)
    result, text = render(tmp_path, old, new)
    assert result.counts()["create"] == 3
    (entry,) = [c for c in result.resources if c.action == "create"]
    assert entry.label == "MemberCluster member-dev-nbg1-a" and len(entry.children) == 2
    check_golden("add", text)


def test_remove_the_first_member_is_one_removal_per_list(tmp_path: Path) -> None:
    old, new = base(), base()
    for u in [u for u, r in new.resources.items() if "dev-fsn1-a" in r["name"]]:
        del new.resources[u]
    quota = res(new, "karmada-federatedresourcequota-shop-shop")["inputs"]["spec"]
    quota["staticAssignments"] = [a for a in quota["staticAssignments"] if a["clusterName"] != "dev-fsn1-a"]
    affinity = res(new, "karmada-propagationpolicy-shop-shop")["inputs"]["spec"]["placement"]["clusterAffinities"][0]
    affinity["clusterNames"].remove("dev-fsn1-a")
    result, text = render(tmp_path, old, new)
    removed = [c for c in result.resources if c.action == "delete"]
    assert [c.label for c in removed] == ["MemberCluster member-dev-fsn1-a"] and len(removed[0].children) == 3
    for label in ("FederatedResourceQuota shop/shop", "PropagationPolicy shop/shop"):
        (change,) = by_label(result, label).changes
        assert change.after is not change.before and change.path.endswith(("[clusterName=dev-fsn1-a]", "[0]"))
    check_golden("remove", text)


def test_replacements_say_why_and_come_first(tmp_path: Path) -> None:
    old, new = base(), base()
    res(new, "hub-server-1")["inputs"]["location"] = "fsn1"
    deployment = res(new, "host-deployment-karmada-system-karmada-scheduler")["inputs"]
    deployment["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"] = "scheduler"
    deployment["spec"]["replicas"] = 3
    result, text = render(tmp_path, old, new)
    server = by_label(result, "Server karmada-hub-dev-cp-1")
    assert server.action == "replace" and "internal/server/resource.go" in server.changes[0].why
    assert server.create_conflict and "deleteBeforeReplace" in server.create_conflict
    dep = by_label(result, "Deployment karmada-system/karmada-scheduler")
    assert dep.action == "replace" and dep.delete_before_replace
    assert {c.path: c.effect for c in dep.changes} == {
        'spec.selector.matchLabels["app.kubernetes.io/component"]': "replace", "spec.replicas": "update"}
    assert text.index("#### Removals and replacements") < text.index("#### Changes by component") \
        if "#### Changes by component" in text else True
    check_golden("replace", text)


def test_a_new_ca_replaces_the_gate_its_provider_and_every_object_on_it(tmp_path: Path) -> None:
    old, new = base(), base()
    res(new, "hub-api-ready")["inputs"]["caPem"] = ca("hub-k3s-server-ca", hours=43800)
    result, text = render(tmp_path, old, new)
    gate = by_label(result, "readiness gate hub-api-ready")
    assert gate.action == "replace"
    provider = by_label(result, "provider k8s-host")
    assert provider.action == "replace" and provider.cascade_from == gate.urn
    on_host = [c for c in iter_changes(result) if c.target == "host"]
    assert len(on_host) == 3 and all(c.action == "replace" and c.cascade_from == provider.urn for c in on_host)
    assert "replace 3 objects** managed by provider `k8s-host`" in text
    assert "validity hours 87600 → 43800" in text  # the certificate, not its PEM
    assert "BEGIN CERTIFICATE" not in text
    check_golden("cascade", text)


def test_ignored_changes_are_not_applied(tmp_path: Path) -> None:
    old, new = base(), base()
    for i in range(3):
        files = new.cloud_init[f"karmada-hub-dev-cp-{i}"]["write_files"]
        files[0]["content"] = files[0]["content"].replace("etcd-snapshot-retention: 5", "etcd-snapshot-retention: 10")
        res(new, f"hub-server-{i}")["inputs"]["image"] = "ubuntu-26.04"
    res(new, "hub-api-ready")["inputs"]["timeoutSeconds"] = 900
    result, text = render(tmp_path, old, new)
    servers = [c for c in result.resources if c.type == "hcloud:index/server:Server"]
    assert len(servers) == 3 and all(c.action == "ignored" for c in servers)
    assert {c.path for c in servers[0].changes} == {"image", "userData"}
    assert all(c.effect == "ignored" and "ignoreChanges" in (c.why or "") for c in servers[0].changes)
    gate = by_label(result, "readiness gate hub-api-ready")
    assert gate.action == "ignored" and "only acts on url and caPem" in gate.changes[0].why
    assert text.count("⊘ **not applied**") == 3  # cp-1 and cp-2 change identically: one entry
    check_golden("ignored", text)


def test_long_values_are_diffed_around_the_change(tmp_path: Path) -> None:
    old, new = base(), base()
    vap = res(new, "karmada-validatingadmissionpolicy-karmada-hub-external-dns-ttl")["inputs"]
    vap["spec"]["validations"][0]["expression"] = vap["spec"]["validations"][0]["expression"].replace("'30'", "'20'")
    cm = res(new, "host-configmap-karmada-system-etcd-backup")["inputs"]
    cm["data"]["backup.py"] = cm["data"]["backup.py"].replace("RETAIN = 28", "RETAIN = 14")
    result, text = render(tmp_path, old, new)
    assert "  - …s['external-dns.kubernetes.io/ttl'] == '30'\n  + …s['external-dns.kubernetes.io/ttl'] == '20'" in text
    assert "  -RETAIN = 28" in text and "  +RETAIN = 14" in text
    configmap = by_label(result, "ConfigMap karmada-system/etcd-backup")
    assert configmap.action == "replace" and "enableConfigMapMutable" in configmap.changes[0].why
    check_golden("long-value", text)


def test_certificates_are_shown_as_what_is_in_them(tmp_path: Path) -> None:
    old, new = base(), base()
    res(new, "hub-api-ready")["inputs"]["clientCertPem"] = ca("hub-admin", hours=720, cn="hub-admin-2")
    new.sections["certificates"] = {
        "title": "certificates", "metrics": {"shortest validity": metric(720, "h", "higher")},
        "data": [{"resource": "hub-admin", "subject": "CN=hub-admin-2", "sans": [], "validityHours": 720,
                  "notAfter": "2026-01-31", "fingerprint": "3333cccc4444dddd", "issuer": "CN=hub-k3s-client-ca"}]}
    _, text = render(tmp_path, old, new)
    assert "subject CN=hub-admin → CN=hub-admin-2" in text and "validity hours 87600 → 720" in text
    assert "| certificates: shortest validity | 8760 h | 720 h | ⚠ worse |" in text
    assert "BEGIN CERTIFICATE" not in text
    check_golden("cert", text)


def test_cloud_init_is_diffed_per_file_and_secret_files_stay_hidden(tmp_path: Path) -> None:
    old, new = base(), base()
    doc = new.cloud_init["karmada-hub-dev-cp-0"]
    doc["write_files"][1]["content"] = "[secret]"  # the token file: redacted on both sides, still "[secret]"
    doc["write_files"].append({"path": "/etc/rancher/k3s/registries.yaml", "content": "mirrors:\n  docker.io: {}\n"})
    doc["write_files"].append({"path": "/etc/karmada-hub/etcd-client.key", "content": "[secret]"})
    doc["runcmd"].append(["systemctl", "restart", "k3s"])
    result, text = render(tmp_path, old, new)
    server = by_label(result, "Server karmada-hub-dev-cp-0")
    assert [f.path for f in server.files] == ["#cloud-config runcmd", "/etc/karmada-hub/etcd-client.key",
                                              "/etc/rancher/k3s/registries.yaml"]
    assert "`/etc/karmada-hub/etcd-client.key` added (secret; content not shown)" in text
    assert "+  docker.io: {}" in text
    check_golden("cloud-init", text)


def test_secret_keys_are_visible_and_values_are_not(tmp_path: Path) -> None:
    old, new = base(), base()
    secret = res(new, "host-secret-karmada-system-karmada-scheduler-config")["inputs"]
    secret["data"]["karmada.config"] = redacted_value("kubeconfig-v2", True)
    secret["data"]["ca.crt"] = redacted_value("ca", True)
    result, text = render(tmp_path, old, new)
    change = by_label(result, "Secret karmada-system/karmada-scheduler-config")
    assert change.action == "replace" and {c.path for c in change.changes} == {'data["karmada.config"]',
                                                                                 'data["ca.crt"]'}
    assert "secret value changed" in text and "secret key added" in text
    assert redacted_value("kubeconfig-v2", True) not in text
    check_golden("secret", text)


def test_budget_and_skew_deltas_are_at_the_top(tmp_path: Path) -> None:
    old, new = base(), base()
    new.sections["failoverBudget"] = budget_section({"detection": 84, "eviction queue": 98, "pod start": 60,
                                                     "DNS TTL": 60})
    new.sections["versionSkew"]["metrics"]["hub k3s"] = metric("v1.35.1+k3s1")
    vap = res(new, "karmada-validatingadmissionpolicy-karmada-hub-external-dns-ttl")["inputs"]
    vap["spec"]["validations"][0]["expression"] = vap["spec"]["validations"][0]["expression"].replace("'30'", "'60'")
    _, text = render(tmp_path, old, new)
    assert text.index("#### At a glance") < text.index("#### Changes by component")
    assert "| failover budget: worst case | 272 s | 302 s | ⚠ worse |" in text
    assert "| version skew: hub k3s | v1.34.1+k3s1 | v1.35.1+k3s1 |  |" in text
    check_golden("budget", text)


def test_a_diff_over_the_cap_degrades_to_a_summary_never_a_cut(tmp_path: Path) -> None:
    old, new = base(), base()
    comp = new.component("MemberCluster", "member-big")
    karmada = urn_of(new, "k8s-karmada")
    for i in range(400):
        new.k8s({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}", "namespace": "big"},
                 "data": {"x": "y"}}, comp, karmada)
    for i in range(3):
        files = new.cloud_init[f"karmada-hub-dev-cp-{i}"]["write_files"]
        files[0]["content"] += "".join(f"line-{n}: {'v' * 60}\n" for n in range(200))
    _, full = render(tmp_path, old, new, max_chars=10**9)
    assert "The full diff is" not in full
    for cap in (20_000, 6_000, 1_500):
        _, text = render(tmp_path, old, new, max_chars=cap)
        assert len(text) <= cap, cap
        assert text.startswith("### karmada-hub plan diff: `dev`") and "The full diff is" in text
        assert text.endswith("\n") and text.count("<details>") == text.count("</details>")
        assert text.count("```") % 2 == 0
    _, small = render(tmp_path, old, new, max_chars=6_000)
    check_golden("size-cap", small)


# ------------------------------------------------------------------------------------------- lists


def test_lists_are_matched_by_key_not_index() -> None:
    a = {"containers": [{"name": "a", "image": "x:1"}, {"name": "b", "image": "y:1"}]}
    b = {"containers": [{"name": "b", "image": "y:2"}]}
    assert diff_values(a, b) == [("containers[name=a]", {"name": "a", "image": "x:1"}, diff_values.__globals__[
        "MISSING"]), ("containers[name=b].image", "y:1", "y:2")]


def test_scalar_lists_show_the_one_entry_that_went() -> None:
    names = [f"member-{i:03}" for i in range(300)]
    changes = diff_values({"clusterNames": names}, {"clusterNames": names[1:]})
    assert len(changes) == 1 and changes[0][0] == "clusterNames[0]" and changes[0][1] == "member-000"


def test_unkeyed_object_lists_match_by_content() -> None:
    rules = [{"overriders": {"argsOverrider": [{"value": [f"--x={i}"]}]}} for i in range(50)]
    changes = diff_values({"overrideRules": rules}, {"overrideRules": rules[1:]})
    assert len(changes) == 1 and changes[0][0] == "overrideRules[0]"
    assert changes[0][2] is diff_values.__globals__["MISSING"]


def test_override_rules_are_keyed_by_their_target_cluster() -> None:
    rules = [{"targetCluster": {"clusterNames": [f"m{i}"]}, "overriders": {"x": i}} for i in range(50)]
    changed = [dict(r) for r in rules[1:]]
    changed[3] = {**changed[3], "overriders": {"x": "new"}}
    assert [p for p, _, _ in diff_values({"r": rules}, {"r": changed})] == ["r[targetCluster=m0]",
                                                                          "r[targetCluster=m4].overriders.x"]


def urn_of(p: PlanDir, name: str) -> str:
    return next(u for u, r in p.resources.items() if r["name"] == name)


def test_secret_placeholders_decode() -> None:
    from hubctl.diff import secret_placeholder

    assert secret_placeholder(redacted_value("v", True)) == redacted_value("v", False)
    assert secret_placeholder(base64.b64encode(b"plain").decode()) is None


def test_a_base_plan_from_an_older_hubctl_does_not_replace_every_secret(tmp_path: Path) -> None:
    """Plans made before per-key redaction show `data: "[secret]"`: the first PR after it is not 'replace all'."""
    old, new = base(), base()
    res(old, "host-secret-karmada-system-karmada-scheduler-config")["inputs"]["data"] = "[secret]"
    old.sections = None
    result, text = render(tmp_path, old, new)
    assert result.resources == [] and "No changes." in text
    assert any("redacts Secret payloads whole" in n for n in result.notes)
    assert any("no report.json in the base plan" in n for n in result.notes)
